// inspect PREFIX: the recipes under PREFIX and their state, in human terms
// (etcd/recipes/inspect.h recognizes them, inspect_text.h words them; this
// file reads etcd and prints).

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/inspect.h"
#include "inspect_text.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

namespace in = etcd::recipes::inspect;
namespace text = etcd_cli::inspect;

constexpr int64_t kPageSize = 1000;
// A summary's reads: pages of this many keys; a collection still going on
// at a page's end is counted and only its head read (kHead keys by creation,
// or the first key of each of at most kGroups producers); it stops after
// kMaxLoose keys outside collections; it asks the TTL of at most kMaxLeases
// leases. Bounded in time and output whatever the prefix holds.
constexpr int64_t kSummaryPage = 500;
constexpr int64_t kHead = 20;
constexpr int kGroups = 64;
constexpr size_t kMaxLoose = 10'000;
constexpr size_t kMaxLeases = 200;
constexpr text::RenderLimits kSummaryLimits{.lines_per_recipe = 10, .recipes = 40};

struct Snapshot {
  std::vector<etcd::KeyValue> kvs;
  int64_t revision = 0;
  std::map<std::string, int64_t> totals;  // summarised collections' sizes (by directory)
  std::string stopped_at;                 // a summary that stopped walking before the end: where
};

