// run_holding() and its helpers: see hold.h.
#include "hold.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <system_error>

#include "process.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

using namespace std::chrono_literals;

// Wakes the run loop from other threads (the signal thread, the client's
// executor): an eventfd that poll() waits on with CMD's exit.
class Wakeup {
 public:
  Wakeup() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~Wakeup() { ::close(fd_); }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  int fd() const noexcept { return fd_; }
  void notify() const noexcept {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
  }
  void clear() const noexcept {
    uint64_t value;
    [[maybe_unused]] auto n = ::read(fd_, &value, sizeof value);
  }

 private:
  int fd_;
};

// Milliseconds until `at`, for poll(): -1 for never, rounded up.
int poll_timeout(std::optional<etcd::Deadline> at) {
  if (!at || *at == etcd::Deadline::max()) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*at - etcd::Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, INT32_MAX));
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

// The status the hold was lost with, set from the client's executor. The
// hold's stop token is requested at the loss itself, its listeners a moment
// later: describe() waits that moment for the real cause.
class LossReport {
 public:
  void set(const etcd::Status& status) {
    {
      std::lock_guard lock(mutex_);
      if (!status_) status_ = status;
    }
    set_.notify_all();
  }
  std::string describe() const {
    std::unique_lock lock(mutex_);
    set_.wait_for(lock, std::chrono::seconds(1), [&] { return status_.has_value(); });
    return status_ ? explain(*status_) : std::string("its session's lease is gone");
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable set_;
  std::optional<etcd::Status> status_;
};

}  // namespace

void add_hold_options(CLI::App* cmd, HoldArgs& a, const std::string& noun) {
  cmd->add_option("--ttl", a.ttl,
                  "TTL in seconds of the lease that carries the hold: how long " + noun +
                      " outlives this process when it dies or is cut off from etcd")
      ->check(int_range(1, INT32_MAX))
      ->capture_default_str();
  cmd->add_option("--timeout", a.wait_timeout,
                  "Give up waiting for " + noun +
                      " after this long (exit 3), e.g. 500ms, 30s (the per-call --timeout goes before the command "
                      "name)")
      ->check(duration_validator());
  cmd->add_option("--kill-after", a.kill_after,
                  "When " + noun +
                      " is lost or a signal is passed on to CMD, SIGKILL CMD's process group this long after the "
                      "SIGTERM (or the signal) if CMD has not exited by then")
      ->check(duration_validator())
      ->capture_default_str();
  cmd->add_option("command", a.command,
                  "Run CMD [ARGS...] while holding " + noun +
                      " (put -- before it); without it, print the key and the fencing token and hold until "
                      "SIGINT/SIGTERM");
}

std::string hold_footer(const std::string& noun, const std::string& key_env, const std::string& token_env,
                        const std::string& token_meaning) {
  return "CMD runs with stdin/stdout/stderr inherited and, in its environment, " + token_env + " (" + token_meaning +
         ") and " + key_env +
         ". CMD runs in a process group of its own: SIGINT/SIGTERM/SIGHUP to etcd-recipes are passed on to that "
         "whole group once (not again if the terminal already sent it there), and SIGKILL follows after "
         "--kill-after; a second signal (1 s or more after the first) SIGKILLs the group at once and exits without "
         "cleanup. Processes CMD leaves running in its group get SIGTERM (SIGKILL after --kill-after) before " +
         noun +
         " is released. If etcd-recipes dies, CMD gets SIGKILL (Linux parent-death signal). A process that leaves "
         "the group (setsid, a daemon) is beyond reach.\n\n"
         "Exit codes:\n"
         "  (CMD's)   with CMD: CMD's exit status (128+N if signal N killed it)\n"
         "  0         without CMD: ended by SIGINT/SIGTERM, " +
         noun +
         " released\n"
         "  1         an etcd operation failed\n"
         "  3         --timeout expired while waiting; CMD did not run\n"
         "  75        " +
         noun +
         " was lost (lease expired or revoked): CMD's group got SIGTERM (SIGKILL after --kill-after) and "
         "was gone before exit\n"
         "  126, 127  CMD could not be run, was not found\n"
         "  128+N     interrupted by signal N while waiting; nothing is left behind";
}

