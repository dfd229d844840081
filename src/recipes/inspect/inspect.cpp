#include "etcd/recipes/inspect.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "../barriers/barrier_keys.h"
#include "../core/hex_number.h"
#include "../core/key_path.h"
#include "../core/keys.h"
#include "../counters/counter_keys.h"
#include "../locks/lock_keys.h"
#include "../queues/queue_keys.h"
// The work queue's own record parser: items and dead letters are read
// exactly as the work queue reads them, never by a second reading of the format.
#include "../queues/work_record.h"

namespace etcd::recipes::inspect {
namespace {

namespace wr = etcd::recipes::detail;
namespace rw = etcd::recipes::detail::rwlock_keys;
namespace sem = etcd::recipes::detail::semaphore_keys;
namespace bar = etcd::recipes::detail::barrier_keys;
namespace ctr = etcd::recipes::detail::counter_keys;
using Queue = etcd::recipes::detail::QueueKeys;

bool is_hex(std::string_view s, size_t min, size_t max) {
  if (s.size() < min || s.size() > max) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A canonical decimal int64, as IntegerCodec writes it (no '+', no leading
// zeros, no "-0"): only such a value is what a counter stores.
std::optional<int64_t> canonical_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  if (std::to_string(v) != s) return std::nullopt;
  return v;
}

// The ordered contender layout's keys (recipe.h, ContenderLayout::kOrdered)
// name a revision, their lease and a count, 16 hex digits each:
// ~<R>-<lease>-<n>. Only a key named by its own lease is a contender.
bool ordered_contender(std::string_view last, int64_t lease) {
  if (lease == 0 || last.size() != 1 + 16 + 1 + 16 + 1 + 16 || last[0] != '~' || last[17] != '-' || last[34] != '-') {
    return false;
  }
  return is_hex(last.substr(1, 16), 16, 16) && last.substr(18, 16) == wr::hex16(static_cast<uint64_t>(lease)) &&
         is_hex(last.substr(35, 16), 16, 16);
}

// "N ordered": the permit count of a semaphore in the ordered layout.
std::optional<int64_t> ordered_permits(std::string_view s) {
  if (!s.ends_with(sem::kOrderedSuffix)) return std::nullopt;
  return canonical_int(s.substr(0, s.size() - sem::kOrderedSuffix.size()));
}

// A contender key of etcd's Go layout (named by its lease in lower-case
// hex without padding) or of the ordered one.
bool contender_of(std::string_view last, int64_t lease) {
  return (lease != 0 && last == wr::lease_hex(lease)) || ordered_contender(last, lease);
}

// KEY split at its last two '/': KEY = grand + "/" + mid + "/" + last.
struct Path {
  std::string_view parent;  // everything before the last '/'
  std::string_view last;
  std::string_view grand;  // everything before the second-to-last '/' (npos: none)
  std::string_view mid;
  bool has_mid = false;
};

Path split(std::string_view key) {
  Path p;
  const size_t a = key.rfind('/');
  if (a == std::string_view::npos) {
    p.last = key;
    return p;
  }
  p.parent = key.substr(0, a);
  p.last = key.substr(a + 1);
  const size_t b = p.parent.rfind('/');
  if (b != std::string_view::npos) {
    p.grand = p.parent.substr(0, b);
    p.mid = p.parent.substr(b + 1);
    p.has_mid = true;
  }
  return p;
}

// NAME/read/<contender> or NAME/write/<contender>: a read-write lock's.
bool rw_key(const Path& p, int64_t lease) {
  return p.has_mid && (p.mid == rw::kRead || p.mid == rw::kWrite) &&
         (is_hex(p.last, 1, 16) || ordered_contender(p.last, lease));
}

// NAME/holders/<lease hex>-<n>: a semaphore's, in the holders layout.
bool holders_key(const Path& p) {
  if (!p.has_mid || p.mid != sem::kHolders) return false;
  const size_t dash = p.last.find('-');
  return dash != std::string_view::npos && is_hex(p.last.substr(0, dash), 1, 16) && is_digits(p.last.substr(dash + 1));
}

// BASE/SERVICE/ID holding that very instance's JSON.
std::optional<ServiceInstance> instance_at(const Path& p, const etcd::KeyValue& kv) {
  if (!p.has_mid || p.grand.empty()) return std::nullopt;
  auto i = ServiceInstanceCodec::decode(kv.value, kv.key);
  if (!i.ok() || i->name != p.mid || i->id != p.last) return std::nullopt;
  return std::move(i).value();
}

// Families found in the first pass; a family's kind is settled once all
// its keys are known (a queue is a work queue when any of it says so).
enum class Family { kRw, kSem, kQueue, kBarrier, kGate, kCounter, kLowest, kServices };

struct Pending {
  std::vector<Entry> entries;
  bool work = false;      // a claim, a dead letter, or a record
  bool priority = false;  // an item key of the priority queue's form
  bool count = false;     // a count barrier's party key or NAME/gave-up
  bool dbl = false;       // a double barrier's party key
};

bool priority_key(std::string_view id) {
  // <4 hex>-~<revision>-<producer>-<seq>, as the priority queue's producer
  // names them (<4 hex>-<producer>-<seq> before the revision was added).
  if (id.size() < 5 || !is_hex(id.substr(0, 4), 4, 4) || id[4] != '-') return false;
  std::string_view rest = id.substr(5);
  if (rest.starts_with('~')) {
    if (rest.size() < 18 || !is_hex(rest.substr(1, 16), 16, 16) || rest[17] != '-') return false;
    rest = rest.substr(18);
  }
  return rest.size() == 16 + 1 + 16 && is_hex(rest.substr(0, 16), 16, 16) && rest[16] == '-' &&
         is_hex(rest.substr(17), 16, 16);
}

// The priority a priority queue gives an item id (docs/recipes/queues.md: 4
// lower-case hex digits and '-', otherwise the lowest, 65535).
int64_t priority_of(std::string_view id) {
  if (id.size() >= 5 && is_hex(id.substr(0, 4), 4, 4) && id[4] == '-') {
    return std::stoll(std::string(id.substr(0, 4)), nullptr, 16);
  }
  return 65535;
}

// <client id>-<16 hex>-<n>: a count barrier's party; <client id>-<16 hex>: a double barrier's.
bool count_party(std::string_view s) {
  const size_t a = s.rfind('-');
  if (a == std::string_view::npos || !is_digits(s.substr(a + 1))) return false;
  const std::string_view rest = s.substr(0, a);
  const size_t b = rest.rfind('-');
  return b != std::string_view::npos && is_hex(rest.substr(b + 1), 16, 16);
}
bool double_party(std::string_view s) {
  const size_t a = s.rfind('-');
  return a != std::string_view::npos && is_hex(s.substr(a + 1), 16, 16);
}

bool by_creation(const Entry& a, const Entry& b) {
  return std::tie(a.kv.create_revision, a.kv.key) < std::tie(b.kv.create_revision, b.kv.key);
}
bool by_key(const Entry& a, const Entry& b) { return a.kv.key < b.kv.key; }

Entry entry(Role role, etcd::KeyValue kv) {
  Entry e;
  e.role = role;
  e.kv = std::move(kv);
  return e;
}

void settle_rw(Recipe& r) {
  std::sort(r.entries.begin(), r.entries.end(), by_creation);
  bool writer_before = false;  // a live write key created earlier
  bool any_before = false;
  for (Entry& e : r.entries) {
    const bool downgraded = e.mode == rw::kWrite && e.kv.mod_revision != e.kv.create_revision;
    if (downgraded) e.mode = rw::kRead;
    if (e.mode == rw::kWrite) {
      e.role = any_before ? Role::kWaiting : Role::kHolder;
      writer_before = true;
    } else {
      e.role = writer_before ? Role::kWaiting : Role::kHolder;
    }
    any_before = true;
  }
}

void settle_semaphore(Recipe& r) {
  std::vector<Entry> holders;
  bool ordered = false;  // permits are slot keys, waiters queue keys: their roles are known
  for (Entry& e : r.entries) {
    if (e.role == Role::kPermits) {
      r.permits = canonical_int(e.kv.value);
      if (!r.permits) {
        r.permits = ordered_permits(e.kv.value);
        ordered = true;
      }
    } else {
      holders.push_back(std::move(e));
    }
  }
  std::sort(holders.begin(), holders.end(), by_creation);
  if (ordered) {
    std::stable_partition(holders.begin(), holders.end(), [](const Entry& e) { return e.role == Role::kHolder; });
  } else {
    int64_t i = 0;
    for (Entry& e : holders) e.role = (!r.permits || i++ < *r.permits) ? Role::kHolder : Role::kWaiting;
  }
  std::erase_if(r.entries, [](const Entry& e) { return e.role != Role::kPermits; });
  r.entries.insert(r.entries.end(), std::make_move_iterator(holders.begin()), std::make_move_iterator(holders.end()));
}

void settle_work_queue(Recipe& r) {
  std::map<std::string, const Entry*> claims;
  for (const Entry& e : r.entries) {
    if (e.role == Role::kClaim) claims[e.id] = &e;
  }
  std::set<std::string> claimed_ids;
  for (Entry& e : r.entries) {
    if (e.role != Role::kItem) continue;
    const wr::WorkRecord rec = wr::parse_work_record(e.kv.value);
    e.deliveries = rec.deliveries(e.kv.version);
    e.not_before_ms = rec.not_before_ms;
    e.payload = std::string(wr::work_payload(e.kv.value, rec));
    if (auto c = claims.find(e.id); c != claims.end()) {
      e.role = Role::kClaimed;
      e.claimed_by = c->second->kv.value;
      e.claim_lease = c->second->kv.lease;
      claimed_ids.insert(e.id);
    }
  }
  // A claim of an item that is gone (an ack half seen, or removed by hand)
  // stays listed on its own; the others live in their item's entry.
  std::erase_if(r.entries, [&](const Entry& e) { return e.role == Role::kClaim && claimed_ids.count(e.id); });
  for (Entry& e : r.entries) {
    if (e.role != Role::kDead) continue;
    if (auto d = wr::parse_dead_record(e.kv.value)) {
      e.deliveries = d->deliveries;
      e.since_ms = d->since_ms;
      e.reason = d->reason;
      e.payload = d->payload;
    } else {
      e.payload = e.kv.value;
    }
  }
}

int role_rank(Role role) {
  switch (role) {
    case Role::kHolder:
      return 0;
    case Role::kWaiting:
      return 1;
    case Role::kClaimed:
    case Role::kItem:
      return 2;
    default:
      return 3;
  }
}

void sort_entries(Recipe& r) {
  if (r.kind == Kind::kLockOrElection || r.kind == Kind::kRwLock || r.kind == Kind::kSemaphore) {
    std::stable_sort(r.entries.begin(), r.entries.end(), [](const Entry& a, const Entry& b) {
      const int ra = a.role == Role::kPermits ? -1 : role_rank(a.role);
      const int rb = b.role == Role::kPermits ? -1 : role_rank(b.role);
      if (ra != rb) return ra < rb;
      return by_creation(a, b);
    });
    return;
  }
  std::sort(r.entries.begin(), r.entries.end(), [&](const Entry& a, const Entry& b) {
    const int ra = role_rank(a.role), rb = role_rank(b.role);
    if (ra != rb) return ra < rb;
    if (ra == 2) {  // items in the order they are served
      return std::tie(a.priority, a.kv.create_revision, a.kv.key) <
             std::tie(b.priority, b.kv.create_revision, b.kv.key);
    }
    if (r.kind == Kind::kCountBarrier || r.kind == Kind::kDoubleBarrier || r.kind == Kind::kBarrier) {
      return by_creation(a, b);
    }
    return by_key(a, b);
  });
}

// Where a family's summarised collections are, by Recipe::totals's keys.
std::string collection_dir(std::string_view name, std::string_view key) {
  return key.empty() ? std::string(name) + "/" : wr::dir_under(name, key);
}

// The collections a kind of recipe has (services: one per service name),
// by Recipe::totals's keys.
std::vector<std::string_view> collection_keys(Kind kind) {
  switch (kind) {
    case Kind::kLockOrElection:
      return {""};
    case Kind::kRwLock:
      return {rw::kRead, rw::kWrite};
    case Kind::kSemaphore:
      return {sem::kHolders, sem::kQueue};
    case Kind::kQueue:
    case Kind::kPriorityQueue:
      return {Queue::kItems};
    case Kind::kWorkQueue:
      return {Queue::kItems, Queue::kClaims, Queue::kDead};
    case Kind::kCountBarrier:
    case Kind::kDoubleBarrier:
    case Kind::kBarrier:
      return {bar::kParties};
    case Kind::kCounter:
      return {ctr::kReceipts};
    default:
      return {};
  }
}

void attach_totals(Recipe& r, const std::map<std::string, int64_t>& totals) {
  if (totals.empty()) return;
  std::vector<std::string_view> keys = collection_keys(r.kind);
  if (r.kind == Kind::kServices) {
    for (const Entry& e : r.entries) keys.push_back(e.instance->name);
  }
  for (const auto& key : keys) {
    if (auto it = totals.find(collection_dir(r.name, key)); it != totals.end()) r.totals[std::string(key)] = it->second;
  }
}

std::optional<int64_t> total_of(const Recipe& r, std::string_view key) {
  const auto it = r.totals.find(std::string(key));
  return it == r.totals.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

}  // namespace

int64_t unread(const Recipe& r) {
  int64_t n = 0;
  for (const auto& [key, size] : r.totals) {
    const std::string dir = collection_dir(r.name, key);
    n += size - std::count_if(r.entries.begin(), r.entries.end(), [&](const Entry& e) {
           return e.kv.key.starts_with(dir) && e.kv.key.find('/', dir.size()) == std::string::npos;
         });
  }
  return std::max<int64_t>(n, 0);
}

std::optional<Collection> collection_of(const etcd::KeyValue& kv) {
  const Path p = split(kv.key);
  const std::string dir = std::string(p.parent) + "/";
  using Head = Collection::Head;
  if (rw_key(p, kv.lease) || holders_key(p)) return Collection{dir, Head::kByCreation};
  if (p.has_mid && p.mid == Queue::kItems) return Collection{dir, Head::kPerGroup};
  if (p.has_mid && (p.mid == Queue::kClaims || p.mid == Queue::kDead || p.mid == ctr::kReceipts)) {
    return Collection{dir, Head::kByKey};
  }
  if (p.has_mid && p.mid == bar::kParties) return Collection{dir, Head::kByCreation};
  if (!p.parent.empty() && contender_of(p.last, kv.lease)) return Collection{dir, Head::kByCreation};
  if (instance_at(p, kv)) return Collection{dir, Head::kByKey};
  return std::nullopt;
}

const char* kind_id(Kind kind) {
  switch (kind) {
    case Kind::kLockOrElection:
      return "lock_or_election";
    case Kind::kRwLock:
      return "rwlock";
    case Kind::kSemaphore:
      return "semaphore";
    case Kind::kQueue:
      return "queue";
    case Kind::kPriorityQueue:
      return "priority_queue";
    case Kind::kWorkQueue:
      return "work_queue";
    case Kind::kGate:
      return "barrier";
    case Kind::kCountBarrier:
      return "count_barrier";
    case Kind::kDoubleBarrier:
      return "double_barrier";
    case Kind::kBarrier:
      return "count_or_double_barrier";
    case Kind::kCounter:
      return "counter";
    case Kind::kServices:
      return "services";
    case Kind::kTransient:
      return "transient";
    case Kind::kPlain:
      return "key";
  }
  return "key";
}

const char* role_id(Role role) {
  switch (role) {
    case Role::kHolder:
      return "holder";
    case Role::kWaiting:
      return "waiting";
    case Role::kPermits:
      return "permits";
    case Role::kItem:
      return "item";
    case Role::kClaimed:
      return "in_flight";
    case Role::kClaim:
      return "claim";
    case Role::kDead:
      return "dead_letter";
    case Role::kProducer:
      return "producer";
    case Role::kParty:
      return "party";
    case Role::kReady:
      return "ready";
    case Role::kGaveUp:
      return "gave_up";
    case Role::kGateKey:
      return "gate";
    case Role::kSetBy:
      return "set_by";
    case Role::kValue:
      return "value";
    case Role::kReceipt:
      return "receipt";
    case Role::kInstance:
      return "instance";
    case Role::kKey:
      return "key";
  }
  return "key";
}

int64_t count(const Recipe& recipe, Role role) {
  return std::count_if(recipe.entries.begin(), recipe.entries.end(), [&](const Entry& e) { return e.role == role; });
}

int64_t total(const Recipe& r, Role role) {
  if (r.totals.empty()) return count(r, role);
  switch (r.kind) {
    case Kind::kLockOrElection:
    case Kind::kRwLock: {
      int64_t all = 0;
      for (const auto& key : collection_keys(r.kind)) {
        const std::string dir = collection_dir(r.name, key);
        all += total_of(r, key).value_or(std::count_if(r.entries.begin(), r.entries.end(),
                                                       [&](const Entry& e) { return e.kv.key.starts_with(dir); }));
      }
      // The head read by creation holds every holder (a lock has one; readers
      // holding beyond the head are counted as waiting).
      const int64_t holders = count(r, Role::kHolder);
      return role == Role::kHolder ? holders : role == Role::kWaiting ? all - holders : count(r, role);
    }
    case Kind::kSemaphore: {
      if (const auto queued = total_of(r, sem::kQueue)) {  // the ordered layout: N slots and a queue
        if (role == Role::kWaiting) return *queued;
        if (role == Role::kHolder) return count(r, role);
        break;
      }
      const auto n = total_of(r, sem::kHolders);
      if (!n || (role != Role::kHolder && role != Role::kWaiting)) break;
      const int64_t holders = r.permits ? std::min(*r.permits, *n) : *n;
      return role == Role::kHolder ? holders : *n - holders;
    }
    case Kind::kQueue:
    case Kind::kPriorityQueue:
      if (role == Role::kItem) return total_of(r, Queue::kItems).value_or(count(r, role));
      break;
    case Kind::kWorkQueue: {
      // A claim whose item was not read is in flight all the same.
      const int64_t claimed = total_of(r, Queue::kClaims).value_or(count(r, Role::kClaimed) + count(r, Role::kClaim));
      if (role == Role::kClaimed) return claimed;
      if (role == Role::kItem) {
        const auto items = total_of(r, Queue::kItems);
        return items ? std::max<int64_t>(*items - claimed, 0) : count(r, role);
      }
      if (role == Role::kDead) return total_of(r, Queue::kDead).value_or(count(r, role));
      break;
    }
    case Kind::kCountBarrier:
    case Kind::kDoubleBarrier:
    case Kind::kBarrier:
      if (role == Role::kParty) return total_of(r, bar::kParties).value_or(count(r, role));
      break;
    case Kind::kCounter:
      if (role == Role::kReceipt) return total_of(r, ctr::kReceipts).value_or(count(r, role));
      break;
    case Kind::kServices:
      if (role == Role::kInstance) return count(r, role) + unread(r);
      break;
    default:
      break;
  }
  return count(r, role);
}

Report build_report(std::vector<etcd::KeyValue> kvs, int64_t revision, const std::map<std::string, int64_t>& totals) {
  std::sort(kvs.begin(), kvs.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  std::map<std::pair<Family, std::string>, Pending> families;
  std::vector<etcd::KeyValue> rest;

  // Names whose NAME key belongs to them: gates (NAME/set-by) and counters
  // (NAME/receipts/); semaphores of the ordered layout (NAME/permits "N
  // ordered"), whose NAME/queue/ keys are not a lock's.
  std::set<std::string, std::less<>> gates, counters, ordered_semaphores;
  for (const auto& kv : kvs) {
    const Path p = split(kv.key);
    if (p.last == bar::kSetBy && kv.lease == 0) gates.insert(std::string(p.parent));
    if (p.has_mid && p.mid == ctr::kReceipts) counters.insert(std::string(p.grand));
    if (p.last == sem::kPermits && kv.lease == 0 && ordered_permits(kv.value)) {
      ordered_semaphores.insert(std::string(p.parent));
    }
  }

  for (auto& kv : kvs) {
    // The parts of the path view this copy: `kv` itself is moved into its entry.
    const std::string key = kv.key;
    const Path p = split(key);
    auto add = [&](Family f, std::string_view name, Entry e) -> Pending& {
      Pending& pending = families[{f, std::string(name)}];
      pending.entries.push_back(std::move(e));
      return pending;
    };
    if (rw_key(p, kv.lease)) {
      Entry e = entry(Role::kWaiting, std::move(kv));
      e.mode = std::string(p.mid);
      add(Family::kRw, p.grand, std::move(e));
    } else if (holders_key(p)) {
      add(Family::kSem, p.grand, entry(Role::kWaiting, std::move(kv)));
    } else if (p.has_mid && p.mid == sem::kQueue && ordered_semaphores.contains(p.grand) &&
               ordered_contender(p.last, kv.lease)) {
      add(Family::kSem, p.grand, entry(Role::kWaiting, std::move(kv)));
    } else if (p.has_mid && p.mid == sem::kSlots && ordered_semaphores.contains(p.grand) && kv.lease != 0 &&
               is_digits(p.last)) {
      add(Family::kSem, p.grand, entry(Role::kHolder, std::move(kv)));
    } else if (p.last == sem::kPermits && kv.lease == 0 && (canonical_int(kv.value) || ordered_permits(kv.value))) {
      add(Family::kSem, p.parent, entry(Role::kPermits, std::move(kv)));
    } else if (p.has_mid && p.mid == Queue::kItems) {
      Entry e = entry(Role::kItem, std::move(kv));
      e.id = std::string(p.last);
      const bool record = wr::is_work_record(e.kv.value);
      const bool prio = priority_key(e.id);
      Pending& q = add(Family::kQueue, p.grand, std::move(e));
      q.work = q.work || record;
      q.priority = q.priority || prio;
    } else if (p.has_mid && p.mid == Queue::kProducers && is_hex(p.last, 16, 16)) {
      add(Family::kQueue, p.grand, entry(Role::kProducer, std::move(kv)));
    } else if (p.has_mid && (p.mid == Queue::kClaims || p.mid == Queue::kDead)) {
      Entry e = entry(p.mid == Queue::kClaims ? Role::kClaim : Role::kDead, std::move(kv));
      e.id = std::string(p.last);
      add(Family::kQueue, p.grand, std::move(e)).work = true;
    } else if (p.has_mid && p.mid == bar::kParties) {
      const bool c = count_party(p.last), d = !c && double_party(p.last);
      Pending& b = add(Family::kBarrier, p.grand, entry(Role::kParty, std::move(kv)));
      b.count = b.count || c;
      b.dbl = b.dbl || d;
    } else if ((p.last == bar::kReady || p.last == bar::kGaveUp) && !p.parent.empty()) {
      const bool gave_up = p.last == bar::kGaveUp;
      Pending& b = add(Family::kBarrier, p.parent, entry(gave_up ? Role::kGaveUp : Role::kReady, std::move(kv)));
      b.count = b.count || gave_up;
    } else if (p.last == bar::kSetBy && kv.lease == 0) {
      add(Family::kGate, p.parent, entry(Role::kSetBy, std::move(kv)));
    } else if (gates.count(kv.key)) {
      const std::string name = kv.key;
      add(Family::kGate, name, entry(Role::kGateKey, std::move(kv)));
    } else if (p.has_mid && p.mid == ctr::kReceipts) {
      add(Family::kCounter, p.grand, entry(Role::kReceipt, std::move(kv)));
    } else if (counters.count(kv.key)) {
      const std::string name = kv.key;
      add(Family::kCounter, name, entry(Role::kValue, std::move(kv)));
    } else if (!p.parent.empty() && contender_of(p.last, kv.lease)) {
      add(Family::kLowest, p.parent, entry(Role::kWaiting, std::move(kv)));
    } else if (auto instance = instance_at(p, kv)) {
      Entry e = entry(Role::kInstance, std::move(kv));
      e.id = instance->id;
      e.instance = std::move(instance);
      add(Family::kServices, p.grand, std::move(e));
    } else {
      rest.push_back(std::move(kv));
    }
  }

  Report report;
  report.revision = revision;
  for (auto& [id, pending] : families) {
    Recipe r;
    r.name = id.second;
    r.entries = std::move(pending.entries);
    switch (id.first) {
      case Family::kRw:
        r.kind = Kind::kRwLock;
        settle_rw(r);
        break;
      case Family::kSem:
        r.kind = Kind::kSemaphore;
        settle_semaphore(r);
        break;
      case Family::kQueue:
        r.kind = pending.work ? Kind::kWorkQueue : pending.priority ? Kind::kPriorityQueue : Kind::kQueue;
        attach_totals(r, totals);
        if (r.kind == Kind::kWorkQueue) settle_work_queue(r);
        if (r.kind == Kind::kPriorityQueue) {
          for (Entry& e : r.entries) {
            if (e.role == Role::kItem) e.priority = priority_of(e.id);
          }
        }
        break;
      case Family::kBarrier:
        r.kind = pending.count ? Kind::kCountBarrier : pending.dbl ? Kind::kDoubleBarrier : Kind::kBarrier;
        break;
      case Family::kGate:
        r.kind = Kind::kGate;
        break;
      case Family::kCounter:
        r.kind = Kind::kCounter;
        for (const Entry& e : r.entries) {
          if (e.role == Role::kValue) r.value = canonical_int(e.kv.value);
        }
        break;
      case Family::kLowest:
        r.kind = Kind::kLockOrElection;
        std::sort(r.entries.begin(), r.entries.end(), by_creation);
        if (!r.entries.empty()) r.entries.front().role = Role::kHolder;
        break;
      case Family::kServices:
        r.kind = Kind::kServices;
        break;
    }
    attach_totals(r, totals);
    sort_entries(r);
    report.recipes.push_back(std::move(r));
  }
  for (auto& kv : rest) {
    Recipe r;
    r.name = kv.key;
    const auto v = kv.lease == 0 ? canonical_int(kv.value) : std::nullopt;
    r.kind = v ? Kind::kCounter : kv.lease != 0 ? Kind::kTransient : Kind::kPlain;
    if (v) r.value = v;
    r.entries.push_back(entry(v ? Role::kValue : Role::kKey, std::move(kv)));
    report.recipes.push_back(std::move(r));
  }
  std::stable_sort(report.recipes.begin(), report.recipes.end(), [](const Recipe& a, const Recipe& b) {
    return std::tie(a.name, a.kind) < std::tie(b.name, b.kind);
  });
  return report;
}

Report build_report(std::vector<etcd::KeyValue> kvs, int64_t revision) {
  return build_report(std::move(kvs), revision, {});
}

bool summarised(const Recipe& r, Role role) {
  auto has = [&](std::string_view key) { return r.totals.count(std::string(key)) > 0; };
  switch (role) {
    case Role::kItem:
      return has(Queue::kItems);
    case Role::kClaimed:
    case Role::kClaim:
      return has(Queue::kClaims);
    case Role::kDead:
      return has(Queue::kDead);
    case Role::kParty:
      return has(bar::kParties);
    case Role::kReceipt:
      return has(ctr::kReceipts);
    case Role::kHolder:
    case Role::kWaiting:
    case Role::kInstance:
      return !r.totals.empty();
    default:
      return false;
  }
}

}  // namespace etcd::recipes::inspect
