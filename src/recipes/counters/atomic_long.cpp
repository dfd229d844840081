// DistributedAtomicLong: a facade over the recipe core and one guarded
// read-modify-write loop. Semantics, costs and the handling of unknown
// outcomes: etcd/recipes/atomic_long.h.
#include "etcd/recipes/atomic_long.h"

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <utility>

#include "../core/calls.h"
#include "../core/keys.h"
#include "../core/recipe_core.h"
#include "../core/strand_steps.h"
#include "etcd/recipes/codec.h"
#include "etcd/txn.h"

namespace etcd::recipes {

namespace detail {

namespace {

using Codec64 = IntegerCodec<int64_t>;

Status check_options(const AtomicLongOptions& o) {
  if (o.max_attempts < 1) return InvalidArgument("max_attempts must be at least 1");
  if (o.max_backoff.count() < 0) return InvalidArgument("max_backoff must not be negative");
  return Status();
}

// The value a read or a failed guard showed, with what identifies the write
// that stored it.
struct Seen {
  int64_t value = 0;
  int64_t mod_revision = 0;  // 0: the key is absent
  int64_t create_revision = 0;
  int64_t version = 0;
  int64_t observed_at = 0;  // the header revision of the answer that showed it
};

// What a write this object made without reading shows: `value` at
// `revision`, its version unknown (no prev_kv: only the resolution of an
// unknown add uses it, and it re-reads through its guard then).
inline Seen written(int64_t value, int64_t revision) {
  Seen s;
  s.value = value;
  s.mod_revision = revision;
  s.version = -1;
  s.observed_at = revision;
  return s;
}

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

}  // namespace

class AtomicLongState : public std::enable_shared_from_this<AtomicLongState> {
 public:
  AtomicLongState(Client client, std::string name, AtomicLongOptions options)
      : core(std::make_shared<RecipeCore>(std::move(client), "DistributedAtomicLong", name, std::move(options.recipe),
                                          check_options(options))),
        key(std::move(name)),
        receipt(key + "/receipts/" + core->client_id() + "-" + random_id()),
        labels{{"counter", key}},
        max_attempts(options.max_attempts),
        max_backoff(options.max_backoff) {}

  const std::shared_ptr<RecipeCore> core;
  const std::string key;
  // This object's receipt: every add attempt writes its op number there in
  // the same Txn, so that an attempt whose answer was lost can tell for
  // sure whether it applied.
  const std::string receipt;
  const Labels labels;
  const int max_attempts;
  const std::chrono::milliseconds max_backoff;

  // What the object last saw (absent until it saw anything: the first add
  // assumes an absent key, which a failed guard corrects for free).
  Seen cached() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  // Keeps the newest of what concurrent calls saw.
  void remember(const Seen& s) {
    std::lock_guard lock(mu_);
    if (s.observed_at >= seen_.observed_at) seen_ = s;
  }
  // The value of `kv` (absent: 0), or the decode error naming the key.
  Result<Seen> seen_of(const KeyValue* kv, int64_t header_revision) const {
    Seen s;
    s.observed_at = header_revision;
    if (kv == nullptr) return s;
    auto value = decode_value<int64_t>(Codec64(), kv->value, kv->key);
    if (!value.ok()) return core->named(std::move(value).status());
    s.value = *value;
    s.mod_revision = kv->mod_revision;
    s.create_revision = kv->create_revision;
    s.version = kv->version;
    return s;
  }
  Result<Seen> seen_of(const TxnResponse& r) const {
    return seen_of(r.responses.empty() ? nullptr : r.responses.at(0).get().first(), r.header.revision);
  }
  // One round trip (at least 200 us), the unit of the back-off.
  Clock::duration window(Clock::duration rtt) const {
    const auto r = std::max<Clock::duration>(rtt, std::chrono::microseconds(200));
    return std::min<Clock::duration>(r, max_backoff);
  }
  // The next add's number (never reused by this object).
  uint64_t next_op() {
    wrote_receipt->store(true);
    std::lock_guard lock(mu_);
    return ++ops_;
  }
  // Set once an add sent its first Txn: close() deletes the receipt then.
  // Shared with the close action, which runs after the handle's state is
  // gone (the handle's destructor closes last).
  const std::shared_ptr<std::atomic<bool>> wrote_receipt = std::make_shared<std::atomic<bool>>(false);
  // A uniformly drawn number in [0, 1).
  double jitter() {
    std::lock_guard lock(mu_);
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  }

