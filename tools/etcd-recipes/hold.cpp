// run_holding() and its helpers: see hold.h.
#include "hold.h"

#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

extern char** environ;

namespace etcd_cli {
namespace {

using namespace std::chrono_literals;

// After the hold is lost, CMD gets SIGTERM and this long to stop before SIGKILL.
constexpr auto kTermGrace = 3s;

// Blocks until `a` or `b` is requested.
void wait_either(std::stop_token a, std::stop_token b) {
  std::mutex m;
  std::condition_variable_any cv;
  std::stop_callback wake(b, [&] {
    std::lock_guard lock(m);
    cv.notify_all();
  });
  std::unique_lock lock(m);
  cv.wait(lock, a, [&] { return b.stop_requested(); });
}

// The child's exit status as a shell reports it; nullopt while it runs.
std::optional<int> try_reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r < 0) return kExitFailed;  // cannot happen for our own child
  if (WIFSIGNALED(status)) return kExitSignalBase + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// Starts argv with stdio inherited and `env` added to our environment.
// Returns 0 and sets `pid`, or the errno of the failure.
int spawn_inheriting(const std::vector<std::string>& argv, const std::vector<std::string>& env, pid_t& pid) {
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const auto& ours : env) {
      const auto name = std::string_view(ours).substr(0, ours.find('=') + 1);
      replaced = replaced || entry.starts_with(name);
    }
    if (!replaced) envp.push_back(*e);
  }
  for (const auto& ours : env) envp.push_back(const_cast<char*>(ours.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // Our SIGINT/SIGTERM/SIGHUP handlers reset to the default on exec; what
  // the parent ignored (nohup) stays ignored. SIGPIPE is reset explicitly
  // (the client library may ignore it), and no signal starts blocked.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = ::posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  return rc;
}

// The status the hold was lost with, set from the client's executor.
class LossReport {
 public:
  void set(const etcd::Status& status) {
    std::lock_guard lock(mutex_);
    if (!status_) status_ = status;
  }
  std::string describe() const {
    std::lock_guard lock(mutex_);
    return status_ ? status_->to_string() : std::string("its session's lease is gone");
  }

 private:
  mutable std::mutex mutex_;
  std::optional<etcd::Status> status_;
};

}  // namespace

void add_hold_options(CLI::App* cmd, HoldArgs& a, const std::string& noun) {
  cmd->add_option("--ttl", a.ttl,
                  "TTL in seconds of the lease that carries the hold: how long " + noun +
                      " outlives this process when it dies or is cut off from etcd")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--timeout", a.wait_timeout,
                  "Give up waiting for " + noun +
                      " after this long (exit 3), e.g. 500ms, 30s (the per-call --timeout goes before the command "
                      "name)")
      ->check(duration_validator());
  cmd->add_option("command", a.command,
                  "Run CMD [ARGS...] while holding " + noun +
                      " (put -- before it); without it, print the key and the fencing token and hold until "
                      "SIGINT/SIGTERM");
}

std::string hold_footer(const std::string& noun, const std::string& key_env, const std::string& token_env,
                        const std::string& token_meaning) {
  return "CMD runs with stdin/stdout/stderr inherited and, in its environment, " + token_env + " (" + token_meaning +
         ") and " + key_env + ". SIGINT/SIGTERM/SIGHUP to etcd-recipes are forwarded to CMD; " + noun +
         " is released when CMD exits.\n\n"
         "Exit codes:\n"
         "  (CMD's)   with CMD: CMD's exit status (128+N if signal N killed it)\n"
         "  0         without CMD: ended by SIGINT/SIGTERM, " +
         noun +
         " released\n"
         "  1         an etcd operation failed\n"
         "  3         --timeout expired while waiting; CMD did not run\n"
         "  75        " +
         noun + " was lost (lease expired or revoked): CMD got SIGTERM, SIGKILL " +
         std::to_string(std::chrono::seconds(kTermGrace).count()) +
         " s later\n"
         "  126, 127  CMD could not be run, was not found\n"
         "  128+N     interrupted by signal N while waiting; nothing is left behind";
}

