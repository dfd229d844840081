#include "summary_reader.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "etcd/recipes/inspect.h"

namespace etcd_cli {
namespace {

namespace in = etcd::recipes::inspect;

constexpr int64_t kPageSize = 1000;
// A summary's reads: pages of this many keys; a collection still going on
// at a page's end is counted and only its head read (kHead keys by
// creation, or the first key of each of at most kGroups producers).
constexpr int64_t kSummaryPage = 500;
constexpr int64_t kHead = 20;
constexpr int kGroups = 64;

// One Range of the snapshot's read, counted in s.requests.
etcd::GetResponse get_at(Context& ctx, Snapshot& s, const std::string& key, etcd::GetOptions options,
                         const std::string& what) {
  ++s.requests;
  return check(ctx.client().get(key, options).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
}

// Summarises the collection `c` at `s.revision`: its exact size, and its
// head instead of the keys of it already read.
void summarise(Context& ctx, const in::Collection& c, Snapshot& s, const std::string& what) {
  const std::string end = etcd::prefix_range_end(c.dir);
  s.totals[c.dir] = get_at(ctx, s, c.dir, {.range_end = end, .revision = s.revision, .count_only = true}, what).count;
  if (c.head == in::Collection::Head::kByKey) return;  // the keys read so far are its first by key
  std::erase_if(s.kvs, [&](const etcd::KeyValue& kv) { return kv.key.starts_with(c.dir); });
  if (c.head == in::Collection::Head::kByCreation) {
    // etcd sorts the collection to answer (its cost grows with the waiters,
    // the answer does not).
    auto head = get_at(ctx, s, c.dir,
                       {.range_end = end,
                        .limit = kHead,
                        .revision = s.revision,
                        .sort_order = etcd::SortOrder::kAscend,
                        .sort_target = etcd::SortTarget::kCreate},
                       what);
    for (auto& kv : head.kvs) s.kvs.push_back(std::move(kv));
    return;
  }
  // Queue items: a producer names the items of one Txn ~<revision>-
  // <producer>-<seq> in order, the revision one it had seen before (older
  // layouts: <producer>-<seq>), so the first key of each group is its
  // oldest and the first groups hold the queue's head. One read per group,
  // skipping the rest of it.
  std::string from = c.dir;
  for (int group = 0; group < kGroups && from < end; ++group) {
    auto first = get_at(ctx, s, from, {.range_end = end, .limit = 1, .revision = s.revision}, what);
    if (first.kvs.empty()) break;
    etcd::KeyValue kv = std::move(first.kvs.front());
    const size_t dash = kv.key.rfind('-');
    from = dash != std::string::npos && dash >= c.dir.size() ? etcd::prefix_range_end(kv.key.substr(0, dash + 1))
                                                             : kv.key + '\0';
    s.kvs.push_back(std::move(kv));
  }
}

// The range of `base` and the keys under `base/` (every key when empty).
std::pair<std::string, std::string> range_under(const std::string& base) {
  if (base.empty()) return {std::string(etcd::kFromKey), std::string(etcd::kFromKey)};
  return {base + "/", etcd::prefix_range_end(base + "/")};
}

// Adds the key `base` itself, at the snapshot's revision.
void read_base_key(Context& ctx, Snapshot& s, const std::string& base, const std::string& what) {
  if (base.empty()) return;
  auto self = get_at(ctx, s, base, {.revision = s.revision}, what);
  for (auto& kv : self.kvs) s.kvs.push_back(std::move(kv));
}

}  // namespace

std::string prefix_base(std::string prefix) {
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix;
}

Snapshot read_summary(Context& ctx, const std::string& base, const std::string& what) {
  Snapshot s;
  const auto [from, end] = range_under(base);
  std::string key = from;
  size_t loose = 0;
  for (;;) {
    auto page = get_at(ctx, s, key, {.range_end = end, .limit = kSummaryPage, .revision = s.revision}, what);
    if (s.revision == 0) s.revision = page.header.revision;
    if (page.kvs.empty()) break;
    const auto last = in::collection_of(page.kvs.back());
    std::string next = page.kvs.back().key + '\0';
    for (auto& kv : page.kvs) {
      if (!last || !kv.key.starts_with(last->dir)) ++loose;
      s.kvs.push_back(std::move(kv));
    }
    if (!page.more) break;
    if (last) {
      summarise(ctx, *last, s, what);
      next = etcd::prefix_range_end(last->dir);
      if (!end.empty() && end != etcd::kFromKey && next >= end) break;
    }
    if (loose >= kMaxLoose) {
      s.stopped_at = next;
      break;
    }
    key = std::move(next);
  }
  // A collection's head may repeat keys a page had read.
  std::sort(s.kvs.begin(), s.kvs.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  s.kvs.erase(std::unique(s.kvs.begin(), s.kvs.end(), [](const auto& a, const auto& b) { return a.key == b.key; }),
              s.kvs.end());
  read_base_key(ctx, s, base, what);
  return s;
}

// The first page fixes the revision; later pages and the key itself are
// read at it. Pages keep each response small however big the prefix is.
Snapshot read_at_one_revision(Context& ctx, const std::string& base, const std::string& what) {
  Snapshot s;
  const auto [from, end] = range_under(base);
  std::string key = from;
  for (;;) {
    auto page = get_at(ctx, s, key, {.range_end = end, .limit = kPageSize, .revision = s.revision}, what);
    if (s.revision == 0) s.revision = page.header.revision;
    for (auto& kv : page.kvs) s.kvs.push_back(std::move(kv));
    if (!page.more || s.kvs.empty()) break;
    key = s.kvs.back().key + '\0';
  }
  read_base_key(ctx, s, base, what);
  return s;
}

inspect::Leases read_leases(Context& ctx, const std::vector<etcd::KeyValue>& kvs, const std::string& what,
                            size_t max_leases) {
  std::set<int64_t> ids;
  for (const auto& kv : kvs) {
    if (kv.lease != 0 && (max_leases == 0 || ids.size() < max_leases)) ids.insert(kv.lease);
  }
  inspect::Leases leases;
  for (int64_t id : ids) {
    auto ttl = check(ctx.client().lease_time_to_live(id).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(),
                     what + ": lease " + lease_hex(id));
    leases[id] = inspect::LeaseTtl{.ttl = ttl.ttl, .granted = ttl.granted_ttl};
  }
  return leases;
}

void check_disjoint_prefixes(const std::vector<std::string>& prefixes) {
  for (size_t i = 0; i < prefixes.size(); ++i) {
    for (size_t j = i + 1; j < prefixes.size(); ++j) {
      const std::string a = prefix_base(prefixes[i]), b = prefix_base(prefixes[j]);
      if (key_within(b, a) || key_within(a, b)) {
        throw UsageError(cat("prefixes \"", prefixes[i], "\" and \"", prefixes[j],
                             "\" overlap: give each recipe's keys under one PREFIX only"));
      }
    }
  }
}

}  // namespace etcd_cli
