#include "add_combiner.h"
#include "client/client_access.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "../core/calls.h"
#include "../core/key_path.h"
#include "../core/keys.h"
#include "../core/strand_steps.h"
#include "counter_keys.h"
#include "etcd/recipes/codec.h"
#include "etcd/txn.h"

namespace etcd::recipes::detail {

using etcd::detail::CallAccess;

namespace {

using Codec64 = IntegerCodec<int64_t>;

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

std::string what(const CounterAdd& add) { return "add(" + std::to_string(add.delta) + ")"; }

Status outcome_unknown(const std::string& what) {
  return Status(StatusCode::kUnavailable, what + ": the outcome is unknown (it may have committed once, or not at all)",
                Errc::kOutcomeUnknown);
}

bool out_of_time(const CounterAdd& add, Clock::time_point at) {
  return add.options.deadline && at >= *add.options.deadline;
}

// Tells `add` its result (named after its object), once.
void finish(CounterAdd& add, Result<int64_t> r, bool may_have_applied = false) {
  if (may_have_applied && !r.ok() && r.status().is(Errc::kOutcomeUnknown)) {
    add.adder->core->metrics().add("etcd_recipes_counter_outcome_unknown_total", add.adder->labels, 1);
  }
  if (!r.ok()) r = add.adder->core->named(std::move(r).status());
  auto done = std::move(add.done);
  done(std::move(r));
}

}  // namespace

Result<CounterSeen> counter_seen(const KeyValue* kv, int64_t header_revision) {
  CounterSeen s;
  s.observed_at = header_revision;
  if (kv == nullptr) return s;
  auto value = decode_value<int64_t>(Codec64(), kv->value, kv->key);
  if (!value.ok()) return std::move(value).status();
  s.value = *value;
  s.mod_revision = kv->mod_revision;
  s.create_revision = kv->create_revision;
  s.version = kv->version;
  return s;
}

namespace {

// Every combiner of one client, by counter name.
struct Combiners {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<AddCombiner>> by_key;
  // The names whose combiners are gone are dropped once the map doubled:
  // joining costs O(1) amortised, however many names the client used.
  std::size_t prune_at = 64;
};

}  // namespace

// One guarded Txn for the adds that waited, sent again as it is while its
// outcome is unknown.
class AddCombiner::Batch : public std::enable_shared_from_this<Batch> {
 public:
  Batch(std::shared_ptr<AddCombiner> combiner, std::vector<std::unique_ptr<CounterAdd>> adds, CounterSeen from,
        int64_t target, uint64_t op)
      : combiner_(std::move(combiner)),
        adds_(std::move(adds)),
        from_(from),
        target_(target),
        op_(std::to_string(op)),
        link_(adds_.front()->link) {}

  void send() {
    Txn txn;
    txn.when(Compare::mod_revision(combiner_->key_) == from_.mod_revision)
        .then(Op::put(combiner_->key_, Codec64::encode(target_)), Op::put(combiner_->receipt_, op_))
        .otherwise(Op::get(combiner_->key_), Op::get(combiner_->receipt_));
    // The earliest deadline among the adds: none waits for an answer past
    // its own (the others send the same Txn again).
    CallOptions options;
    for (auto& add : adds_) {
      ++add->attempts;
      if (add->options.deadline && (!options.deadline || *add->options.deadline < *options.deadline)) {
        options.deadline = add->options.deadline;
      }
    }
    const auto& first = *adds_.front();
    first.adder->core->metrics().add("etcd_recipes_counter_txns_total", first.adder->labels, 1);
    sent_at_ = Clock::now();
    CallAccess::start_inherited(link_->client().txn(std::move(txn)), options,
                                [self = shared_from_this()](Result<TxnResponse> r) { self->on_result(std::move(r)); });
  }

