#include "ordered_semaphore.h"

#include <charconv>
#include <vector>

#include "../core/hex_number.h"
#include "../core/key_path.h"
#include "../core/ordered_key.h"
#include "../core/waiting.h"
#include "lock_keys.h"

namespace etcd::recipes::detail {

namespace {

class OrderedSemaphoreDriver : public ContenderDriver {
 public:
  OrderedSemaphoreDriver(std::shared_ptr<RecipeCore> core, std::shared_ptr<PermitCount> permits)
      : core_(std::move(core)),
        permits_(std::move(permits)),
        queue_space_(dir_under(core_->name(), semaphore_keys::kQueue)),
        slots_(dir_under(core_->name(), semaphore_keys::kSlots)),
        handoff_(handoff_key(core_->name())),
        tail_(tail_key(core_->name(), queue_space_)),
        labels_{{"semaphore", core_->name()}},
        queue_(std::make_shared<OrderedKeyDriver>(
            core_,
            LowestKeySettings{.noun = "permit",
                              .family = family_,
                              .labels = labels_,
                              .value = [id = core_->client_id()] { return id; }},
            OrderedSpaces{.own = queue_space_, .conflicts = {queue_space_}, .tailed = {queue_space_}})) {}

  std::string key(const Session& s) override { return queue_->key(s); }
  std::string rekey(const std::string& key, int64_t revision) override { return queue_->rekey(key, revision); }
  bool claims_key() const override { return false; }
  std::string batch_scope() const override { return queue_->batch_scope(); }

  Txn create(const std::string& key, int64_t lease) override {
    const int n = permits_->n();
    const std::string slot = hinted_slot(key, n);
    // The permit at once needs a count never resized (version < 2): after
    // a shrink, slots beyond the new N may still be held.
    Txn queued;
    queued.when({Compare::absent(tail_), Compare::absent(slot), Compare::version(permits_->key) < 2})
        .then(
            {Op::put(slot, slot_value(key), PutOptions{.lease = lease}), Op::get(slot, GetOptions{.keys_only = true})})
        .otherwise({Op::txn(queue_->create(key, lease)), slots()});
    Txn body;
    body.when(Compare::value(slot) == slot_value(key))
        .then(Op::get(slot, GetOptions{.keys_only = true}))
        .otherwise(Op::txn(std::move(queued)));
    Txn checked;
    checked.when(Compare::value(permits_->key) == permits_->text(n))
        .then(Op::txn(body))
        .otherwise(Op::get(permits_->key));
    Txn txn;
    txn.when(Compare::absent(permits_->key))
        .then({Op::put(permits_->key, permits_->text(n)), Op::txn(std::move(body))})
        .otherwise(Op::txn(std::move(checked)));
    return txn;
  }

  Created created(const TxnResponse& r) override {
    const TxnResponse* body;
    if (r.succeeded) {
      body = &r.responses.at(1).txn();
    } else {
      const TxnResponse& checked = r.responses.at(0).txn();
      if (!checked.succeeded) {
        const auto* stored = checked.responses.at(0).get().first();
        // Resized: create again, comparing the count adopted.
        if (permits_->adopt(stored)) return Created{.retry_at = r.header.revision};
        return Created{.failure = permits_->mismatch(stored ? stored->value : std::string("nothing"))};
      }
      body = &checked.responses.at(0).txn();
    }
    if (body->succeeded) return at_slot(body->responses.at(0).get(), r.header.revision);  // adopted
    const TxnResponse& queued = body->responses.at(0).txn();
    if (queued.succeeded) return at_slot(queued.responses.at(1).get(), r.header.revision);  // nobody waits
    TxnResponse creation = queued.responses.at(0).txn();
    creation.header = r.header;
    Created c = queue_->created(creation);
    if (c.verdict && c.verdict->holds) {
      c.verdict = take_a_slot(queued.responses.at(1).get(), r.header.revision, permits_->n());
    }
    return c;
  }

  Txn read(const std::string& key, int64_t rev) override {
    Txn txn = queue_->read(key, rev);
    txn.then({slots(), Op::get(permits_->key)});
    return txn;
  }

  Txn reread(const std::string& key, int64_t rev, const std::string& waited_for) override {
    if (waited_for == slots_) {
      // First in line (nothing before us can come back): only the slots
      // and the count.
      return Txn().then({Op::get(key, GetOptions{.keys_only = true}), slots(), Op::get(permits_->key)});
    }
    Txn txn = queue_->reread(key, rev, waited_for);
    txn.then({slots(), Op::get(permits_->key)});
    txn.otherwise({slots(), Op::get(permits_->key)});
    return txn;
  }

  Verdict judge(const TxnResponse& r, int64_t rev) override {
    const int n = permits_->at(r.responses.back().get().first());
    TxnResponse queue = r;
    queue.responses.pop_back();  // the count
    queue.responses.pop_back();  // the slots
    Verdict v = queue_->judge(queue, rev);
    if (!v.holds) return v;
    return take_a_slot(r.responses.at(r.responses.size() - 2).get(), r.header.revision, n);
  }