int run_holding(Context& ctx, const HoldArgs& a, const HoldKind& kind, Hold& hold, etcd::Session& session) {
  auto complain = [&](const std::string& text) {
    std::cerr << kProgram << ": " << kind.what << ": " << text << std::endl;
  };
  // Whatever happens, end the session: revoking its lease deletes every key
  // the hold created, released or not. Never with ctx.stop(): after a
  // signal this is exactly the work that must still be done.
  struct SessionCloser {
    etcd::Session& session;
    std::chrono::milliseconds timeout;
    ~SessionCloser() { (void)session.close().timeout(timeout).wait(); }
  } closer{session, ctx.timeout()};

  // --- wait
  std::optional<etcd::Deadline> give_up;
  if (!a.wait_timeout.empty()) give_up = etcd::Clock::now() + *parse_duration(a.wait_timeout);
  if (auto r = hold.acquire(give_up, ctx.stop()); !r.ok()) {
    if (ctx.stop().stop_requested()) return kExitSignalBase + stop_signal();
    if (give_up && etcd::Clock::now() >= *give_up && r.status().code() == etcd::StatusCode::kDeadlineExceeded) {
      complain(cat("timed out after ", a.wait_timeout, " waiting for ", kind.noun,
                   a.command.empty() ? "" : "; the command was not run"));
      return kExitTimedOut;
    }
    throw Failure(kind.what, std::move(r).status());
  }

  // --- held
  const int64_t token = hold.fencing_token();
  const std::string key = hold.key();
  const std::stop_token held = hold.hold_token();
  auto loss = std::make_shared<LossReport>();
  auto lost_sub = hold.on_lost([loss](const etcd::Status& why) { loss->set(why); });
  auto release = [&]() -> int {
    auto r = hold.release();
    if (!r.ok()) {
      // The lease is revoked next, which frees the hold all the same.
      complain(cat("releasing ", kind.noun, ": ", r.status().to_string()));
      return kExitOk;
    }
    if (!*r) {
      complain(cat(kind.noun, " had been lost before it was released (", loss->describe(), ")"));
      return kExitHoldLost;
    }
    return kExitOk;
  };

  if (a.command.empty()) {
    print_line(key);
    print_line(std::to_string(token));
    wait_either(ctx.stop(), held);
    if (held.stop_requested()) {
      complain(cat(kind.noun, " was lost: ", loss->describe()));
      return kExitHoldLost;
    }
    return release();
  }

  // A signal that came as the wait ended: do not start what would be
  // interrupted at once.
  if (ctx.stop().stop_requested()) {
    (void)release();
    return kExitSignalBase + stop_signal();
  }
  pid_t pid = -1;
  const std::vector<std::string> env = {cat(kind.token_env, "=", token), cat(kind.key_env, "=", key)};
  if (int err = spawn_inheriting(a.command, env, pid); err != 0) {
    (void)release();
    complain(cat("cannot run ", a.command.front(), ": ", std::strerror(err)));
    return err == ENOENT ? kExitNotFound : kExitCannotRun;
  }

  // Polled: the three things to wait for (CMD's exit, a signal, the loss)
  // have no common wait primitive, and 20 ms is quick enough for all.
  bool forwarded = false;
  std::optional<etcd::Deadline> kill_at;
  std::optional<int> status;
  while (!(status = try_reap(pid))) {
    if (!forwarded && ctx.stop().stop_requested()) {
      forwarded = true;
      ::kill(pid, stop_signal());
    }
    if (!kill_at && held.stop_requested()) {
      complain(cat(kind.noun, " was lost (", loss->describe(), "): sending SIGTERM to ", a.command.front(), " (pid ",
                   pid, ")"));
      ::kill(pid, SIGTERM);
      kill_at = etcd::Clock::now() + kTermGrace;
    } else if (kill_at && etcd::Clock::now() >= *kill_at) {
      complain(cat(a.command.front(), " (pid ", pid, ") still running ", std::chrono::seconds(kTermGrace).count(),
                   " s after SIGTERM: sending SIGKILL"));
      ::kill(pid, SIGKILL);
      kill_at = etcd::Deadline::max();
    }
    std::this_thread::sleep_for(20ms);
  }
  if (kill_at) return kExitHoldLost;
  const int released = release();
  return released != kExitOk ? released : *status;
}

}  // namespace etcd_cli
