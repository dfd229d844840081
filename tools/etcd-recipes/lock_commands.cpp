// lock, semaphore, rwlock: hold a lock (or a permit) while a command runs,
// in the style of `etcdctl lock NAME [CMD]`.
//
// All three share one contract, implemented once by run_holding() over the
// small Hold interface:
//   - the hold lives on a session (a lease) of its own with --ttl;
//   - --timeout bounds the wait (exit 3, CMD not run);
//   - SIGINT/SIGTERM while waiting gives up and revokes the session's lease,
//     so no key is left behind (exit 128+N);
//   - CMD runs with stdio inherited and the fencing token and key in its
//     environment; a signal to this process is forwarded to CMD; after CMD
//     exits the hold is released and CMD's status is the exit status;
//   - a hold lost while CMD runs gets CMD SIGTERM, SIGKILL after a grace
//     period, and exit 75;
//   - without CMD the key and fencing token are printed and the hold is kept
//     until a signal (exit 0) or its loss (exit 75).

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

#include "commands.h"
#include "common.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "etcd/session.h"

extern char** environ;

namespace etcd_cli {
namespace {

using namespace std::chrono_literals;

constexpr int kExitTimedOut = 3;
constexpr int kExitHoldLost = 75;  // EX_TEMPFAIL: the work may be retried
constexpr int kExitCannotRun = 126;
constexpr int kExitNotFound = 127;
// After the hold is lost, CMD gets SIGTERM and this long to stop before SIGKILL.
constexpr auto kTermGrace = 3s;

constexpr const char* kTokenEnv = "ETCD_RECIPES_FENCING_TOKEN";
constexpr const char* kLockKeyEnv = "ETCD_RECIPES_LOCK_KEY";
constexpr const char* kPermitKeyEnv = "ETCD_RECIPES_PERMIT_KEY";

// One hold on something exclusive (or counted): a lock, a permit, a read or
// write lock. The recipes differ; what the command needs of them does not.
class Hold {
 public:
  virtual ~Hold() = default;
  // Waits until held, until `deadline` (if any) or a stop on `stop`.
  virtual etcd::Result<void> acquire(std::optional<etcd::Deadline> deadline, std::stop_token stop) = 0;
  // True if the hold was still intact when released.
  virtual etcd::Result<bool> release() = 0;
  virtual int64_t fencing_token() const = 0;
  virtual std::string key() const = 0;
  // Requested when the hold is lost (or released).
  virtual std::stop_token hold_token() const = 0;
  virtual etcd::Subscription on_lost(std::function<void(const etcd::Status&)> listener) = 0;
};

template <class T>
etcd::Call<T> bounded(etcd::Call<T> call, std::optional<etcd::Deadline> deadline, std::stop_token stop) {
  call.stop_token(std::move(stop));
  if (deadline) call.deadline(*deadline);
  return call;
}

// A DistributedMutex, or one side of a DistributedReadWriteLock: the same
// surface. `owner` keeps the recipe object alive.
template <class Lock>
class LockHold final : public Hold {
 public:
  LockHold(std::shared_ptr<void> owner, Lock& lock) : owner_(std::move(owner)), lock_(lock) {}
  etcd::Result<void> acquire(std::optional<etcd::Deadline> deadline, std::stop_token stop) override {
    return bounded(lock_.acquire(), deadline, std::move(stop)).wait();
  }
  etcd::Result<bool> release() override { return lock_.release().wait(); }
  int64_t fencing_token() const override { return lock_.fencing_token(); }
  std::string key() const override { return lock_.key(); }
  std::stop_token hold_token() const override { return lock_.hold_token(); }
  etcd::Subscription on_lost(std::function<void(const etcd::Status&)> listener) override {
    return lock_.on_lost(std::move(listener));
  }

 private:
  std::shared_ptr<void> owner_;
  Lock& lock_;
};

class PermitHold final : public Hold {
 public:
  PermitHold(etcd::Client client, std::string name, int permits, etcd::recipes::RecipeOptions options)
      : semaphore_(std::move(client), std::move(name), permits, std::move(options)) {}
  etcd::Result<void> acquire(std::optional<etcd::Deadline> deadline, std::stop_token stop) override {
    auto r = bounded(semaphore_.acquire(), deadline, std::move(stop)).wait();
    if (!r.ok()) return std::move(r).status();
    permit_ = std::move(r).value();
    return {};
  }
  etcd::Result<bool> release() override { return permit_.release_async().wait(); }
  int64_t fencing_token() const override { return permit_.fencing_token(); }
  std::string key() const override { return permit_.key(); }
  std::stop_token hold_token() const override { return permit_.hold_token(); }
  etcd::Subscription on_lost(std::function<void(const etcd::Status&)> listener) override {
    return permit_.on_lost(std::move(listener));
  }

