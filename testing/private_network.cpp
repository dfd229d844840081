// The private network (private_network.h) and the nftables rules of member
// partitions (network_rules.h).
#include "etcd/testing/private_network.h"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "network_rules.h"

extern char** environ;

namespace etcd::testing {

namespace {

using Clock = std::chrono::steady_clock;

std::mutex& state_mu() {
  static std::mutex mu;
  return mu;
}

// The first call's result (guarded by state_mu()).
std::optional<PrivateNetwork>& state() {
  static std::optional<PrivateNetwork> s;
  return s;
}

int thread_count() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

std::string errno_text(const char* what, int e) { return std::string(what) + ": " + std::strerror(e); }

// Brings the namespace's loopback interface up (a new namespace starts with
// it down).
std::string loopback_up() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno_text("socket", errno);
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  std::string err;
  if (::ioctl(fd, SIOCGIFFLAGS, &req) != 0) {
    err = errno_text("SIOCGIFFLAGS lo", errno);
  } else {
    req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP);
    if (::ioctl(fd, SIOCSIFFLAGS, &req) != 0) err = errno_text("SIOCSIFFLAGS lo", errno);
  }
  ::close(fd);
  return err;
}

std::string find_nft() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string d;
    while (std::getline(ss, d, ':')) {
      if (!d.empty()) dirs.push_back(d);
    }
  }
  for (const char* d : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) dirs.emplace_back(d);
  for (const auto& d : dirs) {
    const std::string p = d + "/nft";
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

// What a cluster's rules need from the kernel, tried once on a table of
// its own.
constexpr const char* kProbe =
    "table inet etcd_recipes_probe {\n"
    "  chain probe_mark { type filter hook output priority 0; policy accept;\n"
    "    ct state new meta skgid 1 tcp dport 1 ct mark set 1\n"
    "  }\n"
    "  chain probe_drop { type filter hook input priority 0; policy accept;\n"
    "    ct mark 1 ct direction reply drop\n"
    "  }\n"
    "}\n"
    "delete table inet etcd_recipes_probe\n";

std::atomic<int> network_ids{0};

constexpr gid_t kGidBase = 1'500'000'000;
constexpr unsigned kMarkBase = 0x5e000000;

unsigned connection_mark(int network_id, int dialer, int listener) {
  return kMarkBase | static_cast<unsigned>(network_id) << 12 | static_cast<unsigned>(dialer + 1) << 6 |
         static_cast<unsigned>(listener + 1);
}

std::string table_name(int network_id) { return "etcd_recipes_cluster" + std::to_string(network_id); }

}  // namespace

PrivateNetwork enter_private_network() {
  std::lock_guard lk(state_mu());
  if (state()) return *state();
  PrivateNetwork net;
  const int threads = thread_count();
  if (threads != 1) {
    net.reason = "enter_private_network() must run while the process has one thread (it has " +
                 std::to_string(threads) + "): call it first in main()";
  } else if (::unshare(CLONE_NEWNET) != 0) {
    net.reason = errno_text("unshare(CLONE_NEWNET) (needs root or CAP_SYS_ADMIN)", errno);
  } else {
    net.entered = true;
    net.reason = loopback_up();
    if (net.reason.empty()) {
      const std::string err = detail::run_nft(kProbe);
      if (err.empty()) {
        net.partitions = true;
      } else {
        net.reason = "nftables does not work in the private network: " + err;
      }
    }
  }
  state() = net;
  return net;
}

std::optional<std::string> partitions_unavailable() {
  std::lock_guard lk(state_mu());
  if (!state()) return "the process is not in a private network (call etcd::testing::enter_private_network() first)";
  if (!state()->partitions) return state()->reason;
  return std::nullopt;
}

namespace detail {

std::string run_nft(const std::string& script) {
  const std::string nft = find_nft();
  if (nft.empty()) return "nft not found (install Debian's nftables package)";
  int in[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return errno_text("pipe", errno);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(in[0]);
    ::close(in[1]);
    return errno_text("pipe", e);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, err[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::string arg0 = nft, arg1 = "-f", arg2 = "-";
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, nft.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(err[0]);
    return errno_text("posix_spawn nft", rc);
  }
  // The script is small (a few KiB, below the pipe's capacity), so writing
  // it all before reading cannot block on nft's output.
  size_t off = 0;
  while (off < script.size()) {
    const ssize_t w = ::write(in[1], script.data() + off, script.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  ::close(in[1]);
  std::string out;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{err[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t r = ::read(err[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  ::close(err[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return "nft did not finish within 10 s";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (out.empty()) out = "nft failed (status " + std::to_string(status) + ")";
  return out;
}

int next_network_id() {
  if (partitions_unavailable()) return 0;
  const int id = network_ids.fetch_add(1) % 4095 + 1;
  return id;
}

gid_t member_gid(int network_id, int member) {
  return kGidBase + static_cast<gid_t>(network_id) * 64 + static_cast<gid_t>(member);
}

std::string cluster_rules(int network_id, const std::vector<int>& peer_ports,
                          const std::set<std::pair<int, int>>& blocked) {
  const std::string table = "inet " + table_name(network_id);
  std::ostringstream s;
  // Declaring the table first makes the delete valid when it does not
  // exist yet; the whole script is one transaction.
  s << "table " << table << "\n"
    << "delete table " << table << "\n"
    << "table " << table << " {\n"
    << "  chain mark_member_connections {\n"
    << "    type filter hook output priority 0; policy accept;\n";
  const int n = static_cast<int>(peer_ports.size());
  for (int dialer = 0; dialer < n; ++dialer) {
    for (int listener = 0; listener < n; ++listener) {
      if (dialer == listener) continue;
      s << "    ct state new meta skgid " << member_gid(network_id, dialer) << " tcp dport "
        << peer_ports[static_cast<size_t>(listener)] << " ct mark set " << connection_mark(network_id, dialer, listener)
        << "\n";
    }
  }
  s << "  }\n"
    << "  chain drop_partitioned {\n"
    << "    type filter hook input priority 0; policy accept;\n";
  for (const auto& [from, to] : blocked) {
    // from -> to travels on connections `from` opened to `to` (their
    // original direction) and on those `to` opened to `from` (replies).
    s << "    ct mark " << connection_mark(network_id, from, to) << " ct direction original drop\n"
      << "    ct mark " << connection_mark(network_id, to, from) << " ct direction reply drop\n";
  }
  s << "  }\n"
    << "}\n";
  return s.str();
}

std::string delete_cluster_rules(int network_id) {
  const std::string table = "inet " + table_name(network_id);
  return "table " + table + "\ndelete table " + table + "\n";
}

}  // namespace detail

}  // namespace etcd::testing