std::optional<int> refuse_unrunnable(const std::vector<std::string>& command,
                                     const std::function<void(const std::string&)>& complain,
                                     const std::string& consequence) {
  if (command.empty()) return std::nullopt;
  const int err = check_program(command.front());
  if (err == 0) return std::nullopt;
  complain(cat("cannot run ", command.front(), ": ", std::strerror(err), "; ", consequence));
  return err == ENOENT ? kExitNotFound : kExitCannotRun;
}

int run_holding(Context& ctx, const HoldArgs& a, const HoldKind& kind, Holdable& holdable, etcd::Session& session) {
  auto complain = [&](const std::string& text) {
    std::cerr << kProgram << ": " << kind.what << ": " << text << std::endl;
  };
  // Before the session exists: nothing to take, nothing to clean up.
  if (auto code = refuse_unrunnable(a.command, complain, cat("did not wait for ", kind.noun))) return *code;
  const auto notices = ctx.announce_connection(std::string(kProgram) + ": " + kind.what);
  // Whatever happens, end the session: revoking its lease deletes every key
  // the hold created, released or not. Never with ctx.stop(): after a
  // signal this is exactly the work that must still be done.
  struct SessionCloser {
    etcd::Session& session;
    std::chrono::milliseconds timeout;
    ~SessionCloser() { (void)session.close().timeout(timeout).wait(); }
  } closer{session, ctx.timeout()};

  // --- wait
  const std::optional<etcd::Deadline> give_up = wait_deadline(a.wait_timeout);
  // A wait that ended without the hold: a signal, --timeout, or a failure.
  auto gave_up = [&](etcd::Status st) -> int {
    if (ctx.stop().stop_requested()) return kExitSignalBase + stop_signal();
    if (give_up && etcd::Clock::now() >= *give_up && st.code() == etcd::StatusCode::kDeadlineExceeded) {
      complain(cat("timed out after ", a.wait_timeout, " waiting for ", kind.noun,
                   a.command.empty() ? "" : "; the command was not run"));
      return kExitTimedOut;
    }
    throw Failure(kind.what, std::move(st));
  };
  // The session's lease first, within one call's --timeout: an unreachable
  // or refusing etcd is an error to report now (exit 1), not a wait that
  // some recipes (an election candidate) would retry until --timeout.
  {
    auto started = session.start().stop_token(ctx.stop());
    auto by = etcd::Clock::now() + ctx.timeout();
    started.deadline(give_up ? std::min(*give_up, by) : by);
    if (auto r = std::move(started).wait(); !r.ok()) return gave_up(std::move(r).status());
  }
  // --- held: one hold, or several names held as one (a multi-lock).
  etcd::recipes::Hold hold;
  etcd::recipes::MultiHold multi;
  if (holdable.acquire_multi) {
    auto acquired = holdable.acquire_multi(give_up, ctx.stop());
    if (!acquired.ok()) return gave_up(std::move(acquired).status());
    multi = std::move(acquired).value();
  } else {
    auto acquired = holdable.acquire(give_up, ctx.stop());
    if (!acquired.ok()) return gave_up(std::move(acquired).status());
    hold = std::move(acquired).value();
  }
  const int64_t token = hold.token();
  const std::string key = hold.key();
  const std::stop_token held = multi ? multi.stop_token() : hold.stop_token();
  // The hold ended (lost), or its holder was asked to release and takes
  // requests (--release-on-request): what stops CMD.
  std::stop_source stop_cmd;
  std::stop_callback stop_on_end(held, [&stop_cmd] { stop_cmd.request_stop(); });
  std::optional<std::stop_callback<std::function<void()>>> stop_on_request;
  const std::stop_token requested = multi ? multi.release_requested() : hold.release_requested();
  if (a.release_on_request) {
    stop_on_request.emplace(requested, std::function<void()>([&stop_cmd] { stop_cmd.request_stop(); }));
  }
  const auto asked = [&] { return a.release_on_request && requested.stop_requested(); };
  auto loss = std::make_shared<LossReport>();
  auto on_lost = [loss](const etcd::Status& why) { loss->set(why); };
  auto lost_sub = multi ? multi.on_lost(on_lost) : hold.on_lost(on_lost);
  auto release = [&]() -> int {
    auto r = multi ? multi.release().wait() : hold.release().wait();
    if (!r.ok()) {
      // The lease is revoked next, which frees the hold all the same.
      complain(cat("releasing ", kind.noun, ": ", explain(r.status())));
      return kExitOk;
    }
    if (!*r) {
      complain(cat(kind.noun, " had been lost before it was released (", loss->describe(), ")"));
      return kExitHoldLost;
    }
    return kExitOk;
  };

  if (a.command.empty()) {
    if (multi) {
      // One key line and one token line per name, in the order taken.
      for (const auto& h : multi.holds()) {
        if (ctx.json()) {
          print_line(dump_json({{"key", base64(h.key())}, {"token", h.token()}}));
        } else {
          print_line(simple_field(h.key()));
          print_line(std::to_string(h.token()));
        }
      }
    } else if (ctx.json()) {
      print_line(dump_json({{"key", base64(key)}, {"token", token}}));
    } else {
      print_line(simple_field(key));
      print_line(std::to_string(token));
    }
    wait_either(ctx.stop(), stop_cmd.get_token());
    if (!held.stop_requested() && asked()) {
      complain(cat("asked to release ", kind.noun, ": released"));
      return release();
    }
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
  const auto kill_after = *parse_duration(a.kill_after);
  const std::string& program = a.command.front();
  CommandGroup cmd;
  std::vector<std::string> env = {cat(kind.token_env, "=", token), cat(kind.key_env, "=", key)};
  if (multi) {
    // Every name's token (space-separated) and key (one per line), in the
    // order the names were taken.
    std::string tokens, keys, names;
    for (std::size_t i = 0; i < multi.holds().size(); ++i) {
      tokens += (i ? " " : "") + std::to_string(multi.holds()[i].token());
      keys += (i ? "\n" : "") + multi.holds()[i].key();
      names += (i ? "\n" : "") + multi.names()[i];
    }
    env = {cat(kind.token_env, "S=", tokens), cat(kind.key_env, "S=", keys), cat("ETCD_RECIPES_LOCK_NAMES=", names)};
  }
  if (int err = cmd.start(a.command, env); err != 0) {
    (void)release();
    complain(cat("cannot run ", program, ": ", std::strerror(err)));
    return err == ENOENT ? kExitNotFound : kExitCannotRun;
  }
  const Supervised run =
      supervise(ctx, cmd,
                {.lost = stop_cmd.get_token(),
                 .kill_after = kill_after,
                 .kill_after_text = a.kill_after,
                 .on_lost =
                     [&] {
                       if (!held.stop_requested() && asked()) {
                         complain(cat("asked to release ", kind.noun, ": sent SIGTERM to ", program, " (process group ",
                                      cmd.pid(), ")"));
                         return;
                       }
                       complain(cat(kind.noun, " was lost (", loss->describe(), "): sent SIGTERM to ", program,
                                    " (process group ", cmd.pid(), ")"));
                     },
                 .complain = complain});
  if (!held.stop_requested() && asked()) {
    // Stopped on request: the lock is still ours to release.
    const int released = release();
    return released != kExitOk ? released : run.status;
  }
  if (run.lost || held.stop_requested()) {
    if (!run.lost) complain(cat(kind.noun, " was lost (", loss->describe(), ") as ", program, " exited"));
    return kExitHoldLost;
  }
  const int released = release();
  return released != kExitOk ? released : run.status;
}

Supervised supervise(Context& ctx, CommandGroup& cmd, const SuperviseOptions& o) {
  const std::string program = cmd.program();
  set_forced_exit_group(cmd.pid());
  // Until the group is gone: its id may be reused after that.
  struct Unregister {
    ~Unregister() { set_forced_exit_group(0); }
  } unregister;

  // Three events end the wait: CMD's exit (its pidfd), a signal and the
  // loss (both through `wake`); the only timer is the SIGKILL after
  // --kill-after.
  Wakeup wake;
  std::stop_callback on_signal(ctx.stop(), [&wake] { wake.notify(); });
  std::stop_callback on_loss(o.lost, [&wake] { wake.notify(); });
  Supervised run;
  std::optional<etcd::Deadline> kill_at;
  std::optional<int> status;
  for (;;) {
    if ((status = cmd.try_reap())) break;
    if (!run.lost && o.lost.stop_requested()) {
      // Stop the work first, then talk about it.
      run.lost = true;
      cmd.signal(SIGTERM);
      if (!kill_at || *kill_at > etcd::Clock::now() + o.kill_after) kill_at = etcd::Clock::now() + o.kill_after;
      if (o.on_lost) o.on_lost();
    }
    if (!run.signalled && ctx.stop().stop_requested()) {
      run.signalled = true;
      // A signal from the terminal went to its foreground group; if that
      // is CMD's group, CMD has it already and must not get it twice.
      if (!(stop_signal_from_terminal() && cmd.owns_terminal())) cmd.signal(stop_signal());
      if (!kill_at) kill_at = etcd::Clock::now() + o.kill_after;
    }
    if (kill_at && *kill_at != etcd::Deadline::max() && etcd::Clock::now() >= *kill_at) {
      cmd.signal(SIGKILL);
      o.complain(cat(program, " (process group ", cmd.pid(), ") still running ", o.kill_after_text, " after ",
                     run.lost ? "SIGTERM" : "the signal", ": sent SIGKILL"));
      kill_at = etcd::Deadline::max();
    }
    pollfd fds[2] = {{.fd = cmd.exit_fd(), .events = POLLIN, .revents = 0},
                     {.fd = wake.fd(), .events = POLLIN, .revents = 0}};
    if (::poll(fds, 2, poll_timeout(kill_at)) < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "poll");
    }
    if (fds[1].revents != 0) wake.clear();
  }
  run.status = *status;
  // CMD is gone; what it left in its group must not outlive the hold either.
  const auto rest_kill_at = kill_at.value_or(etcd::Clock::now() + o.kill_after);
  const int left = cmd.end_rest(rest_kill_at);
  set_forced_exit_group(0);
  if (left > 0) {
    o.complain(cat(program, " exited and left ", left, left == 1 ? " process" : " processes",
                   " in its process group: stopped (SIGTERM, SIGKILL after --kill-after)"));
  }
  return run;
}