 private:
  void on_result(Result<TxnResponse> r) {
    rtt_ = Clock::now() - sent_at_;
    if (r.ok() && r->succeeded) {
      CounterSeen s;
      s.value = target_;
      s.mod_revision = r->header.revision;
      s.create_revision = from_.mod_revision == 0 ? r->header.revision : from_.create_revision;
      s.version = from_.mod_revision == 0 ? 1 : from_.version + 1;
      s.observed_at = r->header.revision;
      return committed(s);
    }
    if (r.ok()) return guard_failed(*r);
    Status st = std::move(r).status();
    if (st.is(Errc::kOutcomeUnknown)) maybe_applied_ = true;
    if (!transient(st)) {
      for (auto& add : adds_) {
        finish(*add,
               maybe_applied_ ? Result<int64_t>(outcome_unknown(what(*add) + " (" + st.message() + ")"))
                              : Result<int64_t>(st),
               maybe_applied_);
      }
      return combiner_->send_next();
    }
    // The same Txn again (same guard, same value, same op): if the lost
    // attempt applied, this one cannot, and the failed guard says so. An add
    // out of time or of attempts leaves it (unknown, if it may have applied).
    const auto now = Clock::now();
    std::erase_if(adds_, [&](std::unique_ptr<CounterAdd>& add) {
      if (!out_of_time(*add, now) && add->attempts < add->adder->max_attempts) return false;
      if (maybe_applied_) {
        finish(*add, outcome_unknown(what(*add) + " (" + st.message() + ")"), true);
      } else {
        finish(*add, st);
      }
      return true;
    });
    // Nobody left: the next batch starts from the value seen before this
    // one, so if this one applied, the next one's guard fails and shows it.
    if (adds_.empty()) return combiner_->send_next();
    run_after(link_->executor(), std::min<Clock::duration>(rtt_, adds_.front()->adder->max_backoff),
              [self = shared_from_this()] { self->send(); });
  }

  void guard_failed(const TxnResponse& r) {
    auto fresh = counter_seen(r.responses.empty() ? nullptr : r.responses.at(0).get().first(), r.header.revision);
    if (!fresh.ok()) {
      // The counter holds something that is not a number: every add fails
      // (nothing written; set() repairs it).
      for (auto& add : adds_) finish(*add, fresh.status());
      return combiner_->send_next();
    }
    if (maybe_applied_) {
      // The receipt says whether an attempt of this batch applied.
      const KeyValue* receipt = r.responses.size() > 1 ? r.responses.at(1).get().first() : nullptr;
      if (receipt && receipt->value == op_) return committed(*fresh);
    }
    combiner_->remember(*fresh);
    const auto& first = *adds_.front();
    first.adder->core->metrics().add("etcd_recipes_counter_conflicts_total", first.adder->labels, 1);
    // Another writer won. The adds go back to the head of the line, in
    // their order, and the next batch (with whatever arrived meanwhile)
    // goes after a back-off that widens with their conflicts.
    int conflicts = 0;
    std::vector<std::unique_ptr<CounterAdd>> back;
    for (auto& add : adds_) {
      if (maybe_applied_)
        add->adder->core->metrics().add("etcd_recipes_counter_unknown_resolved_total", add->adder->labels, 1);
      ++add->conflicts;
      if (add->attempts >= add->adder->max_attempts) {
        add->adder->core->metrics().add("etcd_recipes_counter_gave_up_total", add->adder->labels, 1);
        finish(*add, Status(StatusCode::kAborted, what(*add) + ": gave up after " + std::to_string(add->attempts) +
                                                      " attempts under contention (nothing written)"));
        continue;
      }
      conflicts = std::max(conflicts, add->conflicts);
      back.push_back(std::move(add));
    }
    if (back.empty()) return combiner_->send_next();
    const auto delay = backoff(conflicts, back.front()->adder->max_backoff);
    {
      std::lock_guard lock(combiner_->mu_);
      for (auto it = back.rbegin(); it != back.rend(); ++it) combiner_->waiting_.push_front(std::move(*it));
    }
    run_after(link_->executor(), delay, [combiner = combiner_, link = link_] { combiner->send_next(); });
  }

  // The batch applied: each add is told the value its increment reached.
  void committed(const CounterSeen& s) {
    combiner_->remember(s);
    // The next batch goes out first: the answers below may take a while.
    combiner_->send_next();
    int64_t value = from_.value;
    for (auto& add : adds_) {
      value += add->delta;  // checked when the batch was formed
      if (maybe_applied_)
        add->adder->core->metrics().add("etcd_recipes_counter_unknown_resolved_total", add->adder->labels, 1);
      add->adder->core->metrics().add("etcd_recipes_counter_adds_total", add->adder->labels, 1);
      finish(*add, value);
    }
  }