 private:
  etcd::recipes::DistributedSemaphore semaphore_;
  etcd::recipes::DistributedSemaphore::Permit permit_;
};

// The options every hold command takes.
struct HoldArgs {
  std::string name;
  int ttl = 10;
  std::string wait_timeout;
  std::vector<std::string> command;
};

// What differs between the commands, for messages and CMD's environment.
struct HoldKind {
  std::string what;     // "lock NAME": the prefix of messages
  std::string noun;     // "the lock", "a permit"
  std::string key_env;  // the environment variable with the key
};

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

std::string hold_footer(const std::string& noun, const std::string& key_env) {
  return "CMD runs with stdin/stdout/stderr inherited and, in its environment, " + std::string(kTokenEnv) +
         " (the fencing token: it strictly increases from one holder to the next) and " + key_env +
         ". SIGINT/SIGTERM/SIGHUP to etcd-recipes are forwarded to CMD; " + noun +
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
  const std::vector<std::string> env = {cat(kTokenEnv, "=", token), cat(kind.key_env, "=", key)};
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

// Runs `make_hold` on a fresh session of --ttl and holds it; the session is
// ended (its lease revoked) before this returns.
template <class MakeHold>
int hold_with_session(Context& ctx, const HoldArgs& a, const HoldKind& kind, MakeHold make_hold) {
  auto session = etcd::Session::create(ctx.client(), etcd::SessionOptions{.ttl = std::chrono::seconds(a.ttl)});
  etcd::recipes::RecipeOptions options;
  options.session = session;
  std::unique_ptr<Hold> hold = make_hold(ctx.client(), std::move(options));
  return run_holding(ctx, a, kind, *hold, *session);
}

void add_lock(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto* cmd = commands.root().add_subcommand(
      "lock",
      "Acquire the distributed lock NAME (compatible with `etcdctl lock NAME`), run CMD while holding it, release it");
  cmd->add_option("name", a->name, "The lock's name (a key prefix)")->required();
  add_hold_options(cmd, *a, "the lock");
  cmd->footer(hold_footer("the lock", kLockKeyEnv));
  commands.on_run(cmd, [a](Context& ctx) {
    return hold_with_session(
        ctx, *a, {"lock " + a->name, "the lock", kLockKeyEnv},
        [&](etcd::Client client, etcd::recipes::RecipeOptions options) -> std::unique_ptr<Hold> {
          auto mutex =
              std::make_shared<etcd::recipes::DistributedMutex>(std::move(client), a->name, std::move(options));
          auto& lock = *mutex;
          return std::make_unique<LockHold<etcd::recipes::DistributedMutex>>(std::move(mutex), lock);
        });
  });
}

void add_semaphore(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto permits = std::make_shared<int>(0);
  auto* cmd = commands.root().add_subcommand(
      "semaphore",
      "Acquire one of the N permits of the distributed semaphore NAME, run CMD while holding it, release it");
  cmd->add_option("name", a->name, "The semaphore's name (a key prefix)")->required();
  cmd->add_option("permits", *permits, "N: how many holders at most; every user of NAME must give the same N")
      ->required()
      ->check(CLI::PositiveNumber);
  add_hold_options(cmd, *a, "a permit");
  cmd->footer(hold_footer("the permit", kPermitKeyEnv) +
              "\n\nN is stored once in NAME/permits (without a lease, it stays); a different N is refused (exit 1) "
              "until that key is deleted while nobody uses the semaphore.");
  commands.on_run(cmd, [a, permits](Context& ctx) {
    return hold_with_session(ctx, *a, {"semaphore " + a->name, "the permit", kPermitKeyEnv},
                             [&](etcd::Client client, etcd::recipes::RecipeOptions options) -> std::unique_ptr<Hold> {
                               return std::make_unique<PermitHold>(std::move(client), a->name, *permits,
                                                                   std::move(options));
                             });
  });
}

void add_rwlock(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto mode = std::make_shared<std::string>();
  auto* cmd = commands.root().add_subcommand(
      "rwlock",
      "Acquire the distributed read/write lock NAME for reading (shared) or writing (exclusive; queued writers go "
      "before later readers), run CMD while holding it, release it");
  cmd->add_option("name", a->name, "The lock's name (a key prefix)")->required();
  cmd->add_option("mode", *mode, "read or write")->required()->check(CLI::IsMember({"read", "write"}));
  add_hold_options(cmd, *a, "the lock");
  cmd->footer(hold_footer("the lock", kLockKeyEnv) +
              "\n\nA read lock's fencing token is shared by concurrent readers; it is greater than the token of every "
              "write lock released before it and smaller than that of every later one.");
  commands.on_run(cmd, [a, mode](Context& ctx) {
    const bool write = *mode == "write";
    return hold_with_session(
        ctx, *a, {"rwlock " + a->name + " " + *mode, cat("the ", *mode, " lock"), kLockKeyEnv},
        [&](etcd::Client client, etcd::recipes::RecipeOptions options) -> std::unique_ptr<Hold> {
          auto rwlock =
              std::make_shared<etcd::recipes::DistributedReadWriteLock>(std::move(client), a->name, std::move(options));
          auto& side = write ? rwlock->write_lock() : rwlock->read_lock();
          return std::make_unique<LockHold<etcd::recipes::DistributedReadWriteLock::LockView>>(std::move(rwlock), side);
        });
  });
}

}  // namespace

void add_lock_commands(Commands& commands) {
  add_lock(commands);
  add_semaphore(commands);
  add_rwlock(commands);
}

}  // namespace etcd_cli