 private:
  std::mutex mu_;
  Seen seen_;
  uint64_t ops_ = 0;
  std::mt19937_64 rng_{std::random_device{}()};
};

namespace {

Status outcome_unknown(const std::string& what) {
  return Status(StatusCode::kUnavailable, what + ": the outcome is unknown (it may have committed once, or not at all)",
                Errc::kOutcomeUnknown);
}

// One add: guarded attempts until one commits, the call gives up, or an
// unknown outcome cannot be resolved.
class AddOp final : public std::enable_shared_from_this<AddOp> {
 public:
  AddOp(std::shared_ptr<AtomicLongState> state, std::shared_ptr<ClientLink> link, int64_t delta, CallOptions options,
        Callback<int64_t> done)
      : state_(std::move(state)),
        link_(std::move(link)),
        delta_(delta),
        options_(std::move(options)),
        done_(std::move(done)),
        seen_(state_->cached()),
        op_(std::to_string(state_->next_op())) {}

  void start() { attempt(); }

  void attempt() {
    if (options_.stop.stop_requested()) return finish(Cancelled("add cancelled"));
    const auto target = checked_add(seen_.value, delta_);
    if (!target) {
      return finish(Status(StatusCode::kOutOfRange, "add(" + std::to_string(delta_) +
                                                        "): " + std::to_string(seen_.value) + " + " +
                                                        std::to_string(delta_) + " overflows int64 (nothing written)"));
    }
    target_ = *target;
    Txn txn;
    txn.when(Compare::mod_revision(state_->key) == seen_.mod_revision)
        .then(Op::put(state_->key, Codec64::encode(target_)), Op::put(state_->receipt, op_))
        .otherwise(Op::get(state_->key), Op::get(state_->receipt));
    ++attempts_;
    sent_at_ = Clock::now();
    CallAccess::start_inherited(link_->client().txn(std::move(txn)), options_,
                                [self = shared_from_this()](Result<TxnResponse> r) { self->on_result(std::move(r)); });
  }

 private:
  void on_result(Result<TxnResponse> r) {
    last_rtt_ = Clock::now() - sent_at_;
    if (r.ok() && r->succeeded) {
      Seen s;
      s.value = target_;
      s.mod_revision = r->header.revision;
      s.create_revision = seen_.mod_revision == 0 ? r->header.revision : seen_.create_revision;
      s.version = seen_.mod_revision == 0 ? 1 : seen_.version + 1;
      s.observed_at = r->header.revision;
      state_->remember(s);
      if (maybe_applied_) state_->core->metrics().add("etcd_recipes_counter_unknown_resolved_total", state_->labels, 1);
      state_->core->metrics().add("etcd_recipes_counter_adds_total", state_->labels, 1);
      return finish(target_);
    }
    if (r.ok()) {
      auto fresh = state_->seen_of(*r);
      if (!fresh.ok()) return finish(std::move(fresh).status(), true);
      if (maybe_applied_) {
        // The receipt says whether an attempt of this add (they all had
        // guard seen_ and value target_ since the last proof) applied.
        maybe_applied_ = false;
        state_->core->metrics().add("etcd_recipes_counter_unknown_resolved_total", state_->labels, 1);
        const KeyValue* receipt = r->responses.size() > 1 ? r->responses.at(1).get().first() : nullptr;
        if (receipt && receipt->value == op_) {
          state_->remember(*fresh);
          state_->core->metrics().add("etcd_recipes_counter_adds_total", state_->labels, 1);
          return finish(target_);
        }
      }
      state_->remember(*fresh);
      seen_ = *fresh;
      ++conflicts_;
      state_->core->metrics().add("etcd_recipes_counter_conflicts_total", state_->labels, 1);
      if (attempts_ >= state_->max_attempts) {
        state_->core->metrics().add("etcd_recipes_counter_gave_up_total", state_->labels, 1);
        return finish(Status(StatusCode::kAborted, what() + ": gave up after " + std::to_string(attempts_) +
                                                       " attempts under contention (nothing written)"));
      }
      return retry_after(backoff());
    }
    Status st = std::move(r).status();
    if (st.is(Errc::kOutcomeUnknown)) maybe_applied_ = true;
    // The same Txn again (same guard, same value): if the lost attempt
    // applied, this one cannot, and the failed guard says so.
    if (transient(st) && attempts_ < state_->max_attempts && !out_of_time()) {
      return retry_after(std::min<Clock::duration>(last_rtt_, state_->max_backoff));
    }
    if (maybe_applied_) return finish(outcome_unknown(what() + " (" + st.message() + ")"), true);
    finish(std::move(st));
  }