  Admission admission(const std::string& key, int64_t rev, int64_t lease, const std::string& to) override {
    const std::string value = slot_value(key);
    // The first in line leaves the queue as a holder would, into the slot.
    Txn txn = hand_off_txn(key, rev, handoff_, tail_);
    txn.when(Compare::absent(to))
        .then(Op::put(to, value, PutOptions{.lease = lease}), Op::get(to, GetOptions{.keys_only = true}))
        .otherwise(Op::get(to), Op::get(key, GetOptions{.keys_only = true}));
    Txn undo;
    undo.when(Compare::value(to) == value).then(Op::del(to));
    return Admission{std::move(txn), std::move(undo)};
  }

  Admitted admitted(const TxnResponse& r, const std::string& key, int64_t rev, const std::string& to) override {
    if (r.succeeded) {
      const auto* slot = r.responses.back().get().first();
      return Admitted{.at = HeldAt{to, slot ? slot->create_revision : r.header.revision}};
    }
    if (const auto* slot = r.responses.at(0).get().first(); slot && slot->value == slot_value(key)) {
      return Admitted{.at = HeldAt{to, slot->create_revision}};  // an earlier attempt applied
    }
    if (auto gone = own_key_lost(r.responses.at(1).get().first(), rev)) return Admitted{.failure = std::move(*gone)};
    return Admitted{};  // taken by another: read again
  }

  Txn leave(const std::string& key, int64_t rev, bool first) override {
    // First in line: the next one may take over without looking back.
    return first ? hand_off_txn(key, rev, handoff_, tail_) : delete_if_created_at(key, rev);
  }

  std::vector<Txn> strays(const std::string& key, int64_t lease) override {
    const std::string slot = hinted_slot(key, permits_->n());
    Txn slot_taken;
    slot_taken.when(Compare::value(slot) == slot_value(key)).then(Op::del(slot));
    return {delete_if_leased(key, lease), std::move(slot_taken)};
  }

  HoldSpec hold_spec() override { return HoldSpec{.noun = "permit", .family = family_, .labels = labels_}; }
  const std::string& family() const override { return family_; }
  const Labels& labels() const override { return labels_; }
  std::string waiting_for() const override { return "a permit"; }

 private:
  Op slots() const { return Op::get(slots_, GetOptions{.prefix = true, .keys_only = true}); }

  std::string slot_value(const std::string& key) const { return key + " " + core_->client_id(); }

  // The slot a creation tries when nobody waits: the queue key's count
  // (its last field) modulo N, the same for every attempt of one key.
  std::string hinted_slot(const std::string& key, int n) const {
    const auto seq = key.size() >= 16 ? parse_hex16(std::string_view(key).substr(key.size() - 16)) : std::nullopt;
    return semaphore_slot_key(core_->name(), static_cast<int>(seq.value_or(0) % static_cast<uint64_t>(n)));
  }

  Created at_slot(const GetResponse& slot, int64_t revision) const {
    const auto* kv = slot.first();
    const int64_t token = kv ? kv->create_revision : revision;
    return Created{
        .rev = token,
        .verdict = Verdict{.holds = true, .revision = revision, .at = HeldAt{kv ? kv->key : std::string(), token}}};
  }

  // First in line: a free slot to move into, or the wait for a release.
  // Slots held beyond N (after a shrink) count as taken: nobody is admitted
  // until fewer than N are held.
  Verdict take_a_slot(const GetResponse& taken, int64_t revision, int n) const {
    std::vector<bool> used(static_cast<size_t>(n), false);
    int held = 0;
    for (const auto& kv : taken.kvs) {
      ++held;
      const std::string_view digits = std::string_view(kv.key).substr(slots_.size());
      int i = -1;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), i);
      if (ec == std::errc() && end == digits.data() + digits.size() && i >= 0 && i < n) {
        used[static_cast<size_t>(i)] = true;
      }
    }
    for (int i = 0; i < n && held < n; ++i) {
      if (!used[static_cast<size_t>(i)]) {
        return Verdict{
            .holds = true, .revision = revision, .admit_to = semaphore_slot_key(core_->name(), i), .first = true};
      }
    }
    // A change of the count (a resize) wakes the first in line too.
    return Verdict{.wait = WaitFor{.key = slots_,
                                   .options = WatchOptions{.prefix = true, .filter_puts = true},
                                   .recheck = Recheck{slots_, GetOptions{.prefix = true, .count_only = true},
                                                      [n](const GetResponse& g) { return g.count < n; }},
                                   .rereads = true,
                                   .also = WaitFor::Also{permits_->key,
                                                         key_changed(permits_->key, revision + 1, /*puts=*/true)}},
                   .revision = revision,
                   .first = true};
  }

  const std::shared_ptr<RecipeCore> core_;
  const std::shared_ptr<PermitCount> permits_;
  const std::string queue_space_;
  const std::string slots_;
  const std::string handoff_;
  const std::string tail_;
  const std::string family_ = "semaphore";
  const Labels labels_;
  const std::shared_ptr<OrderedKeyDriver> queue_;
};

}  // namespace

std::string semaphore_slot_key(const std::string& name, int i) {
  return dir_under(name, semaphore_keys::kSlots) + std::to_string(i);
}

std::shared_ptr<ContenderDriver> ordered_semaphore_driver(std::shared_ptr<RecipeCore> core,
                                                         std::shared_ptr<PermitCount> permits) {
  return std::make_shared<OrderedSemaphoreDriver>(std::move(core), std::move(permits));
}

}  // namespace etcd::recipes::detail