  // Contenders that just lost all learned the new value at once; spread
  // their next attempts over a window that widens with the conflicts (1, 2,
  // 4, 8, then 16 round trips of at least 200 us, at most max_backoff).
  Clock::duration backoff(int conflicts, std::chrono::milliseconds max_backoff) {
    const auto unit =
        std::min<Clock::duration>(std::max<Clock::duration>(rtt_, std::chrono::microseconds(200)), max_backoff);
    const auto window = std::min<Clock::duration>(unit * (int64_t{1} << std::min(conflicts - 1, 4)), max_backoff);
    return std::chrono::duration_cast<Clock::duration>(window * combiner_->jitter());
  }

  const std::shared_ptr<AddCombiner> combiner_;
  std::vector<std::unique_ptr<CounterAdd>> adds_;
  const CounterSeen from_;
  const int64_t target_;
  const std::string op_;  // the batch's number, as its attempts write it to the receipt
  const std::shared_ptr<ClientLink> link_;
  // An attempt of this Txn may have applied.
  bool maybe_applied_ = false;
  Clock::time_point sent_at_{};
  Clock::duration rtt_{};
};

std::shared_ptr<AddCombiner> AddCombiner::join(const Client& client, const std::string& key,
                                               const std::string& client_id) {
  auto all = etcd::detail::ClientAccess::service<Combiners>(client, [] { return std::make_shared<Combiners>(); });
  std::lock_guard lock(all->mu);
  auto& slot = all->by_key[key];
  if (auto c = slot.lock(); c && c->try_join()) return c;
  auto c = std::make_shared<AddCombiner>(key, dir_under(key, counter_keys::kReceipts) + client_id + "-" + random_id());
  c->try_join();
  slot = c;
  if (all->by_key.size() >= all->prune_at) {
    std::erase_if(all->by_key, [](const auto& kv) { return kv.second.expired(); });
    all->prune_at = std::max<std::size_t>(64, 2 * all->by_key.size());
  }
  return c;
}

bool AddCombiner::try_join() {
  std::lock_guard lock(mu_);
  if (retired_) return false;
  ++members_;
  return true;
}

bool AddCombiner::leave() {
  std::lock_guard lock(mu_);
  if (--members_ > 0) return false;
  retired_ = true;
  return wrote_receipt_;
}

void AddCombiner::submit(std::unique_ptr<CounterAdd> add) {
  {
    std::lock_guard lock(mu_);
    waiting_.push_back(std::move(add));
    if (busy_) return;  // the batch in flight sends the next one
    busy_ = true;
  }
  send_next();
}

void AddCombiner::send_next() {
  std::vector<std::pair<std::unique_ptr<CounterAdd>, Status>> refused;
  std::shared_ptr<Batch> batch;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    std::vector<std::unique_ptr<CounterAdd>> adds;
    int64_t value = seen_.value;
    while (!waiting_.empty()) {
      auto add = std::move(waiting_.front());
      waiting_.pop_front();
      if (add->options.stop.stop_requested()) {
        refused.emplace_back(std::move(add), Cancelled("add cancelled"));
        continue;
      }
      if (out_of_time(*add, now)) {
        Status st = DeadlineExceeded(what(*add) + ": timed out under contention after " +
                                     std::to_string(add->attempts) + " attempts (nothing written)");
        refused.emplace_back(std::move(add), std::move(st));
        continue;
      }
      const auto target = checked_add(value, add->delta);
      if (!target) {
        Status st(StatusCode::kOutOfRange, what(*add) + ": " + std::to_string(value) + " + " +
                                               std::to_string(add->delta) + " overflows int64 (nothing written)");
        refused.emplace_back(std::move(add), std::move(st));
        continue;
      }
      value = *target;
      add->target = value;
      adds.push_back(std::move(add));
    }
    if (adds.empty()) {
      busy_ = false;
    } else {
      wrote_receipt_ = true;
      batch = std::make_shared<Batch>(shared_from_this(), std::move(adds), seen_, value, ++ops_);
    }
  }
  for (auto& [add, st] : refused) finish(*add, std::move(st));
  if (batch) batch->send();
}

CounterSeen AddCombiner::cached() {
  std::lock_guard lock(mu_);
  return seen_;
}

void AddCombiner::remember(const CounterSeen& s) {
  std::lock_guard lock(mu_);
  if (s.observed_at >= seen_.observed_at) seen_ = s;
}

double AddCombiner::jitter() {
  std::lock_guard lock(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

}  // namespace etcd::recipes::detail
