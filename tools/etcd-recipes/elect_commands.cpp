// elect, observe: leader election from the shell, in the style of (and
// interoperable with) `etcdctl elect NAME PROPOSAL` and
// `etcdctl elect --listen NAME`.
//
// `elect` holds leadership with the contract of hold.h (a LeaderLatch on a
// session of its own): CMD runs while this process leads, with the leader key
// and the term in its environment; losing leadership gets CMD SIGTERM and
// exit 75. It never re-contests: a script that wants to lead again runs
// `elect` again.

#include <iostream>
#include <memory>
#include <optional>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/election.h"
#include "hold.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

constexpr const char* kLeaderKeyEnv = "ETCD_RECIPES_LEADER_KEY";
constexpr const char* kTermEnv = "ETCD_RECIPES_TERM";

// Leadership: a LeaderLatch that contends once; its term is the Hold.
// Releasing the term resigns; the latch never contends again.
Holdable latch_holdable(etcd::Client client, const std::string& name, const std::string& value,
                        etcd::recipes::RecipeOptions options) {
  auto latch = std::make_shared<etcd::recipes::LeaderLatch>(std::move(client), name, value, std::move(options));
  return Holdable{.acquire = [l = latch.get()](std::optional<etcd::Deadline> deadline,
                                               std::stop_token stop) -> etcd::Result<etcd::recipes::Hold> {
                    try {
                      l->start();
                    } catch (const etcd::Error& e) {
                      return e.status();
                    }
                    auto r = bounded(l->await_leadership(), deadline, std::move(stop)).wait();
                    if (!r.ok()) {
                      (void)l->resign().wait();  // leave the queue; the session's revoke follows
                      return std::move(r).status();
                    }
                    return l->hold();
                  },
                  .recipe = latch};
}

void add_elect(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto value = std::make_shared<std::string>();
  auto* cmd = commands.root().add_subcommand(
      "elect",
      "Campaign for leadership of the election NAME (compatible with `etcdctl elect NAME`), run CMD while leader, "
      "resign when it exits");
  auto value_file = std::make_shared<std::string>();
  cmd->add_option("name", a->name, "The election's name (a key prefix)")->required()->check(name_validator("election"));
  auto* value_option = cmd->add_option("--value", *value,
                                       "This candidate's proposal: what `observe NAME` and `etcdctl elect --listen "
                                       "NAME` show while it leads (default: HOST:PID); - reads it from standard input. At most about "
                                       "512 KiB (the exact limit depends on the name; a larger one exits 2 naming it)");
  cmd->add_option("--file", *value_file, "Read the proposal from this file (any bytes)")->excludes(value_option);
  add_hold_options(cmd, *a, "leadership");
  cmd->footer(hold_footer("leadership", kLeaderKeyEnv, kTermEnv,
                          "the term: the leader key's create revision; it strictly increases from one leader to the "
                          "next, so it serves as a fencing token") +
              "\n\nLeadership is lost when the session's lease expires or is revoked, or when someone deletes the "
              "leader key; `elect` does not contest again (run it again to do so).");
  commands.on_run(cmd, [a, value, value_file, value_option](Context& ctx) {
    std::optional<std::string> given;
    if (value_option->count() > 0) given = *value;
    const std::string proposal = given || !value_file->empty() ? read_value(given, *value_file, "elect --value")
                                                               : etcd::recipes::default_client_id();
    // The library refuses it too, but only once the hold starts: refused here
    // as invalid usage, before anything is written.
    if (const size_t limit = etcd::recipes::max_proposal_bytes(ctx.client(), a->name); proposal.size() > limit) {
      throw UsageError(cat("elect: the proposal is ", proposal.size(), " bytes; a candidate of election ", a->name,
                           " campaigns with at most ", limit,
                           " bytes (a campaign sends its proposal three times in one request, and etcd's default "
                           "--max-request-bytes is 1.5 MiB)"));
    }
    return hold_with_session(ctx, *a, {"elect " + a->name, "leadership", kLeaderKeyEnv, kTermEnv},
                             [&](etcd::Client client, etcd::recipes::RecipeOptions options) {
                               return latch_holdable(std::move(client), a->name, proposal, std::move(options));
                             });
  });
}

