#include "process.h"

#include "common.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

extern char** environ;

namespace etcd_cli {

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv, bool merge_stderr) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess::spawn: empty argv");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (merge_stderr) posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);

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

bool port_open(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool open = false;
  for (addrinfo* a = found; a != nullptr && !open; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    open = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return open;
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

// --- CommandGroup -------------------------------------------------------------

namespace {

// Where execvp would find `name`, resolved before vfork(): the child may
// only make system calls, and PATH search allocates. Sets
// `err` (ENOENT, EACCES) when nothing runnable is found.
std::string find_program(const std::string& name, int& err) {
  err = 0;
  if (name.empty()) {
    err = ENOENT;
    return {};
  }
  if (name.find('/') != std::string::npos) {
    // A path is run as it is (no PATH search): it must exist, be a
    // regular file and be executable, as execv would require.
    struct stat st {};
    if (::stat(name.c_str(), &st) != 0) {
      err = errno == ENOTDIR ? ENOENT : errno;
    } else if (!S_ISREG(st.st_mode) || ::access(name.c_str(), X_OK) != 0) {
      err = EACCES;
    }
    return err == 0 ? name : std::string();
  }
  const char* env_path = std::getenv("PATH");
  std::string_view path = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  err = ENOENT;
  for (;;) {
    auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) {
        err = 0;
        return candidate;
      }
      err = EACCES;  // keep looking; report EACCES if nothing else runs
    }
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  return {};
}

int shell_status(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

int check_program(const std::string& name) {
  int err = 0;
  (void)find_program(name, err);
  return err;
}

int CommandGroup::start(const std::vector<std::string>& argv, const std::vector<std::string>& env, int stdin_fd) {
  if (argv.empty()) return ENOENT;
  program_ = argv.front();
  int err = 0;
  const std::string program = find_program(argv.front(), err);
  if (err != 0) return err;

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

  // Members of the group orphaned by their parent's death come to us, so
  // the group can be reaped to the last process. An ignored SIGCHLD
  // (inherited across exec) would have the kernel reap them instead.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::signal(SIGCHLD, SIG_DFL);

  // exec failures come back through this pipe; a successful exec closes it.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return errno;

  // Which of our handled signals must be reset before exec does it (a
  // signal between vfork and exec would otherwise run our handler in the
  // child); ignored ones stay ignored (nohup), SIGPIPE is reset because
  // the client library may ignore it.
  bool handled[NSIG] = {};
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    handled[sig] = old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL;
  }
  sigset_t all, saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  // vfork(), not fork(): copying this process's page tables (gRPC's
  // threads and arenas) cost milliseconds on the path from one holder's
  // end to the next holder's CMD. It is called from the thread that runs
  // the hold (the main thread): the parent-death signal fires when the
  // forking thread exits.
  const pid_t parent = ::getpid();
  const pid_t pid = ::vfork();
  if (pid == 0) {
    // Child, sharing our memory until exec: system calls only, nothing
    // that allocates or writes to anything but its own locals. It has its
    // own signal dispositions (no CLONE_SIGHAND), so resetting them here
    // leaves ours alone.
    ::close(report[0]);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (handled[sig] || sig == SIGPIPE) ::sigaction(sig, &dfl, nullptr);
    }
    int code = 0;
    if (stdin_fd > 0 && ::dup2(stdin_fd, STDIN_FILENO) < 0) code = errno;
    if (code == 0 && (::setpgid(0, 0) != 0 || ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)) code = errno;
    // The parent may have died before prctl: then no signal will come.
    if (code == 0 && ::getppid() != parent) ::_exit(kExitSignalBase + SIGKILL);
    if (code == 0) {
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execve(program.c_str(), args.data(), envp.data());
      code = errno;
    }
    [[maybe_unused]] auto n = ::write(report[1], &code, sizeof code);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    return fork_errno;
  }
  int child_err = 0;
  ssize_t got;
  do {
    got = ::read(report[0], &child_err, sizeof child_err);
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (got == static_cast<ssize_t>(sizeof child_err)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return child_err != 0 ? child_err : ENOEXEC;
  }

  pid_ = pid;
  exit_fd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (exit_fd_ < 0) {
    // No pidfds (Linux < 5.3): a thread waits for the exit without reaping
    // it and signals an eventfd; it owns a duplicate so a destroyed group
    // never makes it write into a reused descriptor.
    exit_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (exit_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    int mine = ::fcntl(exit_fd_, F_DUPFD_CLOEXEC, 0);
    std::thread([pid, mine] {
      siginfo_t info{};
      while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
      }
      uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(mine, &one, sizeof one);
      ::close(mine);
    }).detach();
  }
  return 0;
}

CommandGroup::~CommandGroup() {
  if (pid_ > 0 && !gone_) {
    ::kill(-pid_, SIGKILL);
    if (!reaped_) {
      int status;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
    }
    (void)end_rest(etcd::Clock::now());
  }
  close_exit_fd();
}

void CommandGroup::close_exit_fd() {
  if (exit_fd_ >= 0) ::close(exit_fd_);
  exit_fd_ = -1;
}

std::optional<int> CommandGroup::try_reap() {
  if (pid_ <= 0) return std::nullopt;
  if (!reaped_) {
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return std::nullopt;
    reaped_ = true;
    status_ = r < 0 ? 1 : shell_status(status);
  }
  return status_;
}

bool CommandGroup::signal(int sig) {
  // Once the group is known to be gone its id may belong to someone else.
  if (pid_ <= 0 || gone_) return false;
  if (::kill(-pid_, sig) != 0) return false;
  if (sig != SIGKILL && sig != SIGCONT) ::kill(-pid_, SIGCONT);
  return true;
}

bool CommandGroup::owns_terminal() const {
  if (pid_ <= 0) return false;
  int tty = ::open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) return false;  // no controlling terminal
  const bool ours = ::tcgetpgrp(tty) == pid_;
  ::close(tty);
  return ours;
}

void CommandGroup::reap_members() {
  int status;
  while (::waitpid(-pid_, &status, WNOHANG) > 0) {
  }
}

bool CommandGroup::group_exists() const { return !(::kill(-pid_, 0) != 0 && errno == ESRCH); }

int CommandGroup::end_rest(etcd::Deadline kill_at) {
  if (pid_ <= 0 || gone_) return 0;
  reap_members();
  if (!group_exists()) {
    gone_ = true;
    return 0;
  }
  int left = 0;
  // Count what is left, for the message (a best effort: /proc may be absent).
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::getpgid(std::atoi(name.c_str())) == pid_) ++left;
  }
  if (left == 0) left = 1;
  ::kill(-pid_, kill_at <= etcd::Clock::now() ? SIGKILL : SIGTERM);
  ::kill(-pid_, SIGCONT);
  // Nothing signals that a group became empty; its members' exits reach us
  // only for those reparented here. So this rare path (CMD left processes
  // behind) checks every 5 ms, for a bounded time.
  bool killed = kill_at <= etcd::Clock::now();
  auto give_up = killed ? etcd::Clock::now() + std::chrono::seconds(3) : etcd::Deadline::max();
  for (;;) {
    reap_members();
    if (!group_exists()) {
      gone_ = true;
      break;
    }
    const auto now = etcd::Clock::now();
    if (!killed && now >= kill_at) {
      ::kill(-pid_, SIGKILL);
      killed = true;
      give_up = now + std::chrono::seconds(3);
    }
    if (killed && now >= give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return left;
}

std::string self_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : path.string();
}

}  // namespace etcd_cli
