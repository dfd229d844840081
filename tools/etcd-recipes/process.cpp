#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

extern char** environ;

namespace etcd_cli {

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess::spawn: empty argv");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);

  // The child starts with default signal handling whatever this process
  // blocks or ignores, so it can be interrupted and killed normally.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::system_error(rc, std::generic_category(), "cannot start " + argv[0]);
  }
  return ChildProcess(pid, fds[0]);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, 0)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      exit_code_(other.exit_code_),
      output_(std::move(other.output_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    kill_now();
    pid_ = std::exchange(other.pid_, 0);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    exit_code_ = other.exit_code_;
    output_ = std::move(other.output_);
  }
  return *this;
}

ChildProcess::~ChildProcess() { kill_now(); }

void ChildProcess::close_stdout() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
}

void ChildProcess::drain(int timeout_ms) {
  while (stdout_fd_ >= 0) {
    pollfd p{.fd = stdout_fd_, .events = POLLIN, .revents = 0};
    int n = ::poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    char buf[4096];
    ssize_t got = ::read(stdout_fd_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      close_stdout();
      return;
    }
    output_.append(buf, static_cast<size_t>(got));
    timeout_ms = 0;  // take what is there, then return to the caller
  }
}

bool ChildProcess::reap(bool block) {
  if (pid_ <= 0) return true;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  if (r < 0) {
    exit_code_ = -1;  // not our child any more; nothing to reap
  } else if (WIFEXITED(status)) {
    exit_code_ = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit_code_ = 128 + WTERMSIG(status);
  }
  pid_ = -pid_;  // keep the number for messages, mark as reaped
  return true;
}

std::optional<int> ChildProcess::wait(std::stop_token stop, etcd::Deadline deadline) {
  for (;;) {
    if (stdout_fd_ >= 0) {
      drain(50);
    } else if (pid_ > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A grandchild holding the pipe open must not keep us waiting for EOF.
    if (reap(false)) {
      drain(0);
      close_stdout();
      return exit_code_;
    }
    if (stop.stop_requested() || etcd::Clock::now() >= deadline) return std::nullopt;
  }
}

void ChildProcess::terminate() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100 && !reap(false); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_now();
}

void ChildProcess::kill_now() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    reap(true);
  }
  close_stdout();
}

std::string self_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : path.string();
}

}  // namespace etcd_cli
