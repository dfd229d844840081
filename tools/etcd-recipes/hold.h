// Holding something while a command runs: the contract shared by `lock`,
// `semaphore`, `rwlock` and `elect`, implemented once by run_holding() over
// the small Hold interface:
//   - the hold lives on a session (a lease) of its own with --ttl;
//   - --timeout bounds the wait (exit 3, CMD not run);
//   - SIGINT/SIGTERM while waiting gives up and revokes the session's lease,
//     so no key is left behind (exit 128+N);
//   - CMD runs with stdio inherited and the token and key in its
//     environment, in a process group of its own (CommandGroup, process.h);
//     a signal to this process is passed on to that group once; after CMD
//     exits, what it left in its group is stopped, then the hold is
//     released and CMD's status is the exit status;
//   - a hold lost while CMD runs gets CMD's group SIGTERM, SIGKILL after
//     --kill-after, and exit 75 once the group is gone;
//   - without CMD the key and token are printed and the hold is kept until a
//     signal (exit 0) or its loss (exit 75).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/multi_lock.h"
#include "etcd/recipes/recipe.h"
#include "etcd/session.h"
#include "process.h"

namespace etcd_cli {

inline constexpr int kExitTimedOut = 3;
inline constexpr int kExitHoldLost = 75;  // EX_TEMPFAIL: the work may be retried
inline constexpr int kExitCannotRun = 126;
inline constexpr int kExitNotFound = 127;

inline constexpr const char* kTokenEnv = "ETCD_RECIPES_FENCING_TOKEN";

// What a hold command holds: the library's etcd::recipes::Hold (a lock, a
// permit, a side of a read-write lock, a leader's term — the same key, token,
// stop_token, on_lost and release for all), and how to get it.
struct Holdable {
  // Waits until held, until `deadline` (if any) or a stop on `stop`.
  std::function<etcd::Result<etcd::recipes::Hold>(std::optional<etcd::Deadline> deadline, std::stop_token stop)>
      acquire;
  // Keeps the recipe object alive while the hold is used.
  std::shared_ptr<void> recipe;
  // Set instead of `acquire` for several names held as one (`lock A B C`):
  // CMD gets every name's key and token (hold.cpp).
  std::function<etcd::Result<etcd::recipes::MultiHold>(std::optional<etcd::Deadline> deadline, std::stop_token stop)>
      acquire_multi{};
};

template <class T>
etcd::Call<T> bounded(etcd::Call<T> call, std::optional<etcd::Deadline> deadline, std::stop_token stop) {
  call.stop_token(std::move(stop));
  if (deadline) call.deadline(*deadline);
  return call;
}

// The options every hold command takes.
struct HoldArgs {
  std::string name;
  int ttl = 10;
  std::string wait_timeout;
  std::string kill_after = "3s";  // --kill-after
  std::vector<std::string> command;
  // `lock --release-on-request`: a release request (DistributedMutex::
  // request_release) stops CMD as a loss would (SIGTERM, SIGKILL after
  // --kill-after), then the lock is released and CMD's status is the exit
  // status; without CMD the lock is released at once (exit 0).
  bool release_on_request = false;
};

// What differs between the commands, for messages and CMD's environment.
struct HoldKind {
  std::string what;     // "lock NAME": the prefix of messages
  std::string noun;     // "the lock", "a permit"
  std::string key_env;  // the environment variable with the key
  // The environment variable with the token (fencing token, term).
  std::string token_env = kTokenEnv;
};

void add_hold_options(CLI::App* cmd, HoldArgs& a, const std::string& noun);
// `token_meaning` explains what the token in `token_env` is.
std::string hold_footer(
    const std::string& noun, const std::string& key_env, const std::string& token_env = kTokenEnv,
    const std::string& token_meaning = "the fencing token: it strictly increases from one holder to the next");
int run_holding(Context& ctx, const HoldArgs& a, const HoldKind& kind, Holdable& holdable, etcd::Session& session);

// Before anything is taken for CMD (a hold, a key, a work item): whether
// CMD can be run (found in PATH, executable). nullopt if it can; else the
// exit code (127 not found, 126 not runnable), after saying so through
// `complain` with `consequence` ("nothing was taken").
std::optional<int> refuse_unrunnable(const std::vector<std::string>& command,
                                     const std::function<void(const std::string&)>& complain,
                                     const std::string& consequence);

// How supervise() watches a started CMD.
struct SuperviseOptions {
  // The loss of what CMD runs under (a hold, a work item's claim): CMD's
  // group gets SIGTERM, then SIGKILL after kill_after.
  std::stop_token lost{};
  std::chrono::milliseconds kill_after{3000};
  std::string kill_after_text = "3s";  // as the user gave it, for messages
  // Called right after the loss's SIGTERM was sent (null: say nothing).
  std::function<void()> on_lost{};
  // Reports a SIGKILL and processes CMD left behind in its group.
  std::function<void(const std::string&)> complain{};
};

// What supervise() saw.
struct Supervised {
  int status = 0;          // CMD's exit status as a shell reports it (128+N: signal N)
  bool lost = false;       // `lost` was requested while CMD ran: its group got SIGTERM
  bool signalled = false;  // a stop signal (ctx.stop()) was passed on to its group
};

// The runner of every CMD the tool protects (holds, work items): returns
// once CMD (started in `cmd`) has exited and nothing of its group is left.
// A stop signal is passed on to the group once, SIGKILL following after
// kill_after; the loss gets the group SIGTERM, SIGKILL after kill_after;
// what CMD leaves in its group is stopped before this returns. A second
// signal SIGKILLs the group (set_forced_exit_group) while it may exist.
Supervised supervise(Context& ctx, CommandGroup& cmd, const SuperviseOptions& options);

// Runs CMD (`command`, with `env` added) while something that heals — a
// transient key, a service registration — exists, or, without a command,
// waits for SIGINT/SIGTERM; `remove` takes it away afterwards, whatever
// happened (never cut short by the stop signal: that is exactly when it
// must still be done). Its loss does not stop CMD: it is re-created where
// free, and the caller's listeners say so. Returns the exit status:
// CMD's, 0 after a signal without CMD, 126/127 when CMD could not run,
// 128+N for a signal before CMD started.
// --ttl (of the lease `what` lives on) and --kill-after, as
// run_while_present's callers take them.
void add_presence_options(CLI::App* cmd, int& ttl, std::string& kill_after, const std::string& what);

int run_while_present(Context& ctx, const std::vector<std::string>& command, const std::vector<std::string>& env,
                      const std::string& kill_after, const std::function<void(const std::string&)>& complain,
                      const std::function<void()>& remove);

// Runs `make` on a fresh session of --ttl and holds what it gives; the
// session is ended (its lease revoked) before this returns.
template <class Make>
int hold_with_session(Context& ctx, const HoldArgs& a, const HoldKind& kind, Make make) {
  auto session = etcd::Session::create(ctx.client(), etcd::SessionOptions{.ttl = std::chrono::seconds(a.ttl)});
  etcd::recipes::RecipeOptions options;
  options.session = session;
  Holdable holdable = make(ctx.client(), std::move(options));
  return run_holding(ctx, a, kind, holdable, *session);
}

}  // namespace etcd_cli
