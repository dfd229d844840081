// Child processes for scenarios that involve several processes (the demo
// now; lock handover and worker crashes later).
#pragma once

#include <sys/types.h>

#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "etcd/call.h"

namespace etcd_cli {

// A running child whose stdout is captured (stderr passes through unless
// merged). The destructor kills and reaps a child that is still running, so
// no process outlives the scope that started it.
// Whether something accepts TCP connections on HOST:PORT now (a numeric
// address or a name; one connect, closed at once).
bool port_open(const std::string& host, int port);

class ChildProcess {
 public:
  // Throws std::system_error if the program cannot be started. With
  // `merge_stderr`, its stderr is captured too, into the same stream.
  static ChildProcess spawn(const std::vector<std::string>& argv, bool merge_stderr = false);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const noexcept { return pid_ < 0 ? -pid_ : pid_; }
  bool running() const noexcept { return pid_ > 0; }
  // Whether the child has exited (then reaped), without waiting.
  bool exited() { return reap(false); }
  // Collects stdout until the child exits and returns its exit code
  // (128 + N if killed by signal N). nullopt if `stop` or `deadline` came
  // first; the child keeps running then.
  std::optional<int> wait(std::stop_token stop, etcd::Deadline deadline);
  const std::string& output() const noexcept { return output_; }
  // SIGTERM, a short grace period, then SIGKILL; always reaps.
  void terminate();
  void kill_now();  // SIGKILL + reap

 private:
  ChildProcess(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}
  void drain(int timeout_ms);
  bool reap(bool block);
  void close_stdout();

  pid_t pid_ = 0;  // negated once reaped
  int stdout_fd_ = -1;
  int exit_code_ = -1;
  std::string output_;
};

// The command a hold protects (CMD of `lock NAME -- CMD`). It runs in a
// process group of its own so that every signal reaches all of it (a shell
// script's children too), and on Linux it is SIGKILLed if this process dies
// (parent-death signal). This process becomes a child subreaper, so members
// of the group orphaned by the death of their parent are reparented here
// and can be reaped; a group whose leader exited can still be waited for.
//
// What remains outside its reach: a process that leaves the group (setsid,
// setpgid: a double-forked daemon) is neither signalled nor waited for, and
// the parent-death signal reaches only CMD itself, not its children.
class CommandGroup {
 public:
  CommandGroup() = default;
  CommandGroup(const CommandGroup&) = delete;
  CommandGroup& operator=(const CommandGroup&) = delete;
  // Kills whatever is left of the group (SIGKILL) and reaps it.
  ~CommandGroup();

  // Starts argv (searched in PATH) with stdio inherited and `env`
  // ("NAME=value") added to this process's environment; with `stdin_fd`
  // (>= 0), that descriptor is CMD's standard input instead. Returns 0, or
  // the errno of the failure (ENOENT: not found; the command did not start).
  int start(const std::vector<std::string>& argv, const std::vector<std::string>& env, int stdin_fd = -1);

  pid_t pid() const noexcept { return pid_; }                       // also the group's id
  const std::string& program() const noexcept { return program_; }  // argv[0]
  // Readable once CMD (the group's leader) has exited: a pidfd, or on a
  // kernel without pidfds an eventfd a waiter thread signals.
  int exit_fd() const noexcept { return exit_fd_; }
  // CMD's exit status as a shell reports it (128+N for signal N); nullopt
  // while it runs. Reaps CMD once it has exited.
  std::optional<int> try_reap();
  // Sends `sig` to every process of the group, then SIGCONT so that a
  // stopped member acts on it. False if nothing was left to signal.
  bool signal(int sig);
  // True if CMD's group is the foreground group of this process's
  // controlling terminal, i.e. gets the terminal's SIGINT itself.
  bool owns_terminal() const;
  // After CMD was reaped: if members of its group are still running, they
  // get SIGTERM, and SIGKILL at `kill_at`; returns once the group is gone
  // (how many processes were left; 0 is the common, immediate case). A
  // SIGKILLed group is waited for at most a few seconds (a process stuck
  // in the kernel cannot be helped).
  int end_rest(etcd::Deadline kill_at);

 private:
  void reap_members();
  bool group_exists() const;
  void close_exit_fd();

  std::string program_;
  pid_t pid_ = -1;
  int exit_fd_ = -1;
  bool reaped_ = false;
  bool gone_ = false;  // the whole group was seen gone: never signal it again
  int status_ = 0;
};

// 0 if `name` (searched in PATH as CommandGroup::start does) names a
// program that can be run, else the errno a start would fail with (ENOENT,
// EACCES): checked before work is taken that CMD could not do.
int check_program(const std::string& name);

// The running executable, for spawning more of ourselves.
std::string self_executable();

}  // namespace etcd_cli
