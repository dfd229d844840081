// Running a helper program (the Go toolchain, the Go peer) and capturing
// its output; running one beside the bench (a work queue consumer to
// SIGKILL).
#pragma once

#include <sys/types.h>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bench {

// An owned file descriptor, closed when the owner goes.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset();

 private:
  int fd_ = -1;
};

struct ProcessResult {
  int exit_code = -1;  // -1 if killed by a signal or on timeout
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with this process's environment plus `env`
// (overriding same-named variables), in its own process group so a timeout
// can kill the whole tree. Throws std::system_error if it cannot start.
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          std::chrono::milliseconds timeout);

// A helper that runs beside the bench until it is killed: argv[0] (a path)
// with this process's environment, stdin /dev/null, stderr the bench's
// (its errors show up in the run's output), stdout a pipe read line by
// line. Killed and reaped when destroyed, so a metric that throws leaves
// nothing behind. Throws std::system_error if it cannot start.
class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The next line it wrote (without the newline); std::nullopt if it
  // closed its stdout (e.g. exited) or `timeout` passed first.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // SIGKILL; returns once it is gone (reaped).
  void kill();

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffered_;
};

// The next line of `child`, which must begin with `word` and a space: the
// rest of it. Throws naming the worker (`index`) and what it said instead
// (or nothing, by `deadline`).
std::string expect_line(ChildProcess& child, const std::string& word, std::chrono::steady_clock::time_point deadline,
                        int index);

// A helper mode's process (bench.h: add_helper_mode) and the bench
// signalling it: SIGUSR1 means what the helper mode says (e.g. "report").
inline constexpr int kWorkerSignal = 10;  // SIGUSR1 on Linux
// What a worker does first: it never outlives the bench (even one that
// crashed before killing it), and kWorkerSignal is blocked before a client
// starts its threads, so only await_signal takes it.
void become_worker();
// Waits for kWorkerSignal until `deadline`, running `each` every 0.5 s
// meanwhile; false if it never came.
bool await_signal(std::chrono::steady_clock::time_point deadline, const std::function<void()>& each);

// A helper mode's main: become_worker(), then the number of arguments
// checked (else "error: usage: FLAG USAGE" and exit status 2), then
// `body`, whose exception is printed as "error: WHAT" (what the bench reads
// as the worker's answer) with exit status 1.
int run_worker(const std::vector<std::string>& args, size_t count, const char* flag, const char* usage,
               const std::function<int()>& body);
// `processes` workers of this executable sharing `total` (sessions,
// waiters...) between them: worker i runs `args(its share)` (the helper
// mode's flag and arguments, after the executable's path).
std::vector<std::unique_ptr<ChildProcess>> start_workers(
    int processes, int total, const std::function<std::vector<std::string>(int share)>& args);
// expect_line of each of `workers` in turn: what each said after `word`.
std::vector<std::string> expect_lines(const std::vector<std::unique_ptr<ChildProcess>>& workers,
                                      const std::string& word, std::chrono::steady_clock::time_point deadline);
// Sends kWorkerSignal to each of `workers`.
void signal_workers(const std::vector<std::unique_ptr<ChildProcess>>& workers);
// Reads what `workers` still print until each has closed its output (has
// exited) or `deadline` passed.
void drain_workers(const std::vector<std::unique_ptr<ChildProcess>>& workers,
                   std::chrono::steady_clock::time_point deadline);

// This executable (/proc/self/exe), to start it in a helper mode
// (bench.h: add_helper_mode).
std::filesystem::path self_path();

// Where a peer's sources are (the Go or Kotlin peer): the first directory
// that holds every one of `markers`, made absolute, among `given` (a
// command-line option; empty: none), `built_in` (the source tree, set at
// build time; empty: none) and `installed` below the share directory next
// to this executable (e.g. "share/etcd-recipes/bench/go-peer"); nullopt if
// none does.
std::optional<std::filesystem::path> find_peer_source(const std::filesystem::path& given,
                                                      const std::filesystem::path& built_in,
                                                      const std::filesystem::path& installed,
                                                      const std::vector<std::string>& markers);

// The first executable `name` on PATH.
std::optional<std::filesystem::path> find_on_path(const std::string& name);

// The last `lines` lines of `text`, for error messages.
std::string tail(std::string_view text, int lines = 15);

}  // namespace bench