etcd::GetResponse get_at(Context& ctx, const std::string& key, etcd::GetOptions options, const std::string& what) {
  return check(ctx.client().get(key, options).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
}

// Summarises the collection `c` at `s.revision`: its exact size, and its
// head instead of the keys of it already read.
void summarise(Context& ctx, const in::Collection& c, Snapshot& s, const std::string& what) {
  const std::string end = etcd::prefix_range_end(c.dir);
  s.totals[c.dir] = get_at(ctx, c.dir, {.range_end = end, .revision = s.revision, .count_only = true}, what).count;
  if (c.head == in::Collection::Head::kByKey) return;  // the keys read so far are its first by key
  std::erase_if(s.kvs, [&](const etcd::KeyValue& kv) { return kv.key.starts_with(c.dir); });
  if (c.head == in::Collection::Head::kByCreation) {
    // etcd sorts the collection to answer (its cost grows with the waiters,
    // the answer does not).
    auto head = get_at(ctx, c.dir,
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
    auto first = get_at(ctx, from, {.range_end = end, .limit = 1, .revision = s.revision}, what);
    if (first.kvs.empty()) break;
    etcd::KeyValue kv = std::move(first.kvs.front());
    const size_t dash = kv.key.rfind('-');
    from = dash != std::string::npos && dash >= c.dir.size() ? etcd::prefix_range_end(kv.key.substr(0, dash + 1))
                                                             : kv.key + '\0';
    s.kvs.push_back(std::move(kv));
  }
}

// The key `base` and the keys under `base/`, at one revision, in pages,
// summarising every collection a page ends in (above). Holds O(pages
// read) keys.
Snapshot read_summary(Context& ctx, const std::string& base, const std::string& what) {
  Snapshot s;
  const std::string from = base.empty() ? std::string(etcd::kFromKey) : base + "/";
  const std::string end = base.empty() ? std::string(etcd::kFromKey) : etcd::prefix_range_end(base + "/");
  std::string key = from;
  size_t loose = 0;
  for (;;) {
    auto page = get_at(ctx, key, {.range_end = end, .limit = kSummaryPage, .revision = s.revision}, what);
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
  if (!base.empty()) {
    auto self = get_at(ctx, base, {.revision = s.revision}, what);
    for (auto& kv : self.kvs) s.kvs.push_back(std::move(kv));
  }
  return s;
}

// The key `base` and every key under `base/` (every key when base is
// empty), all at one revision: the first page fixes it, later pages and
// the key itself are read at it. Pages keep each response small however
// big the prefix is.
Snapshot read_at_one_revision(Context& ctx, const std::string& base, const std::string& what) {
  Snapshot s;
  const std::string from = base.empty() ? std::string(etcd::kFromKey) : base + "/";
  const std::string end = base.empty() ? std::string(etcd::kFromKey) : etcd::prefix_range_end(base + "/");
  std::string key = from;
  for (;;) {
    etcd::GetOptions options;
    options.range_end = end;
    options.limit = kPageSize;
    options.revision = s.revision;
    auto page = check(ctx.client().get(key, options).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
    if (s.revision == 0) s.revision = page.header.revision;
    for (auto& kv : page.kvs) s.kvs.push_back(std::move(kv));
    if (!page.more || s.kvs.empty()) break;
    key = s.kvs.back().key + '\0';
  }
  if (!base.empty()) {
    etcd::GetOptions options;
    options.revision = s.revision;
    auto self = check(ctx.client().get(base, options).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
    for (auto& kv : self.kvs) s.kvs.push_back(std::move(kv));
  }
  return s;
}

// What each lease the keys carry has left. Asked after the read: a lease
// that expired since shows as expired (its keys are gone by now).
text::Leases read_leases(Context& ctx, const std::vector<etcd::KeyValue>& kvs, const std::string& what,
                         size_t max_leases) {
  std::set<int64_t> ids;
  for (const auto& kv : kvs) {
    if (kv.lease != 0 && (max_leases == 0 || ids.size() < max_leases)) ids.insert(kv.lease);
  }
  text::Leases leases;
  for (int64_t id : ids) {
    auto ttl = check(ctx.client().lease_time_to_live(id).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(),
                     what + ": lease " + lease_hex(id));
    leases[id] = text::LeaseTtl{.ttl = ttl.ttl, .granted = ttl.granted_ttl};
  }
  return leases;
}

nlohmann::json entry_json(const in::Entry& e, const text::Leases& leases) {
  nlohmann::json j = {{"role", in::role_id(e.role)},       {"key", base64(e.kv.key)},
                      {"value", base64(e.kv.value)},       {"create_revision", e.kv.create_revision},
                      {"mod_revision", e.kv.mod_revision}, {"version", e.kv.version}};
  auto lease = [&](const char* field, int64_t id) {
    if (id == 0) return;
    nlohmann::json l = {{"id", lease_hex(id)}};
    if (auto it = leases.find(id); it != leases.end()) {
      l["ttl"] = it->second.ttl;
      l["granted_ttl"] = it->second.granted;
    }
    j[field] = l;
  };
  lease("lease", e.kv.lease);
  if (e.role == in::Role::kHolder || e.role == in::Role::kWaiting) j["token"] = e.kv.create_revision;
  if (!e.mode.empty()) j["mode"] = e.mode;
  if (!e.id.empty()) j["id"] = e.id;
  if (e.priority >= 0) j["priority"] = e.priority;
  if (e.role == in::Role::kItem || e.role == in::Role::kClaimed || e.role == in::Role::kDead) {
    j["deliveries"] = e.deliveries;
  }
  if (e.role == in::Role::kItem && e.not_before_ms > 0) j["not_before"] = e.not_before_ms;
  if (e.role == in::Role::kClaimed) {
    j["claimed_by"] = base64(e.claimed_by);
    lease("claim_lease", e.claim_lease);
  }
  if (e.role == in::Role::kDead) {
    j["reason"] = e.reason;
    j["since"] = e.since_ms;
  }
  if (!e.payload.empty() || e.role == in::Role::kItem || e.role == in::Role::kClaimed || e.role == in::Role::kDead) {
    if (e.role != in::Role::kKey) j["payload"] = base64(e.payload);
  }
  if (e.instance) {
    j["service"] = e.instance->name;
    j["address"] = e.instance->address;
    j["endpoint"] = e.instance->endpoint();
    j["enabled"] = e.instance->enabled;
  }
  return j;
}

nlohmann::json report_json(const std::string& prefix, const in::Report& report, const text::Leases& leases,
                           int64_t now_ms) {
  auto recipes = nlohmann::json::array();
  for (const auto& r : report.recipes) {
    nlohmann::json counts = nlohmann::json::object();
    auto entries = nlohmann::json::array();
    for (const auto& e : r.entries) {
      entries.push_back(entry_json(e, leases));
      counts[in::role_id(e.role)] = in::total(r, e.role);
    }
    if (r.kind == in::Kind::kWorkQueue) {
      // Ready and delayed differ only by this host's clock.
      int64_t delayed = 0;
      for (const auto& e : r.entries) delayed += e.role == in::Role::kItem && e.not_before_ms > now_ms;
      // Of the items read (all of them unless "complete" is false).
      counts["delayed"] = delayed;
      counts["ready"] = in::count(r, in::Role::kItem) - delayed;
      counts[in::role_id(in::Role::kItem)] = in::total(r, in::Role::kItem);
      counts[in::role_id(in::Role::kClaimed)] = in::total(r, in::Role::kClaimed);
      counts[in::role_id(in::Role::kDead)] = in::total(r, in::Role::kDead);
    }
    nlohmann::json j = {{"kind", in::kind_id(r.kind)}, {"name", base64(r.name)}, {"counts", counts}};
    if (r.permits) j["permits"] = *r.permits;
    if (r.value) j["value"] = *r.value;
    j["entries"] = std::move(entries);
    recipes.push_back(std::move(j));
  }
  return {{"prefix", base64(prefix)}, {"revision", report.revision}, {"now", now_ms}, {"recipes", std::move(recipes)}};
}

int run_inspect(Context& ctx, std::string prefix, bool json_alias, bool all) {
  // A path, as `cache` takes it: "/locks" and "/locks/" both mean the key
  // /locks and the keys under /locks/, never /locksmith.
  std::string base = prefix;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string what = "inspect " + prefix;
  Snapshot s = all ? read_at_one_revision(ctx, base, what) : read_summary(ctx, base, what);
  const text::Leases leases = read_leases(ctx, s.kvs, what, all ? 0 : kMaxLeases);
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  int64_t keys = static_cast<int64_t>(s.kvs.size());
  const in::Report report = in::build_report(std::move(s.kvs), s.revision, s.totals);
  for (const auto& r : report.recipes) keys += in::unread(r);
  if (ctx.json(json_alias)) {
    auto j = report_json(prefix, report, leases, now_ms);
    j["complete"] = s.totals.empty() && s.stopped_at.empty();
    if (!s.stopped_at.empty()) j["stopped_at"] = base64(s.stopped_at);
    print_line(dump_json(j));
    return kExitOk;
  }
  if (report.recipes.empty()) {
    print_line(cat("nothing under ", prefix.empty() ? "\"\"" : simple_field(prefix), " at revision ", report.revision));
    return kExitOk;
  }
  const bool stopped = !s.stopped_at.empty();
  print_line(cat(prefix.empty() ? "every key" : simple_field(prefix), " at revision ", report.revision, ": ",
                 stopped ? "at least " : "", keys, keys == 1 ? " key, " : " keys, ", leases.size(),
                 leases.size() == 1 ? " lease" : " leases", " (TTLs read just after)",
                 all ? "" : "; a summary, inspect --all lists every key"));
  for (const auto& line : text::render_text(report, leases, now_ms, all ? text::RenderLimits{} : kSummaryLimits)) {
    print_line(line);
  }
  if (stopped) {
    print_line(cat("stopped at ", simple_field(s.stopped_at), " after ", kMaxLoose,
                   " keys that belong to no collection: inspect a narrower prefix, or --all"));
  }
  return kExitOk;
}

}  // namespace

void add_inspect_commands(Commands& commands) {
  auto prefix = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto all = std::make_shared<bool>(false);
  auto* cmd = commands.root().add_subcommand(
      "inspect",
      "Show the state of the recipes under PREFIX in human terms: holders and waiters with their tokens "
      "and lease TTLs, leaders, queue depths, in-flight work and dead letters, barriers, counters, "
      "services; other keys listed as they are");
  cmd->add_option("prefix", *prefix,
                  "A recipe's name (/locks/orders) or a path above many (/locks): the key PREFIX and the keys "
                  "under PREFIX/; \"\" means every key")
      ->required();
  cmd->add_flag("--json", *json, "Same as -w json")->group("");
  cmd->add_flag("--all", *all,
                "Read and list every key (by default a recipe's many keys are counted and only their head is read "
                "and listed)");
  cmd->footer(
      "Everything is read at one revision, which the output states; each lease's remaining and granted TTL is "
      "asked just after. By default a summary: a recipe's many keys (a queue's items, a lock's waiters, a "
      "service's instances, ...) are counted and only their head is read (the holder and the next waiters by "
      "creation, the oldest item of each producer), at most 10 lines per recipe and 40 recipes; bounded in time "
      "and output whatever the size. --all reads every key (in pages of 1000) and lists each. Recipes are recognized "
      "by their key layouts (docs/cli.md lists the "
      "rules); the Go lock and election layouts are the same, so such a name is shown as \"lock or election\". "
      "Keys that match no layout are listed as transient keys (with a lease) or plain keys.\n\n"
      "With -w json: {\"prefix\":B64,\"revision\":N,\"now\":MS,\"recipes\":[{\"kind\",\"name\":B64,\"counts\","
      "\"entries\":[{\"role\",\"key\":B64,\"value\":B64,\"lease\":{\"id\":HEX,\"ttl\",\"granted_ttl\"},...}]}],"
      "\"complete\":BOOL}; counts are exact, entries are the keys read.\n\n"
      "Exit 0 (also when nothing is there), 1 if etcd failed, 2 on invalid usage.");
  commands.on_run(cmd, [prefix, json, all](Context& ctx) { return run_inspect(ctx, *prefix, *json, *all); });
}

}  // namespace etcd_cli
