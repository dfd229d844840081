// inspect PREFIX: the recipes under PREFIX and their state, in human terms
// (etcd/recipes/inspect.h recognizes them, inspect_text.h words them; this
// file reads etcd and prints).

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/inspect.h"
#include "inspect_text.h"
#include "simple_format.h"
#include "summary_reader.h"

namespace etcd_cli {
namespace {

namespace in = etcd::recipes::inspect;
namespace text = etcd_cli::inspect;

// A summary's text: at most this many lines per recipe and recipes.
constexpr text::RenderLimits kSummaryLimits{.lines_per_recipe = 10, .recipes = 40};

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
  const std::string base = prefix_base(prefix);
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