  Clock::duration backoff() {
    // Contenders that just lost all learned the new value at once; spread
    // their next attempts over a window that widens with each conflict of
    // this call (1, 2, 4, 8, then 16 round trips, at most max_backoff).
    const auto window = state_->window(last_rtt_) * (int64_t{1} << std::min(conflicts_ - 1, 4));
    return std::chrono::duration_cast<Clock::duration>(std::min<Clock::duration>(window, state_->max_backoff) *
                                                       state_->jitter());
  }

  bool out_of_time() const { return options_.deadline && Clock::now() >= *options_.deadline; }

  void retry_after(Clock::duration delay) {
    if (options_.deadline && Clock::now() + delay >= *options_.deadline) {
      if (maybe_applied_) return finish(outcome_unknown(what() + " (the deadline passed)"), true);
      return finish(DeadlineExceeded(what() + ": timed out under contention after " + std::to_string(attempts_) +
                                     " attempts (nothing written)"));
    }
    if (delay <= Clock::duration::zero()) return attempt();
    run_after(link_->executor(), delay, [self = shared_from_this()] { self->attempt(); });
  }

  std::string what() const { return "add(" + std::to_string(delta_) + ")"; }

  void finish(Result<int64_t> r, bool unknown = false) {
    if (unknown && !r.ok() && r.status().is(Errc::kOutcomeUnknown)) {
      state_->core->metrics().add("etcd_recipes_counter_outcome_unknown_total", state_->labels, 1);
    }
    if (!r.ok()) r = state_->core->named(std::move(r).status());
    auto done = std::move(done_);
    done(std::move(r));
  }

