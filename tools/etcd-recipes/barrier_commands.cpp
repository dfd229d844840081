// barrier set / remove / wait: a DistributedBarrier (a gate) and, with
// --parties, a DistributedBarrierWithCount from the shell; barrier enter
// --parties N [-- CMD]: a DistributedDoubleBarrier party that enters, runs
// CMD, and leaves.
//
// The gate outlives `barrier set`: its key NAME lives on the setter's lease
// (revoked when the command exits), but the durable record NAME/set-by keeps
// the gate set until `barrier remove` (include/etcd/recipes/barrier.h).

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/barrier.h"
#include "hold.h"

namespace etcd_cli {
namespace {

struct WaitArgs {
  std::string name;
  std::string wait_timeout;
  bool until_set = false;
  int64_t parties = 0;  // 0: the gate; N: N parties meet
  int ttl = 10;
};

struct EnterArgs {
  std::string name;
  std::string wait_timeout;
  int64_t parties = 0;
  int ttl = 10;
  std::string kill_after = "3s";
  std::vector<std::string> command;
};

constexpr const char* kDoubleBarrierEnv = "ETCD_RECIPES_BARRIER";

void add_name(CLI::App* cmd, std::string& name) {
  cmd->add_option("name", name, "The barrier's name (a key, and the prefix of its other keys)")
      ->required()
      ->check(name_validator("barrier"));
}

void add_set(CLI::App* barrier, Commands& commands) {
  auto name = std::make_shared<std::string>();
  auto* cmd = barrier->add_subcommand("set", "Set (close) the barrier NAME: `barrier wait NAME` blocks until removed");
  add_name(cmd, *name);
  cmd->footer(
      "One transaction. The gate stays set after this command exits, until `barrier remove NAME`: its key NAME "
      "lives on this command's lease (gone when it exits), but NAME/set-by, which has no lease, keeps it set. "
      "Prints nothing; -w json: {\"set\":true|false}.\n\n"
      "Exit codes:\n"
      "  0  set by this command\n"
      "  1  it was set already (it stays set), or an etcd operation failed\n"
      "  2  invalid usage");
  commands.on_run(cmd, [name](Context& ctx) {
    const std::string what = "barrier set " + *name;
    etcd::recipes::DistributedBarrier gate(ctx.client(), *name);
    const bool set = check(gate.set().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
    if (ctx.json()) print_line(dump_json({{"set", set}}));
    if (set) return kExitOk;
    std::cerr << kProgram << ": " << what << ": the barrier was set already (it stays set)" << std::endl;
    return kExitFailed;
  });
}

void add_remove(CLI::App* barrier, Commands& commands) {
  auto name = std::make_shared<std::string>();
  auto* cmd = barrier->add_subcommand("remove", "Remove (open) the barrier NAME, whoever set it: its waiters go on");
  add_name(cmd, *name);
  cmd->footer(
      "One transaction deleting NAME and NAME/set-by. Removing a barrier that is open already is not an error (the "
      "gate is open either way): it is said on stderr. Prints nothing; -w json: {\"removed\":true|false} (false: it "
      "was open).\n\n"
      "Exit codes:\n"
      "  0  the barrier is open (removed now, or open already)\n"
      "  1  an etcd operation failed\n"
      "  2  invalid usage");
  commands.on_run(cmd, [name](Context& ctx) {
    const std::string what = "barrier remove " + *name;
    etcd::recipes::DistributedBarrier gate(ctx.client(), *name);
    const bool removed = check(gate.remove().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
    if (ctx.json()) print_line(dump_json({{"removed", removed}}));
    if (!removed) std::cerr << kProgram << ": " << what << ": the barrier was not set (it is open)" << std::endl;
    return kExitOk;
  });
}

// The wait ended without passing the barrier: a signal, --timeout, or a failure.
int gave_up(Context& ctx, const std::string& wait_timeout, const std::string& what, const std::string& noun,
            etcd::Status st, std::optional<etcd::Deadline> give_up) {
  if (ctx.stop().stop_requested()) return kExitSignalBase + stop_signal();
  if (give_up && etcd::Clock::now() >= *give_up && st.code() == etcd::StatusCode::kDeadlineExceeded) {
    std::cerr << kProgram << ": " << what << ": timed out after " << wait_timeout << " waiting for " << noun
              << std::endl;
    return kExitTimedOut;
  }
  throw Failure(what, std::move(st));
}

int wait_gate(Context& ctx, const WaitArgs& a, std::optional<etcd::Deadline> give_up) {
  const std::string what = "barrier wait " + a.name;
  // An unreachable or refusing etcd is an error to report at once (exit 1),
  // not a wait until --timeout: one read within the per-call --timeout.
  (void)check(ctx.client()
                  .get(a.name, etcd::GetOptions{.count_only = true})
                  .timeout(ctx.timeout())
                  .stop_token(ctx.stop())
                  .wait(),
              what);
  etcd::recipes::DistributedBarrier gate(ctx.client(), a.name, etcd::recipes::RecipeOptions(),
                                         etcd::recipes::GateOptions{.wait_until_set = a.until_set});
  auto r = bounded(gate.wait(), give_up, ctx.stop()).wait();
  if (r.ok()) return kExitOk;
  return gave_up(ctx, a.wait_timeout, what,
                 a.until_set ? "the barrier to be set and removed" : "the barrier to be removed", std::move(r).status(),
                 give_up);
}

int wait_parties(Context& ctx, const WaitArgs& a, std::optional<etcd::Deadline> give_up) {
  const std::string what = cat("barrier wait ", a.name, " --parties ", a.parties);
  etcd::recipes::RecipeOptions options;
  options.session_ttl = std::chrono::seconds(a.ttl);
  etcd::recipes::DistributedBarrierWithCount rendezvous(ctx.client(), a.name, a.parties, std::move(options));
  // As for the gate: etcd must answer now (one count read).
  (void)check(rendezvous.waiting().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
  // A party that gives up (--timeout, a signal) leaves before the call ends:
  // it no longer counts. Its lease is revoked as the object closes.
  auto r = bounded(rendezvous.wait(), give_up, ctx.stop()).wait();
  if (r.ok()) return kExitOk;
  return gave_up(ctx, a.wait_timeout, what, cat(a.parties, " parties (this one left)"), std::move(r).status(), give_up);
}

void add_wait(CLI::App* barrier, Commands& commands) {
  auto a = std::make_shared<WaitArgs>();
  auto* cmd = barrier->add_subcommand(
      "wait", "Wait until the barrier NAME is removed, or with --parties N until N parties wait on NAME");
  add_name(cmd, a->name);
  cmd->add_option("--timeout", a->wait_timeout,
                  "Give up waiting after this long (exit 3), e.g. 500ms, 30s (the per-call --timeout goes before the "
                  "command name)")
      ->check(duration_validator());
  auto* until_set = cmd->add_flag("--until-set", a->until_set,
                                  "A barrier that is open (never set, or removed already) does not let this wait "
                                  "through: wait until it is set and then removed");
  auto* parties =
      cmd->add_option("--parties", a->parties,
                      "N parties meet: return once N processes (this one included) wait on NAME with --parties N; no "
                      "setter, no remove")
          ->check(int_range(1, INT32_MAX));
  auto* ttl = cmd->add_option("--ttl", a->ttl,
                              "With --parties: TTL in seconds of the lease this party's key lives on, i.e. how long "
                              "it still counts when this process dies or is cut off from etcd")
                  ->check(int_range(1, INT32_MAX))
                  ->capture_default_str();
  until_set->excludes(parties);
  ttl->needs(parties);
  cmd->footer(
      "Without --parties: returns at once if the barrier is open (never set, or removed), unless --until-set; "
      "otherwise when someone runs `barrier remove NAME`. A setter that died or exited does not open it.\n\n"
      "With --parties N: this process arrives as one party (a key under NAME/parties/ on a lease of its own) and "
      "returns once N parties are waiting; all of them are released together. A party that gives up (--timeout, "
      "SIGINT/SIGTERM) or dies stops counting: its key is deleted (or expires with its lease after --ttl). Every "
      "party must give the same N.\n\n"
      "Prints nothing.\n\n"
      "Exit codes:\n"
      "  0      the barrier let this process through\n"
      "  1      an etcd operation failed\n"
      "  2      invalid usage\n"
      "  3      --timeout expired while waiting (with --parties: this party left, and does not count)\n"
      "  128+N  interrupted by signal N while waiting (with --parties: this party left)");
  commands.on_run(cmd, [a](Context& ctx) {
    const std::optional<etcd::Deadline> give_up = wait_deadline(a->wait_timeout);
    return a->parties > 0 ? wait_parties(ctx, *a, give_up) : wait_gate(ctx, *a, give_up);
  });
}

int enter_and_leave(Context& ctx, const EnterArgs& a) {
  const std::string what = cat("barrier enter ", a.name, " --parties ", a.parties);
  auto complain = [&](const std::string& text) { std::cerr << kProgram << ": " << what << ": " << text << std::endl; };
  if (auto code = refuse_unrunnable(a.command, complain, "this party did not enter")) return *code;
  const std::optional<etcd::Deadline> give_up = wait_deadline(a.wait_timeout);
  // An unreachable or refusing etcd is an error to report at once (exit 1).
  (void)check(ctx.client()
                  .get(a.name, etcd::GetOptions{.count_only = true})
                  .timeout(ctx.timeout())
                  .stop_token(ctx.stop())
                  .wait(),
              what);
  etcd::recipes::RecipeOptions options;
  options.session_ttl = std::chrono::seconds(a.ttl);
  etcd::recipes::DistributedDoubleBarrier barrier(ctx.client(), a.name, a.parties, std::move(options));
  // A party that gives up entering withdraws (its key is deleted).
  auto entered = bounded(barrier.enter(), give_up, ctx.stop()).wait();
  if (!entered.ok()) {
    return gave_up(ctx, a.wait_timeout, what, cat(a.parties, " parties to enter (this one withdrew)"),
                   std::move(entered).status(), give_up);
  }
  // Leaving deletes this party's key whatever happens, then waits for the
  // others (bounded by --timeout and the signals as the entry was).
  std::optional<etcd::Status> left_badly;
  auto leave = [&] {
    auto left = bounded(barrier.leave(), give_up, ctx.stop()).wait();
    if (!left.ok()) left_badly = std::move(left).status();
  };
  int code = kExitOk;
  if (a.command.empty()) {
    leave();
  } else {
    code = run_while_present(ctx, a.command, {cat(kDoubleBarrierEnv, "=", a.name)}, a.kill_after, complain, leave);
  }
  if (code != kExitOk || !left_badly) return code;
  return gave_up(ctx, a.wait_timeout, what, "every party to leave (this one left)", std::move(*left_badly), give_up);
}

void add_enter(CLI::App* barrier, Commands& commands) {
  auto a = std::make_shared<EnterArgs>();
  auto* cmd = barrier->add_subcommand(
      "enter", "Enter the double barrier NAME with N parties, run CMD, then leave together with the others");
  add_name(cmd, a->name);
  cmd->add_option("--parties", a->parties, "N: entering waits for N parties, leaving for all of them to leave")
      ->required()
      ->check(int_range(1, INT32_MAX));
  cmd->add_option("--timeout", a->wait_timeout,
                  "Give up waiting (to enter, or for the others to leave) after this long from the start (exit 3), "
                  "e.g. 500ms, 30s (the per-call --timeout goes before the command name)")
      ->check(duration_validator());
  add_presence_options(cmd, a->ttl, a->kill_after, "party key");
  cmd->add_option("command", a->command,
                  "Run CMD [ARGS...] once N parties are in, and leave when it exits (put -- before it); without it, "
                  "leave as soon as all have entered");
  cmd->footer(
      cat("This process is one party: a key under NAME/parties/ on a lease of its own (--ttl). It waits until N "
          "parties are in (every party must give the same N), runs CMD with ",
          kDoubleBarrierEnv,
          "=NAME in its environment (in a process group of its own; SIGINT/SIGTERM/SIGHUP are passed on to it), "
          "then leaves: its key is deleted and it waits until every party of the round has left. A party that dies "
          "leaves by its lease (after --ttl). Leaving is this one process's exit from the round: a party is a "
          "process, so there is no separate `leave` command.\n\n"
          "Prints nothing.\n\n"
          "Exit codes:\n"
          "  (CMD's)   with CMD: CMD's exit status when it is not 0 (128+N if signal N killed it)\n"
          "  0         entered and left with the others (and CMD, if any, exited 0)\n"
          "  1         an etcd operation failed\n"
          "  2         invalid usage\n"
          "  3         --timeout expired while waiting to enter (this party withdrew) or to leave (it left)\n"
          "  126, 127  CMD could not be run, was not found (this party did not enter)\n"
          "  128+N     interrupted by signal N while waiting (this party withdrew or left)"));
  commands.on_run(cmd, [a](Context& ctx) { return enter_and_leave(ctx, *a); });
}

}  // namespace

void add_barrier_commands(Commands& commands) {
  auto* barrier = commands.root().add_subcommand(
      "barrier",
      "A barrier: a gate that `set` closes and `remove` opens, N parties that meet, or N parties that enter and leave "
      "together: set, remove, wait, enter");
  add_set(barrier, commands);
  add_remove(barrier, commands);
  add_wait(barrier, commands);
  add_enter(barrier, commands);
}

}  // namespace etcd_cli
