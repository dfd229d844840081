#include "ordered_key.h"

#include <algorithm>
#include <variant>

#include "hex_number.h"
#include "keys.h"
#include "waiting.h"

namespace etcd::recipes::detail {

// What the ordered keys of one client share: the highest store revision
// its contenders have seen (a new key's R) and when, and the count of the
// keys made on sessions granted on it (a new key's n, unique per lease: a
// lease belongs to the one client it was granted on, though recipes on
// other clients may share its session).
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

OrderedKeyDriver::OrderedKeyDriver(std::shared_ptr<RecipeCore> core_in, LowestKeySettings settings,
                                   OrderedSpaces spaces)
    : core(std::move(core_in)),
      prefix(core->name() + "/"),
      settings_(std::move(settings)),
      spaces_([&] {
        if (spaces.own.empty()) spaces.own = prefix;
        if (spaces.conflicts.empty()) spaces.conflicts = {spaces.own};
        if (spaces.tailed.empty()) spaces.tailed = {spaces.own};
        return std::move(spaces);
      }()),
      own_(spaces_.own + "~"),
      own_tail_(std::ranges::count(spaces_.tailed, spaces_.own) ? tail_key(core->name(), spaces_.own) : std::string()),
      clock_([this] {
        auto link = core->link();
        return link ? OrderedKeyClock::of(link->client()) : std::make_shared<OrderedKeyClock>();
      }()) {
  for (const auto& space : spaces_.conflicts) {
    const bool tailed = std::ranges::count(spaces_.tailed, space) != 0;
    conflicts_.push_back(Space{space, space + "~", space + "~g", tailed ? tail_key(core->name(), space) : ""});
  }
}

std::string OrderedKeyDriver::waiting_for() const {
  const std::string& noun = settings_.noun;
  if (noun.size() >= 4 && noun.compare(noun.size() - 4, 4, "lock") == 0) return "the " + noun;
  return noun;
}

std::string OrderedKeyDriver::key(const Session& s) {
  // Counted by the client the session was made on (it may be shared with
  // recipes on other clients): unique per lease.
  const uint64_t n = OrderedKeyClock::of(s.client())->count.fetch_add(1) + 1;
  // A revision seen long ago names a key far below its commit, and its
  // look back would read every key created in between: R = 0 has create()
  // learn a fresh one first.
  int64_t r = clock_->seen.load();
  if (Clock::now() - Clock::time_point(Clock::duration(clock_->seen_at.load())) > kFreshRevision) r = 0;
  return own_ + hex16(static_cast<uint64_t>(r)) + "-" + hex16(static_cast<uint64_t>(s.lease_id())) + "-" + hex16(n);
}

uint64_t OrderedKeyDriver::r_of(const std::string& key) const {
  if (key.size() != own_.size() + kFieldsSize) return 0;
  return parse_hex16(std::string_view(key).substr(own_.size(), 16)).value_or(0);
}

std::string OrderedKeyDriver::rekey(const std::string& key, int64_t revision) {
  // Same lease and count, the revision just learnt.
  if (key.size() != own_.size() + kFieldsSize) return key;
  return own_ + hex16(static_cast<uint64_t>(revision)) + key.substr(own_.size() + 16);
}

void OrderedKeyDriver::seen(int64_t revision) {
  int64_t was = clock_->seen.load();
  while (was < revision && !clock_->seen.compare_exchange_weak(was, revision)) {
  }
  clock_->seen_at.store(ticks());
}

Txn OrderedKeyDriver::look_back(const Space& space, uint64_t r, const std::string& to, uint64_t span, int64_t rev) {
  GetOptions newest{.range_end = to,
                    .limit = rev > 0 ? 1 : 2,  // the creation's own key may be the newest
                    .sort_order = SortOrder::kDescend,
                    .sort_target = SortTarget::kCreate,
                    .keys_only = true,
                    .max_create_revision = rev > 0 ? rev - 1 : 0};
  if (span > kLastLook || r <= span) return Txn().then(Op::get(space.ordered, newest));
  const std::string from = space.ordered + hex16(r - span);
  Op here = Op::get(from, newest);
  Op below = Op::txn(look_back(space, r, from, span * 64, rev));
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

std::vector<Op> OrderedKeyDriver::conflicting(uint64_t r, int64_t rev) const {
  std::vector<Op> ops;
  for (const auto& space : conflicts_) {
    const GetOptions newest_go{.range_end = space.ordered,
                               .limit = 1,
                               .sort_order = SortOrder::kDescend,
                               .sort_target = SortTarget::kCreate,
                               .keys_only = true,
                               .max_create_revision = rev > 0 ? rev - 1 : 0};
    ops.push_back(Op::get(space.go, newest_go));
    // At the creation every key there is older than ours; at a read, every
    // key created before ours sorts below SPACE~<rev>.
    const std::string to = rev > 0 ? space.ordered + hex16(static_cast<uint64_t>(rev)) : space.end;
    Txn look = look_back(space, r, to, kFirstLook, rev);
    if (!space.tail.empty()) {
      // No tail record: no key of the space is left (etcd evaluates every
      // compare before it applies a write, so ours is not counted).
      look = Txn().when(Compare::absent(space.tail)).otherwise(Op::txn(std::move(look)));
    }
    ops.push_back(Op::txn(std::move(look)));
  }
  return ops;
}

Txn OrderedKeyDriver::create(const std::string& key, int64_t lease) {
  const uint64_t r = r_of(key);
  if (r == 0) {
    // No fresh revision known to this client: a first Txn that only learns
    // one (the key is renamed at it).
    return Txn().when(Compare::exists(key)).otherwise(Op::get(key, GetOptions{.keys_only = true}));
  }
  // First the tail records of the conflicting spaces, before our own puts:
  // the newest of them names the key created just before ours (see
  // verdict()).
  std::vector<Op> then;
  for (const auto& tail : predecessor_tails()) then.push_back(Op::get(tail));
  then.push_back(Op::put(key, settings_.value(), PutOptions{.lease = lease}));
  if (!own_tail_.empty()) then.push_back(Op::put(own_tail_, key));
  for (auto& op : conflicting(r, 0)) then.push_back(std::move(op));
  // (No "nothing under NAME/" fast path: etcd compares a range by reading
  // every key in it, which is every waiter.)
  Txn txn;
  txn.when(Compare::absent(key)).otherwise(Op::get(key, GetOptions{.keys_only = true}));
  for (auto& op : then) txn.then(std::move(op));
  return txn;
}

Created OrderedKeyDriver::created(const TxnResponse& r) {
  seen(r.header.revision);
  Created c;
  const size_t tails = predecessor_tails().size();
  const size_t first = tails + (own_tail_.empty() ? 1 : 2);                  // the reads, after the puts
  if (r.succeeded && r.responses.size() == first + 2 * conflicts_.size()) {  // created
    c.rev = r.header.revision;
    // A tail record is put with the key it names: the one last put names
    // the key created last.
    std::string predecessor;
    int64_t newest = 0;
    for (size_t i = 0; i < tails; ++i) {
      const auto* tail = r.responses[i].get().first();
      if (tail && tail->mod_revision > newest) {
        newest = tail->mod_revision;
        predecessor = tail->value;
      }
    }
    c.verdict = verdict(r.responses, first, r.header.revision, r.header.revision, predecessor);
    return c;
  }
  if (const auto* mine = r.succeeded || r.responses.empty() ? nullptr : r.responses[0].get().first()) {
    c.rev = mine->create_revision;  // an earlier attempt's: adopted, the engine reads
    return c;
  }
  c.retry_at = r.header.revision;  // the probe: create under a key that names the revision learnt
  return c;
}

Txn OrderedKeyDriver::read(const std::string& key, int64_t rev) {
  Txn txn;
  txn.then(Op::get(key, GetOptions{.keys_only = true}));
  for (auto& op : conflicting(r_of(key), rev)) txn.then(std::move(op));
  return txn;
}

Txn OrderedKeyDriver::reread(const std::string& key, int64_t rev, const std::string& waited_for) {
  Txn txn;
  txn.when(Compare::value(handoff_key(core->name())) == waited_for).then(Op::get(key, GetOptions{.keys_only = true}));
  const Txn plain = read(key, rev);
  for (const auto& op : plain.success()) txn.otherwise(op);
  return txn;
}

Verdict OrderedKeyDriver::judge(const TxnResponse& r, int64_t rev) {
  seen(r.header.revision);
  // The key we waited for was let go by its holder: nothing is left before
  // ours (the hand-off record, see the header).
  if (r.succeeded && r.responses.size() == 1) return Verdict{.holds = true, .revision = r.header.revision};
  return verdict(r.responses, 1, rev, r.header.revision, std::string());
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

Verdict OrderedKeyDriver::verdict(const std::vector<OpResponse>& reads, size_t first, int64_t own_rev, int64_t at,
                                  const std::string& predecessor) const {
  // The newest of the keys found is the closest to ours.
  const KeyValue* before = nullptr;
  const auto consider = [&](const KeyValue* kv) {
    if (kv && kv->create_revision != own_rev && (!before || kv->create_revision > before->create_revision)) {
      before = kv;
    }
  };
  for (size_t i = first; i + 1 < reads.size(); i += 2) {
    consider(reads[i].get().first());
    consider(found(reads[i + 1].txn(), own_rev));
  }
  // A reader is not blocked by a write key put after its creation: it was
  // downgraded, a read hold now (and, having held the write lock, it has no
  // older conflicting key).
  if (!before || (spaces_.reader && before->mod_revision != before->create_revision)) {
    return Verdict{.holds = true, .revision = at};
  }
  const bool puts = spaces_.reader;  // a reader wakes when its writer is downgraded
  // The hand-off of the key we wait for tells that nothing is left before
  // ours only if it is the key created just before ours: the one the tail
  // record named when we created ours (`predecessor`). A key whose R was
  // stale sorts below keys created before it, and a look back that stops
  // at the first span holding an older key may find another.
  const auto ordered_key = [&](const std::string& key) {
    return std::ranges::any_of(conflicts_, [&](const Space& space) { return key.starts_with(space.ordered); });
  };
  if (!predecessor.empty() && before->key != predecessor && !spaces_.reader && ordered_key(before->key)) {
    // The key found is one of ours, so the predecessor is newer than it
    // and than every Go key: wait for the predecessor itself. It may be
    // gone already, so the wait is anchored one revision below the read,
    // which has its re-check read it in any case. (Not for a reader: the
    // writer just before it may be downgraded, no longer blocking it.)
    return Verdict{.wait = WaitFor{.key = predecessor,
                                   .options = WatchOptions{.filter_puts = true},
                                   .recheck = key_changed(predecessor, at, false),
                                   .rereads = true},
                   .revision = at - 1};
  }
  return Verdict{.wait = WaitFor{.key = before->key,
                                 .options = WatchOptions{.filter_puts = !puts},
                                 .recheck = key_changed(before->key, at + 1, puts),
                                 .rereads = before->key == predecessor},
                 .revision = at};
}

HoldSpec OrderedKeyDriver::hold_spec() {
  return HoldSpec{.require_unmodified = spaces_.require_unmodified,
                  .watch_key = settings_.watch_key,
                  .record_loss = settings_.record_loss,
                  .handoff_key = spaces_.records_handoff ? handoff_key(core->name()) : std::string(),
                  .tail_key = own_tail_,
                  .noun = settings_.noun,
                  .family = settings_.family,
                  .labels = settings_.labels,
                  .release_requests = settings_.release_requests};
}

std::vector<std::string> OrderedKeyDriver::predecessor_tails() const {
  std::vector<std::string> tails;
  for (const auto& space : conflicts_) {
    if (!space.tail.empty()) tails.push_back(space.tail);
  }
  // Known only if every conflicting space keeps one.
  if (tails.size() != conflicts_.size()) tails.clear();
  return tails;
}

std::string tail_key(const std::string& name, const std::string& space) {
  if (space.size() <= name.size() + 1) return name + "~tail";
  // NAME/<kind>/ -> NAME~<kind>-tail
  return name + "~" + space.substr(name.size() + 1, space.size() - name.size() - 2) + "-tail";
}

std::shared_ptr<ContenderDriver> lowest_key_driver(const std::shared_ptr<RecipeCore>& core,
                                                   LowestKeySettings settings) {
  if (core->options().contender_layout == ContenderLayout::kOrdered) {
    return std::make_shared<OrderedKeyDriver>(core, std::move(settings));
  }
  return std::make_shared<LowestKeyDriver>(core, std::move(settings));
}

}  // namespace etcd::recipes::detail