struct ObserveArgs {
  std::string name;
  bool once = false;
  bool json = false;
};

// Key and value base64, the lease in hex, as in `kv get -w json`.
nlohmann::json leader_json(const std::optional<etcd::recipes::LeaderInfo>& l) {
  if (!l) return {{"leader", nullptr}};
  return {{"leader",
           {{"key", base64(l->key)}, {"value", base64(l->value)}, {"term", l->term}, {"lease", lease_hex(l->lease)}}}};
}

int observe(Context& ctx, const ObserveArgs& a) {
  const std::string what = "observe " + a.name;
  const bool json = ctx.json(a.json);
  // A first read names the cause (e.g. connection refused) when no member
  // answers; the observer itself would only time out waiting for it.
  {
    etcd::GetOptions options;
    options.prefix = true;
    options.count_only = true;
    check(ctx.client().get(a.name + "/", options).stop_token(ctx.stop()).wait(), what);
  }
  etcd::recipes::LeaderObserver observer(ctx.client(), a.name);
  if (a.once) {
    auto leader = check(observer.leader().timeout(ctx.timeout()).wait(), what);
    if (!leader) {
      std::cerr << kProgram << ": " << what << ": no leader" << std::endl;
      return kExitFailed;
    }
    print_line(json ? dump_json(leader_json(leader)) : leader->value);
    return kExitOk;
  }
  // Plain output prints each new leader value, one simple-format field per
  // line; leaderless moments print nothing (--json shows them as
  // {"leader":null}).
  auto changes = observer.on_change([json](const std::optional<etcd::recipes::LeaderInfo>& l) {
    if (json) {
      print_line(dump_json(leader_json(l)));
    } else if (l) {
      print_line(simple_field(l->value));
    }
  });
  auto errors = observer.on_error(
      [what](const etcd::Status& s) { std::cerr << kProgram << ": " << what << ": " << explain(s) << std::endl; });
  observer.start();
  auto ready = observer.wait_initialized().timeout(ctx.timeout()).stop_token(ctx.stop()).wait();
  if (ctx.stop().stop_requested()) return kExitOk;
  check(std::move(ready), what);
  while (sleep_for(std::chrono::hours(1), ctx.stop())) {
  }
  return kExitOk;
}

void add_observe(Commands& commands) {
  auto a = std::make_shared<ObserveArgs>();
  auto* cmd = commands.root().add_subcommand(
      "observe",
      "Print the value of the leader of the election NAME and each change, until SIGINT/SIGTERM (compatible with "
      "`etcdctl elect --listen NAME`)");
  cmd->add_option("name", a->name, "The election's name (a key prefix)")->required()->check(name_validator("election"));
  cmd->add_flag("--once", a->once, "Print the current leader's value and exit (exit 1 if there is no leader)");
  cmd->add_flag("--json", a->json, "Same as -w json")->group("");
  cmd->footer(
      "The leader is the candidate key under NAME/ with the lowest create revision; its term is that revision. "
      "Changes of the leader, its term or its value are printed as they happen, and after a gap in the watch "
      "(e.g. a compaction while disconnected) the state found by a fresh read is printed if it differs.\n\n"
      "With -w json, one JSON object per change: {\"leader\":{\"key\":B64,\"value\":B64,\"term\":N,\"lease\":HEX}} "
      "or {\"leader\":null}; key and value are base64.\n\n"
      "Exit codes:\n"
      "  0  ended by SIGINT/SIGTERM; with --once: a leader was printed\n"
      "  1  an etcd operation failed; with --once: there is no leader");
  commands.on_run(cmd, [a](Context& ctx) { return observe(ctx, *a); });
}

}  // namespace

void add_election_commands(Commands& commands) {
  add_elect(commands);
  add_observe(commands);
}

}  // namespace etcd_cli
