#include "process.h"

#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <utility>

extern char** environ;

namespace bench {
namespace {

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

struct Pipe {
  Fd read, write;
};

Pipe make_pipe() {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) throw_errno("pipe2");
  return {Fd(fds[0]), Fd(fds[1])};
}

class SpawnActions {
 public:
  SpawnActions() { posix_spawn_file_actions_init(&actions_); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&actions_); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

class SpawnAttr {
 public:
  SpawnAttr() { posix_spawnattr_init(&attr_); }
  ~SpawnAttr() { posix_spawnattr_destroy(&attr_); }
  SpawnAttr(const SpawnAttr&) = delete;
  SpawnAttr& operator=(const SpawnAttr&) = delete;
  posix_spawnattr_t* get() { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (!overrides.contains(entry.substr(0, eq))) env.push_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          std::chrono::milliseconds timeout) {
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  SpawnActions actions;
  posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(actions.get(), out.write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(actions.get(), err.write.get(), STDERR_FILENO);
  SpawnAttr attr;
  posix_spawnattr_setflags(attr.get(), POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(attr.get(), 0);

  auto args = argv;
  auto environment = merged_environment(env);
  auto c_args = c_strings(args);
  auto c_env = c_strings(environment);
  pid_t pid = -1;
  if (const int rc = ::posix_spawn(&pid, c_args[0], actions.get(), attr.get(), c_args.data(), c_env.data()); rc != 0) {
    throw std::system_error(rc, std::generic_category(), "posix_spawn " + argv.front());
  }
  out.write.reset();
  err.write.reset();

  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<pollfd, 2> fds{{{out.read.get(), POLLIN, 0}, {err.read.get(), POLLIN, 0}}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);  // the group we created for it
      break;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll");
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      std::array<char, 4096> buf{};
      const ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
      if (n > 0) {
        sinks[i]->append(buf.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll ignores negative fds
        --open_fds;
      }
    }
  }

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!result.timed_out) result.exit_code = exit_code(status);
  return result;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  Pipe out = make_pipe();
  SpawnActions actions;
  posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(actions.get(), out.write.get(), STDOUT_FILENO);
  auto args = argv;
  auto c_args = c_strings(args);
  if (const int rc = ::posix_spawn(&pid_, c_args[0], actions.get(), nullptr, c_args.data(), environ); rc != 0) {
    throw std::system_error(rc, std::generic_category(), "posix_spawn " + argv.front());
  }
  out.write.reset();
  out_ = out.read.release();
}

ChildProcess::~ChildProcess() {
  kill();
  if (out_ >= 0) ::close(out_);
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const auto nl = buffered_.find('\n'); nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    if (out_ < 0) return std::nullopt;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd fd{out_, POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(left.count())) < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll");
    }
    if (fd.revents == 0) continue;
    std::array<char, 4096> buf{};
    const ssize_t n = ::read(out_, buf.data(), buf.size());
    if (n > 0) {
      buffered_.append(buf.data(), static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(out_);
      out_ = -1;
    }
  }
}

void ChildProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::filesystem::path self_path() { return std::filesystem::read_symlink("/proc/self/exe"); }

std::optional<std::filesystem::path> find_peer_source(const std::filesystem::path& given,
                                                      const std::filesystem::path& built_in,
                                                      const std::filesystem::path& installed,
                                                      const std::vector<std::string>& markers) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  for (const auto& dir : {given, built_in}) {
    if (!dir.empty()) candidates.push_back(dir);
  }
  std::error_code ec;
  if (const auto exe = fs::read_symlink("/proc/self/exe", ec); !ec) {
    candidates.push_back(exe.parent_path().parent_path() / installed);
  }
  for (const auto& dir : candidates) {
    bool all = true;
    for (const auto& m : markers) all = all && fs::exists(dir / m, ec);
    if (all) return fs::absolute(dir);
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const auto candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string tail(std::string_view text, int lines) {
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  auto start = text.size();
  while (lines-- > 0) {
    const auto nl = start == 0 ? std::string_view::npos : text.rfind('\n', start - 1);
    if (nl == std::string_view::npos) return std::string(text);
    start = nl;
  }
  return std::string(text.substr(start + 1));
}

std::string expect_line(ChildProcess& child, const std::string& word, std::chrono::steady_clock::time_point deadline,
                        int index) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  const auto line = child.read_line(std::max(left, std::chrono::milliseconds(1)));
  if (!line || !line->starts_with(word + " ")) {
    throw std::runtime_error("worker " + std::to_string(index) + " said '" + line.value_or("(nothing)") +
                             "' (expected '" + word + " ...')");
  }
  return line->substr(word.size() + 1);
}

static_assert(kWorkerSignal == SIGUSR1);

int run_worker(const std::vector<std::string>& args, size_t count, const char* flag, const char* usage,
               const std::function<int()>& body) {
  become_worker();
  if (args.size() != count) {
    std::printf("error: usage: %s %s\n", flag, usage);
    std::fflush(stdout);
    return 2;
  }
  try {
    return body();
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    std::fflush(stdout);
    return 1;
  }
}

std::vector<std::unique_ptr<ChildProcess>> start_workers(
    int processes, int total, const std::function<std::vector<std::string>(int share)>& args) {
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < processes; ++i) {
    std::vector<std::string> argv{self_path().string()};
    for (auto& a : args(total / processes + (i < total % processes ? 1 : 0))) argv.push_back(std::move(a));
    workers.push_back(std::make_unique<ChildProcess>(argv));
  }
  return workers;
}

std::vector<std::string> expect_lines(const std::vector<std::unique_ptr<ChildProcess>>& workers,
                                      const std::string& word, std::chrono::steady_clock::time_point deadline) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < workers.size(); ++i) lines.push_back(expect_line(*workers[i], word, deadline, static_cast<int>(i)));
  return lines;
}

void signal_workers(const std::vector<std::unique_ptr<ChildProcess>>& workers) {
  for (const auto& w : workers) ::kill(w->pid(), kWorkerSignal);
}

void drain_workers(const std::vector<std::unique_ptr<ChildProcess>>& workers,
                   std::chrono::steady_clock::time_point deadline) {
  for (const auto& w : workers) {
    while (std::chrono::steady_clock::now() < deadline &&
           w->read_line(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()))) {
    }
  }
}

void become_worker() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kWorkerSignal);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool await_signal(std::chrono::steady_clock::time_point deadline, const std::function<void()>& each) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kWorkerSignal);
  while (std::chrono::steady_clock::now() < deadline) {
    const timespec half{0, 500'000'000};
    if (::sigtimedwait(&set, nullptr, &half) == kWorkerSignal) return true;
    each();
  }
  return false;
}

}  // namespace bench