void add_presence_options(CLI::App* cmd, int& ttl, std::string& kill_after, const std::string& what) {
  cmd->add_option("--ttl", ttl,
                  cat("TTL in seconds of the ", what,
                      "'s lease: how long it outlives this process when it dies or is cut off from etcd"))
      ->check(int_range(1, INT32_MAX))
      ->capture_default_str();
  cmd->add_option("--kill-after", kill_after,
                  "When a signal is passed on to CMD, SIGKILL CMD's process group this long after it if CMD has not "
                  "exited by then")
      ->check(duration_validator())
      ->capture_default_str();
}

int run_while_present(Context& ctx, const std::vector<std::string>& command, const std::vector<std::string>& env,
                      const std::string& kill_after, const std::function<void(const std::string&)>& complain,
                      const std::function<void()>& remove) {
  if (command.empty()) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    cv.wait(lock, ctx.stop(), [] { return false; });
    lock.unlock();
    remove();
    return kExitOk;
  }
  if (ctx.stop().stop_requested()) {
    remove();
    return kExitSignalBase + stop_signal();
  }
  CommandGroup cmd;
  if (int err = cmd.start(command, env); err != 0) {
    remove();
    complain(cat("cannot run ", command.front(), ": ", std::strerror(err)));
    return err == ENOENT ? kExitNotFound : kExitCannotRun;
  }
  const Supervised run = supervise(ctx, cmd,
                                   {.lost = {},  // it heals: its loss does not stop CMD
                                    .kill_after = *parse_duration(kill_after),
                                    .kill_after_text = kill_after,
                                    .on_lost = nullptr,
                                    .complain = complain});
  remove();
  return run.status;
}

}  // namespace etcd_cli
