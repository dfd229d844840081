#include "ordered_key.h"

#include <algorithm>
#include <variant>

#include "hex_number.h"
#include "keys.h"
#include "waiting.h"

namespace etcd::recipes::detail {

// What the ordered keys of one client share: the highest store revision
// its contenders have seen (a new key's R) and when, and their count (a new
// key's n, unique per lease: a lease belongs to the one client it was
// granted on).
struct OrderedKeyClock {
  std::atomic<int64_t> seen{0};
  std::atomic<int64_t> seen_at{0};  // Clock ticks
  std::atomic<uint64_t> count{0};

  static std::shared_ptr<OrderedKeyClock> of(const Client& client) {
    return etcd::detail::ClientAccess::service<OrderedKeyClock>(client,
                                                                [] { return std::make_shared<OrderedKeyClock>(); });
  }
};

namespace {

constexpr size_t kFieldsSize = 16 + 1 + 16 + 1 + 16;  // <R>-<lease>-<n>

// A compare that holds when no key exists in [from, to).
Compare none_in(const std::string& from, const std::string& to) {
  Compare c = Compare::create_revision(from) == 0;
  c.range_end = to;
  return c;
}

// A compare that holds when every key in [from, to) was created at `rev` or
// later (and fails when there is none: etcd compares an empty range as one
// key of create revision 0).
Compare all_from(const std::string& from, const std::string& to, int64_t rev) {
  Compare c = Compare::create_revision(from) > rev - 1;
  c.range_end = to;
  return c;
}

int64_t ticks() { return Clock::now().time_since_epoch().count(); }

}  // namespace

OrderedKeyDriver::OrderedKeyDriver(std::shared_ptr<RecipeCore> core_in, LowestKeySettings settings)
    : core(std::move(core_in)),
      prefix(core->name() + "/"),
      settings_(std::move(settings)),
      ordered_(prefix + "~"),
      ordered_end_(prefix + "~g"),
      clock_([this] {
        auto link = core->link();
        return link ? OrderedKeyClock::of(link->client()) : std::make_shared<OrderedKeyClock>();
      }()) {}

std::string OrderedKeyDriver::key(const Session& s) {
  const uint64_t n = clock_->count.fetch_add(1) + 1;
  // A revision seen long ago names a key far below its commit, and its
  // look back would read every key created in between: R = 0 has create()
  // learn a fresh one first.
  int64_t r = clock_->seen.load();
  if (Clock::now() - Clock::time_point(Clock::duration(clock_->seen_at.load())) > kFreshRevision) r = 0;
  return ordered_ + hex16(static_cast<uint64_t>(r)) + "-" + hex16(static_cast<uint64_t>(s.lease_id())) + "-" +
         hex16(n);
}

std::string OrderedKeyDriver::rekey(const std::string& key, int64_t revision) {
  // Same lease and count, the revision just learnt.
  if (key.size() != ordered_.size() + kFieldsSize) return key;
  return ordered_ + hex16(static_cast<uint64_t>(revision)) + key.substr(ordered_.size() + 16);
}

void OrderedKeyDriver::seen(int64_t revision) {
  int64_t was = clock_->seen.load();
  while (was < revision && !clock_->seen.compare_exchange_weak(was, revision)) {
  }
  clock_->seen_at.store(ticks());
}

Txn OrderedKeyDriver::look_back(uint64_t r, const std::string& to, uint64_t span, int64_t rev) const {
  GetOptions newest{.range_end = to,
                    .limit = rev > 0 ? 1 : 2,  // the creation's own key is the newest
                    .sort_order = SortOrder::kDescend,
                    .sort_target = SortTarget::kCreate,
                    .keys_only = true,
                    .max_create_revision = rev > 0 ? rev - 1 : 0};
  if (span > kLastLook || r <= span) return Txn().then(Op::get(ordered_, newest));
  const std::string from = ordered_ + hex16(r - span);
  Op here = Op::get(from, newest);
  Op below = Op::txn(look_back(r, from, span * 64, rev));
  Txn txn;
  if (rev == 0) {
    // The creation: every key there is older than ours.
    txn.when(none_in(from, to)).then(std::move(below)).otherwise(std::move(here));
  } else {
    // Keys created after ours (their R lagged) may share the span: pass it
    // also when all of its keys are newer.
    Txn newer;
    newer.when(all_from(from, to, rev)).then(below).otherwise(std::move(here));
    txn.when(none_in(from, to)).then(std::move(below)).otherwise(Op::txn(std::move(newer)));
  }
  return txn;
}

Txn OrderedKeyDriver::create(const std::string& key, int64_t lease) {
  uint64_t r = 0;
  if (key.size() == ordered_.size() + kFieldsSize) {
    r = parse_hex16(std::string_view(key).substr(ordered_.size(), 16)).value_or(0);
  }
  if (r == 0) {
    // No fresh revision known to this client: a first Txn that only learns
    // one (the key is renamed at it).
    return Txn().when(Compare::exists(key)).otherwise(Op::get(key, GetOptions{.keys_only = true}));
  }
  const Op put = Op::put(key, settings_.value(), PutOptions{.lease = lease});
  const GetOptions newest_go{.range_end = ordered_,
                             .limit = 1,
                             .sort_order = SortOrder::kDescend,
                             .sort_target = SortTarget::kCreate,
                             .keys_only = true};
  Txn queued;
  queued.when(Compare::absent(key))
      .then({put, Op::get(prefix, newest_go), Op::txn(look_back(r, ordered_end_, kFirstLook, 0))})
      .otherwise(Op::get(key, GetOptions{.keys_only = true}));
  Txn txn;
  txn.when(none_in(prefix, ordered_end_)).then(put).otherwise(Op::txn(std::move(queued)));
  return txn;
}

Created OrderedKeyDriver::created(const TxnResponse& r) {
  seen(r.header.revision);
  Created c;
  if (r.succeeded) {  // nothing under the name: ours is the only key
    c.rev = r.header.revision;
    c.verdict = Verdict{.holds = true, .revision = r.header.revision};
    return c;
  }
  if (r.responses.empty() || !std::holds_alternative<std::shared_ptr<TxnResponse>>(r.responses[0].response)) {
    c.retry_at = r.header.revision;  // the revision learnt: create under a key that names it
    return c;
  }
  const TxnResponse& inner = r.responses[0].txn();
  if (!inner.succeeded) {
    if (const auto* mine = inner.responses[0].get().first()) c.rev = mine->create_revision;  // adopted: the engine reads
    return c;
  }
  c.rev = r.header.revision;
  c.verdict = verdict(inner.responses[1].get(), inner.responses[2].txn(), r.header.revision, r.header.revision);
  return c;
}

Txn OrderedKeyDriver::read(const std::string& key, int64_t rev) {
  uint64_t r = 0;
  if (key.size() == ordered_.size() + kFieldsSize) {
    r = parse_hex16(std::string_view(key).substr(ordered_.size(), 16)).value_or(0);
  }
  const GetOptions newest_go{.range_end = ordered_,
                             .limit = 1,
                             .sort_order = SortOrder::kDescend,
                             .sort_target = SortTarget::kCreate,
                             .keys_only = true,
                             .max_create_revision = rev - 1};
  // Every key created before ours sorts below NAME/~<rev>.
  return Txn().then({Op::get(key, GetOptions{.keys_only = true}), Op::get(prefix, newest_go),
                     Op::txn(look_back(r, ordered_ + hex16(static_cast<uint64_t>(rev)), kFirstLook, rev))});
}

Verdict OrderedKeyDriver::judge(const TxnResponse& r, int64_t rev) {
  seen(r.header.revision);
  return verdict(r.responses[1].get(), r.responses[2].txn(), rev, r.header.revision);
}

const KeyValue* OrderedKeyDriver::found(const TxnResponse& look, int64_t own_rev) {
  // The look's one Get, at the end of the path it took.
  const TxnResponse* step = &look;
  while (!step->responses.empty() &&
         std::holds_alternative<std::shared_ptr<TxnResponse>>(step->responses[0].response)) {
    step = &step->responses[0].txn();
  }
  if (step->responses.empty()) return nullptr;
  for (const auto& kv : step->responses[0].get().kvs) {
    if (kv.create_revision != own_rev) return &kv;
  }
  return nullptr;
}

Verdict OrderedKeyDriver::verdict(const GetResponse& go, const TxnResponse& look, int64_t own_rev, int64_t at) const {
  const KeyValue* ours = found(look, own_rev);
  const KeyValue* theirs = go.first();
  // The newer of the two is the closer to ours.
  const KeyValue* before = ours;
  if (!before || (theirs && theirs->create_revision > before->create_revision)) before = theirs;
  if (!before) return Verdict{.holds = true, .revision = at};
  return Verdict{.wait = WaitFor{.key = before->key,
                                 .options = WatchOptions{.filter_puts = true},
                                 .recheck = key_changed(before->key, at + 1, /*puts=*/false)},
                 .revision = at};
}

HoldSpec OrderedKeyDriver::hold_spec() {
  return HoldSpec{.watch_key = settings_.watch_key,
                  .record_loss = settings_.record_loss,
                  .noun = settings_.noun,
                  .family = settings_.family,
                  .labels = settings_.labels};
}

}  // namespace etcd::recipes::detail
