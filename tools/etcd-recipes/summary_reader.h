// Reading the recipe state under a prefix from etcd, at one revision: the
// keys that etcd/recipes/inspect.h turns into a Report, either all of them
// or a bounded summary (exact collection sizes by count-only reads, only
// their heads read), and the TTLs of the leases they carry. Shared by the
// commands that show that state: `inspect` (text, JSON), `exporter`
// (Prometheus metrics) and the dashboard.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common.h"
#include "etcd/kv.h"
#include "inspect_text.h"

namespace etcd_cli {

// A summary's bounds: it stops walking after kMaxLoose keys outside
// collections; read_leases() is given kMaxLeases for a summary.
inline constexpr size_t kMaxLoose = 10'000;
inline constexpr size_t kMaxLeases = 200;

struct Snapshot {
  std::vector<etcd::KeyValue> kvs;
  int64_t revision = 0;
  std::map<std::string, int64_t> totals;  // summarised collections' sizes (by directory)
  std::string stopped_at;                 // a summary that stopped walking before the end: where
  int64_t requests = 0;                   // the etcd requests the read made
};

// A path as `inspect` and `exporter` take it: "/locks" and "/locks/" both
// mean the key /locks and the keys under /locks/ (never /locksmith); ""
// means every key. Returns the key itself, without trailing slashes.
std::string prefix_base(std::string prefix);

// The key `base` and the keys under `base/` (every key when base is
// empty), at one revision, in pages of 500; a collection still going on at
// a page's end is counted (one count_only Range) and only its head read:
// the first 20 by creation (holders, waiters), or the first key of each of
// at most 64 producers (queue items, whose oldest is the queue's head), or
// the keys read so far (by key). Stops after kMaxLoose keys outside
// collections (Snapshot::stopped_at). Bounded in requests and keys held
// whatever the prefix holds. `what` prefixes error messages.
Snapshot read_summary(Context& ctx, const std::string& base, const std::string& what);

// Prefixes as the commands that serve several take them: UsageError if
// two share keys (each recipe would be shown, or exported, twice).
void check_disjoint_prefixes(const std::vector<std::string>& prefixes);

// Every key: `base` and the keys under `base/`, all at one revision, in
// pages of 1000. Holds every key.
Snapshot read_at_one_revision(Context& ctx, const std::string& base, const std::string& what);

// What each lease the keys carry has left (at most `max_leases` leases; 0:
// every one). Asked after the read: a lease that expired since shows as
// expired (its keys are gone by now).
inspect::Leases read_leases(Context& ctx, const std::vector<etcd::KeyValue>& kvs, const std::string& what,
                            size_t max_leases);

}  // namespace etcd_cli
