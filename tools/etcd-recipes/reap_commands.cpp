// reap PREFIX: removes the bookkeeping keys crashed processes left under
// PREFIX (etcd/recipes/reaper.h says which, and why each delete is safe).

#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/reaper.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

struct ReapArgs {
  std::string prefix;
  std::string idle = "10m";
  bool dry_run = false;
};

int run_reap(Context& ctx, const ReapArgs& a) {
  const std::string what = "reap " + a.prefix;
  const etcd::recipes::ReapOptions options{.idle = *parse_duration(a.idle), .dry_run = a.dry_run};
  // The wait is the command's own: no per-call --timeout over it (each
  // request inside still has the client's), only the signals.
  const auto report = check(etcd::recipes::reap(ctx.client(), a.prefix, options).stop_token(ctx.stop()).wait(), what);
  if (ctx.json()) {
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& k : report.keys) {
      nlohmann::json one{{"key", base64(k.key)},
                         {"recipe", base64(k.recipe)},
                         {"kind", etcd::recipes::inspect::kind_id(k.kind)},
                         {"role", etcd::recipes::inspect::role_id(k.role)},
                         {"mod_revision", k.mod_revision},
                         {"reaped", k.reaped}};
      if (!k.reaped) one["kept_because"] = k.kept_because;
      keys.push_back(std::move(one));
    }
    print_line(dump_json({{"revision", report.revision}, {"dry_run", a.dry_run}, {"keys", keys}}));
    return kExitOk;
  }
  const char* verb = a.dry_run ? "would reap" : "reaped";
  for (const auto& k : report.keys) {
    print_line(cat(k.reaped ? verb : "kept", " ", simple_field(k.key), " ", etcd::recipes::inspect::kind_id(k.kind),
                   " ", etcd::recipes::inspect::role_id(k.role), k.reaped ? "" : " (" + k.kept_because + ")"));
  }
  std::cerr << kProgram << ": " << what << ": " << report.reaped() << " of " << report.keys.size()
            << " bookkeeping keys " << verb << std::endl;
  return kExitOk;
}

}  // namespace

void add_reap_commands(Commands& commands) {
  auto a = std::make_shared<ReapArgs>();
  auto* cmd = commands.root().add_subcommand(
      "reap", "Remove the bookkeeping keys under PREFIX that crashed processes left behind and no live one needs");
  cmd->add_option("prefix", a->prefix, "A key prefix (e.g. /app/): every recipe under it")->required();
  cmd->add_option("--idle", a->idle,
                  "How long a queue's producer key or a counter's receipt must stay unchanged before it is removed; "
                  "keep it well above the deadlines of your enqueues and adds")
      ->check(bounded_duration_validator())
      ->capture_default_str();
  cmd->add_flag("--dry-run", a->dry_run, "Report what would be removed; delete nothing");
  cmd->footer(
      "Reads every key under PREFIX (keys only, in pages), finds the queues' NAME/producers/<p> keys, the counters' "
      "NAME/receipts/<r> keys and the semaphores' NAME/permits keys, waits --idle, then removes each with a guarded "
      "delete: a producer key or a receipt only if its mod revision did not move since it was read (a live process "
      "that was idle just writes it again on its next use), a permit count only while the semaphore has no holder "
      "and no waiter. Nothing on a lease, and no item, claim, dead letter, holder, party or value, is ever touched. "
      "Prints one line per key found: `reaped|would reap|kept KEY KIND ROLE [(why kept)]`, and a count on stderr. "
      "-w json: {\"revision\",\"dry_run\",\"keys\":[{\"key\":B64,\"recipe\":B64,\"kind\",\"role\",\"mod_revision\","
      "\"reaped\",\"kept_because\"}]}.\n\n"
      "Exit codes:\n"
      "  0      done (also when nothing was found)\n"
      "  1      an etcd operation failed (the keys removed until then stay removed)\n"
      "  2      invalid usage\n"
      "  128+N  interrupted by signal N while waiting (nothing removed)");
  commands.on_run(cmd, [a](Context& ctx) {
    try {
      return run_reap(ctx, *a);
    } catch (const Failure&) {
      if (ctx.stop().stop_requested()) return kExitSignalBase + stop_signal();
      throw;
    }
  });
}

}  // namespace etcd_cli