  const std::shared_ptr<AtomicLongState> state_;
  const std::shared_ptr<ClientLink> link_;
  const int64_t delta_;
  const CallOptions options_;
  Callback<int64_t> done_;
  Seen seen_;
  const std::string op_;  // this add's number, as its attempts write it to the receipt
  int64_t target_ = 0;
  int attempts_ = 0;
  int conflicts_ = 0;
  // An attempt with guard seen_ and value target_ may have applied.
  bool maybe_applied_ = false;
  Clock::time_point sent_at_{};
  Clock::duration last_rtt_{};
};

}  // namespace
}  // namespace detail

using detail::AtomicLongState;
using detail::CallAccess;
using detail::Codec64;

DistributedAtomicLong::DistributedAtomicLong(Client client, std::string name)
    : DistributedAtomicLong(std::move(client), std::move(name), AtomicLongOptions()) {}

DistributedAtomicLong::DistributedAtomicLong(Client client, std::string name, RecipeOptions options)
    : DistributedAtomicLong(std::move(client), std::move(name), AtomicLongOptions{.recipe = std::move(options)}) {}

DistributedAtomicLong::DistributedAtomicLong(Client client, std::string name, AtomicLongOptions options)
    : state_(std::make_shared<AtomicLongState>(std::move(client), std::move(name), std::move(options))) {
  // At close(), the receipt goes (only this object ever writes it).
  state_->core->set_close_action([core = std::weak_ptr<detail::RecipeCore>(state_->core), receipt = state_->receipt,
                                  wrote = state_->wrote_receipt] {
    auto c = core.lock();
    auto link = c && wrote->load() ? c->link() : nullptr;
    if (!link) return;
    // A clean-up (RecipeCore::close): the client's close() waits for it, so
    // it holds no link — a full handle here would keep a client whose
    // owner let go of it open past the program's exit, the delete unsent.
    CallAccess::start_inline(link->client().del(receipt), [](Result<DeleteResponse>) {});
  });
  bind_recipe(state_->core);
}

Call<int64_t> DistributedAtomicLong::get() {
  const auto& core = state_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<int64_t>(st);
  return detail::then_call<int64_t>(
      link->client().get(state_->key), link, [state = state_](Result<GetResponse> r) -> Result<int64_t> {
        if (!r.ok()) return state->core->named(std::move(r).status());
        auto seen = state->seen_of(r->kvs.empty() ? nullptr : &r->kvs.front(), r->header.revision);
        if (!seen.ok()) return std::move(seen).status();
        state->remember(*seen);
        return seen->value;
      });
}

Call<void> DistributedAtomicLong::set(int64_t value) {
  const auto& core = state_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<void>(st);
  return detail::then_call<void>(link->client().put(state_->key, Codec64::encode(value)), link,
                                 [state = state_, value](Result<PutResponse> r) -> Result<void> {
                                   if (!r.ok()) return state->core->named(std::move(r).status());
                                   state->remember(detail::written(value, r->header.revision));
                                   return Result<void>();
                                 });
}

Call<int64_t> DistributedAtomicLong::add(int64_t delta) {
  return state_->core->call<int64_t>([state = state_, delta](CallOptions options, Callback<int64_t> done) {
    const auto& core = state->core;
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) return done(st);
    auto op = std::make_shared<detail::AddOp>(state, std::move(link), delta, std::move(options), std::move(done));
    op->start();
  });
}

Call<bool> DistributedAtomicLong::compare_and_set(int64_t expected, int64_t desired) {
  const auto& core = state_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<bool>(st);
  const std::string& key = state_->key;
  Txn txn;
  txn.when(Compare::value(key) == Codec64::encode(expected)).then(Op::put(key, Codec64::encode(desired)));
  if (expected == 0) {
    // An absent key is 0 too: etcd has no "or", so the else branch asks again.
    txn.otherwise(Op::txn(Txn()
                              .when(Compare::create_revision(key) == 0)
                              .then(Op::put(key, Codec64::encode(desired)))
                              .otherwise(Op::get(key))));
  } else {
    txn.otherwise(Op::get(key));
  }
  return detail::then_call<bool>(link->client().txn(std::move(txn)), link,
                                 [state = state_, desired, expected](Result<TxnResponse> r) -> Result<bool> {
                                   if (!r.ok()) return state->core->named(std::move(r).status());
                                   const TxnResponse* answer = &*r;
                                   bool wrote = r->succeeded;
                                   if (!wrote && expected == 0) {
                                     answer = &r->responses.at(0).txn();
                                     wrote = answer->succeeded;
                                   }
                                   if (wrote) {
                                     state->remember(detail::written(desired, r->header.revision));
                                     return true;
                                   }
                                   // What is stored instead must be a number: a foreign value is an
                                   // error, not a mismatch.
                                   auto seen =
                                       state->seen_of(answer->responses.at(0).get().first(), r->header.revision);
                                   if (!seen.ok()) return std::move(seen).status();
                                   state->remember(*seen);
                                   return false;
                                 });
}

}  // namespace etcd::recipes
