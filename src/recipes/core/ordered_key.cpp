#include "ordered_key.h"

#include <algorithm>

#include "hex_number.h"
#include "keys.h"
#include "waiting.h"

namespace etcd::recipes::detail {

namespace {

// What the ordered keys of one client share: the highest store revision
// its contenders have seen (a new key's R) and their count (a new key's n,
// unique per lease: a lease belongs to the one client it was granted on).
struct OrderedKeyClock {
  std::atomic<int64_t> seen{0};
  std::atomic<uint64_t> count{0};

  static std::shared_ptr<OrderedKeyClock> of(const Client& client) {
    return etcd::detail::ClientAccess::service<OrderedKeyClock>(client,
                                                                [] { return std::make_shared<OrderedKeyClock>(); });
  }
};

constexpr size_t kFieldsSize = 16 + 1 + 16 + 1 + 16;  // <R>-<lease>-<n>

// A compare that holds when no key exists in [from, to).
Compare none_in(const std::string& from, const std::string& to) {
  Compare c = Compare::create_revision(from) == 0;
  c.range_end = to;
  return c;
}

}  // namespace

OrderedKeyDriver::OrderedKeyDriver(std::shared_ptr<RecipeCore> core_in, LowestKeySettings settings)
    : core(std::move(core_in)),
      prefix(core->name() + "/"),
      settings_(std::move(settings)),
      ordered_(prefix + "~"),
      ordered_end_(prefix + "~g"),
      seen_([this]() -> std::shared_ptr<std::atomic<int64_t>> {
        auto link = core->link();
        if (!link) return std::make_shared<std::atomic<int64_t>>(0);
        auto clock = OrderedKeyClock::of(link->client());
        return std::shared_ptr<std::atomic<int64_t>>(clock, &clock->seen);
      }()) {}

std::string OrderedKeyDriver::key(const Session& s) {
  auto clock = OrderedKeyClock::of(s.client());
  const uint64_t n = clock->count.fetch_add(1) + 1;
  return ordered_ + hex16(static_cast<uint64_t>(seen_->load())) + "-" + hex16(static_cast<uint64_t>(s.lease_id())) +
         "-" + hex16(n);
}

std::string OrderedKeyDriver::rekey(const std::string& key, int64_t revision) {
  // Same lease and count, a newer R.
  if (key.size() != ordered_.size() + kFieldsSize) return key;
  return ordered_ + hex16(static_cast<uint64_t>(revision)) + key.substr(ordered_.size() + 16);
}

void OrderedKeyDriver::seen(int64_t revision) {
  int64_t was = seen_->load();
  while (was < revision && !seen_->compare_exchange_weak(was, revision)) {
  }
}

std::vector<Op> OrderedKeyDriver::reads_before(const std::string& key, int64_t max_create) const {
  uint64_t r = 0;
  if (key.size() == ordered_.size() + kFieldsSize) r = parse_hex16(std::string_view(key).substr(ordered_.size(), 16)).value_or(0);
  const uint64_t lo_r = r > static_cast<uint64_t>(kWindowRevisions) ? r - kWindowRevisions : 0;
  const std::string lo = ordered_ + hex16(lo_r);
  const GetOptions newest_go{.range_end = ordered_,
                             .limit = 1,
                             .sort_order = SortOrder::kDescend,
                             .sort_target = SortTarget::kCreate,
                             .keys_only = true,
                             .max_create_revision = max_create};
  const GetOptions last_in_window{
      .range_end = key, .limit = 1, .sort_order = SortOrder::kDescend, .sort_target = SortTarget::kKey, .keys_only = true};
  const GetOptions last_older{
      .range_end = lo, .limit = 1, .sort_order = SortOrder::kDescend, .sort_target = SortTarget::kKey, .keys_only = true};
  Txn older;
  older.when(none_in(lo, key)).then(Op::get(ordered_, last_older));
  return {Op::get(prefix, newest_go), Op::get(lo, last_in_window), Op::txn(std::move(older))};
}

Txn OrderedKeyDriver::create(const std::string& key, int64_t lease) {
  if (seen_->load() == 0) {
    // No revision seen yet on this client: a first Txn that only learns
    // one (a creation with R = 0 would make etcd compare every key of the
    // layout).
    return Txn().when(Compare::exists(key)).otherwise(Op::get(key, GetOptions{.keys_only = true}));
  }
  Txn txn;
  txn.when(none_in(key, ordered_end_)).then(Op::put(key, settings_.value(), PutOptions{.lease = lease}));
  for (Op& op : reads_before(key, 0)) txn.then(std::move(op));
  txn.otherwise(Op::get(key, GetOptions{.keys_only = true}));
  return txn;
}

Created OrderedKeyDriver::created(const TxnResponse& r) {
  seen(r.header.revision);
  Created c;
  if (r.succeeded && r.responses.size() == 4) {  // created at the tail
    c.rev = r.header.revision;
    c.verdict = verdict(r.responses[1].get(), r.responses[2].get(), r.responses[3].txn(), r.header.revision);
    return c;
  }
  if (const auto* mine = r.responses.empty() ? nullptr : r.responses[0].get().first()) {
    c.rev = mine->create_revision;  // an earlier attempt created it: read where it stands
    return c;
  }
  c.retry_at = r.header.revision;  // a later key exists (or no revision was known)
  return c;
}

Txn OrderedKeyDriver::read(const std::string& key, int64_t rev) {
  Txn txn;
  txn.then(Op::get(key, GetOptions{.keys_only = true}));
  for (Op& op : reads_before(key, rev - 1)) txn.then(std::move(op));
  return txn;
}

Verdict OrderedKeyDriver::judge(const TxnResponse& r, int64_t) {
  seen(r.header.revision);
  return verdict(r.responses[1].get(), r.responses[2].get(), r.responses[3].txn(), r.header.revision);
}

Verdict OrderedKeyDriver::verdict(const GetResponse& go, const GetResponse& window, const TxnResponse& older,
                                  int64_t at) const {
  const KeyValue* before = window.first();
  if (!before && older.succeeded && !older.responses.empty()) before = older.responses[0].get().first();
  if (!before) before = go.first();
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
