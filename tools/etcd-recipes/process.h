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

// A running child whose stdout is captured (stderr passes through). The
// destructor kills and reaps a child that is still running, so no process
// outlives the scope that started it.
class ChildProcess {
 public:
  // Throws std::system_error if the program cannot be started.
  static ChildProcess spawn(const std::vector<std::string>& argv);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const noexcept { return pid_ < 0 ? -pid_ : pid_; }
  bool running() const noexcept { return pid_ > 0; }
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

// The running executable, for spawning more of ourselves.
std::string self_executable();

}  // namespace etcd_cli
