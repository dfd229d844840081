// Worker processes for the multi-process fault tests (internal to tests).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace etcd::test {

// Starts `argv` (argv[0] a path) with its stdout and stderr appended to
// `err_path`; it gets SIGKILL if this process dies, so that a crashed test
// leaves no worker behind. -1 if the log cannot be opened or fork fails.
inline pid_t spawn_child(const std::vector<std::string>& argv, const std::filesystem::path& err_path) {
  std::vector<char*> c_argv;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (err_fd < 0) return -1;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(err_fd, 1);
    ::dup2(err_fd, 2);
    ::execv(c_argv[0], c_argv.data());
    ::_exit(127);
  }
  ::close(err_fd);
  return pid;
}

// The last `bytes` of a file (a worker's log in a failure message).
inline std::string tail_of(const std::filesystem::path& path, std::size_t bytes = 3000) {
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace etcd::test
