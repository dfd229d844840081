#include "etcd/testing/etcd_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "etcd/testing/private_network.h"
#include "network_rules.h"

extern char** environ;

namespace etcd::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kMaxStartAttempts = 5;    // start(): whole-cluster retries on port clash
constexpr int kMaxRestartAttempts = 5;  // restart(): same ports, so just wait + retry
constexpr auto kStopGrace = std::chrono::seconds(5);  // beyond what the release itself waits

// How long a member may take to exit after SIGTERM before stop() kills it.
// etcd 3.5 and newer stop their gRPC server gracefully: they wait up to
// their request timeout (etcd's ReqTimeout(): 5 s + 2 election timeouts) for
// open client streams (a watch, a lease keep-alive) to end, and only then
// hand leadership over and exit. 3.4 closes the streams at once.
Clock::duration stop_grace(const EtcdVersion& v, milliseconds election_timeout) {
  if (!v.at_least(3, 5)) return kStopGrace;
  return std::chrono::seconds(5) + 2 * election_timeout + kStopGrace;
}
constexpr auto kPollInterval = milliseconds(20);

int remaining_ms(Clock::time_point deadline) {
  const auto r = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  if (r <= 0) return 0;
  return static_cast<int>(std::min<long long>(r, INT_MAX));
}

void sleep_until_at_most(Clock::time_point deadline, milliseconds step) {
  const auto wake = std::min(deadline, Clock::now() + step);
  std::this_thread::sleep_until(wake);
}

// ---------------------------------------------------------------------------
// Process-wide state:
//  * a registry of live member pids and temp dirs, cleaned up by an atexit()
//    handler for clusters that are never destroyed;
//  * the spawner: one process-wide, never-exiting thread performs every
//    fork(). PR_SET_PDEATHSIG fires when the *thread* that forked the child
//    exits, so forking from a long-lived thread makes it mean "when the test
//    process dies", even if start()/restart() run on a short-lived thread.
// All of it is leaked on purpose (must outlive static destructors and atexit
// handlers). pthread_atfork() handlers keep a forked child of the test
// process (e.g. a gtest death test) from touching the parent's members: the
// child starts with an empty registry and spawns through its own thread.

struct SpawnJob {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int out_fd = -1;
  int in_fd = -1;
  gid_t gid = 0;  // the child's group id (0: keep ours)
  pid_t pid = -1;
  int err = 0;
  bool done = false;
};

class Spawner;

struct Globals {
  std::mutex registry_mu;
  std::set<pid_t> pids;
  std::set<std::string> dirs;  // temp dirs of live clusters (not "kept")

  std::mutex spawner_mu;  // guards `spawner` (creation / fork reset)
  Spawner* spawner = nullptr;
};

void cleanup_registered_at_exit();
void atfork_prepare();
void atfork_parent();
void atfork_child();

Globals& globals() {
  static Globals* g = [] {
    auto* p = new Globals;
    std::atexit(cleanup_registered_at_exit);
    ::pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    return p;
  }();
  return *g;
}

// Async-signal-safe decimal write (child side of fork()).
void write_int(int fd, int v) {
  char buf[16];
  int n = 0;
  unsigned u = v < 0 ? static_cast<unsigned>(-v) : static_cast<unsigned>(v);
  do {
    buf[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u && n < 15);
  if (v < 0) buf[n++] = '-';
  std::reverse(buf, buf + n);
  [[maybe_unused]] auto w = ::write(fd, buf, static_cast<size_t>(n));
}

[[noreturn]] void child_exec(const SpawnJob& job, pid_t parent) {
  // Only async-signal-safe calls from here on.
  ::setpgid(0, 0);
  // Before PR_SET_PDEATHSIG: a change of credentials clears it. Raw
  // syscalls: the child has one thread, glibc's wrappers would signal the
  // parent's threads.
  if (job.gid != 0) {
    if (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setgid, job.gid) != 0) ::_exit(126);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // parent already gone
  ::dup2(job.in_fd, 0);
  ::dup2(job.out_fd, 1);
  ::dup2(job.out_fd, 2);
  if (::close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < 4096; ++fd) ::close(fd);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  ::execve(job.path, job.argv, job.envp);
  const int e = errno;
  static const char msg[] = "etcd-recipes: execve failed, errno ";
  [[maybe_unused]] auto w = ::write(2, msg, sizeof msg - 1);
  write_int(2, e);
  w = ::write(2, "\n", 1);
  ::_exit(127);
}

void register_pid(pid_t p) {
  Globals& g = globals();
  std::lock_guard lk(g.registry_mu);
  g.pids.insert(p);
}

void unregister_pid(pid_t p) {
  Globals& g = globals();
  std::lock_guard lk(g.registry_mu);
  g.pids.erase(p);
}

bool is_registered_pid(pid_t p) {
  Globals& g = globals();
  std::lock_guard lk(g.registry_mu);
  return g.pids.count(p) != 0;
}

void register_dir(const fs::path& d) {
  Globals& g = globals();
  std::lock_guard lk(g.registry_mu);
  g.dirs.insert(d.string());
}

void unregister_dir(const fs::path& d) {
  Globals& g = globals();
  std::lock_guard lk(g.registry_mu);
  g.dirs.erase(d.string());
}

class Spawner {
 public:
  static Spawner& get() {
    Globals& g = globals();
    std::lock_guard lk(g.spawner_mu);
    if (g.spawner == nullptr) g.spawner = new Spawner();  // thread runs until exit
    return *g.spawner;
  }

  void run(SpawnJob& job) {
    std::unique_lock lk(mu_);
    queue_.push_back(&job);
    cv_.notify_all();
    cv_.wait(lk, [&] { return job.done; });
  }

  std::mutex& mu() { return mu_; }

 private:
  Spawner() {
    std::thread([this] { loop(); }).detach();
  }

  [[noreturn]] void loop() {
    for (;;) {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return !queue_.empty(); });
      SpawnJob* job = queue_.front();
      queue_.pop_front();
      lk.unlock();

      const pid_t parent = ::getpid();
      // _Fork: no atfork handlers, async-signal-safe; the child only execs.
      const pid_t pid = ::_Fork();
      if (pid == 0) child_exec(*job, parent);
      if (pid > 0) {
        ::setpgid(pid, pid);  // also done in the child; avoid the race
        register_pid(pid);
        job->pid = pid;
      } else {
        job->err = errno;
      }

      lk.lock();
      job->done = true;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SpawnJob*> queue_;
};

// Lock order: registry_mu -> spawner_mu -> Spawner::mu_.
void atfork_prepare() {
  Globals& g = globals();
  g.registry_mu.lock();
  g.spawner_mu.lock();
  if (g.spawner) g.spawner->mu().lock();
}

void atfork_parent() {
  Globals& g = globals();
  if (g.spawner) g.spawner->mu().unlock();
  g.spawner_mu.unlock();
  g.registry_mu.unlock();
}

void atfork_child() {
  Globals& g = globals();
  // The spawner thread does not exist in the child: abandon (leak) it, a new
  // one is created on demand. The members belong to the parent: forget them.
  if (g.spawner) g.spawner->mu().unlock();
  g.spawner = nullptr;
  g.spawner_mu.unlock();
  g.pids.clear();
  g.dirs.clear();
  g.registry_mu.unlock();
}

// Runs at exit() for clusters that were never destroyed (leaked, or static
// objects not yet destroyed): SIGKILL + reap the members, remove temp dirs.
void cleanup_registered_at_exit() {
  Globals& g = globals();
  // Never deadlock at exit: if another thread holds the lock, give up after a
  // moment (PR_SET_PDEATHSIG still takes the members down with us).
  bool locked = false;
  for (int i = 0; i < 100 && !locked; ++i) {
    locked = g.registry_mu.try_lock();
    if (!locked) std::this_thread::sleep_for(milliseconds(1));
  }
  if (!locked) return;
  for (pid_t p : g.pids) ::kill(p, SIGKILL);
  for (pid_t p : g.pids) {
    while (::waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  g.pids.clear();
  for (const auto& d : g.dirs) {
    std::error_code ec;
    fs::remove_all(d, ec);
  }
  g.dirs.clear();
  g.registry_mu.unlock();
}

// ---------------------------------------------------------------------------
// Helpers.

bool executable(const fs::path& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// `name` on PATH, then in /usr/bin and /usr/local/bin.
std::optional<fs::path> search_path(const std::string& name) {
  std::vector<fs::path> candidates;
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest(path);
    while (true) {
      const auto colon = rest.find(':');
      std::string_view d = rest.substr(0, colon);
      candidates.emplace_back(fs::path(d.empty() ? "." : std::string(d)) / name);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  candidates.emplace_back(fs::path("/usr/bin") / name);
  candidates.emplace_back(fs::path("/usr/local/bin") / name);
  for (const auto& c : candidates) {
    if (executable(c)) return fs::absolute(c);
  }
  return std::nullopt;
}

std::string find_binary(const std::string& name) {
  if (name.empty()) return default_etcd_binary();
  if (name.find('/') != std::string::npos) {
    if (!executable(name)) {
      throw std::runtime_error("EtcdCluster: etcd binary '" + name + "' does not exist or is not executable");
    }
    return fs::absolute(name).string();
  }
  if (auto p = search_path(name)) return p->string();
  throw std::runtime_error("EtcdCluster: etcd binary '" + name +
                           "' not found on PATH, /usr/bin or /usr/local/bin "
                           "(set ETCD_RECIPES_ETCD to an etcd binary, e.g. $(./dev.sh etcd 3.6), "
                           "or on Debian: apt-get install etcd-server)");
}

// Every variable but ETCD_*, which etcd reads as flags: members and
// `etcd --version` stay hermetic.
std::vector<std::string> hermetic_env() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "ETCD_", 5) == 0) continue;
    env.emplace_back(*e);
  }
  return env;
}

// "etcd Version: 3.6.16" -> {3, 6, 16, "3.6.16"}; nullopt if absent.
std::optional<EtcdVersion> parse_etcd_version(const std::string& out) {
  const std::string tag = "etcd Version:";
  auto pos = out.find(tag);
  if (pos == std::string::npos) return std::nullopt;
  pos += tag.size();
  while (pos < out.size() && (out[pos] == ' ' || out[pos] == '\t')) ++pos;
  auto end = pos;
  while (end < out.size() && !std::isspace(static_cast<unsigned char>(out[end]))) ++end;
  EtcdVersion v;
  v.text = out.substr(pos, end - pos);
  if (v.text.rfind('v', 0) == 0) v.text.erase(0, 1);
  int* parts[] = {&v.major, &v.minor, &v.patch};
  const char* c = v.text.c_str();
  for (int k = 0; k < 3; ++k) {
    if (!std::isdigit(static_cast<unsigned char>(*c))) return std::nullopt;
    char* next = nullptr;
    *parts[k] = static_cast<int>(std::strtol(c, &next, 10));
    c = next;
    if (k < 2) {
      if (*c != '.') return std::nullopt;
      ++c;
    }
  }
  return v;
}

// Runs argv with the hermetic environment, stdin from /dev/null; returns its
// stdout+stderr, killing it at `deadline`.
std::string run_and_capture(std::vector<std::string> args, Clock::time_point deadline, bool& timed_out) {
  timed_out = false;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  std::vector<std::string> env = hermetic_env();
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::system_error(rc, std::generic_category(), "posix_spawn(" + args[0] + ")");
  }
  std::string out;
  char buf[4096];
  while (out.size() < (1u << 20)) {
    pollfd p{fds[0], POLLIN, 0};
    const int ms = remaining_ms(deadline);
    if (ms == 0) {
      timed_out = true;
      break;
    }
    const int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // timeout: loop ends on the next check
    const ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return out;
}

// etcd's --experimental-* flags that 3.6 renamed (its --help: "Deprecated in
// v3.6 and will be decommissioned in v3.7. Use '...' instead"). `gate` set:
// the flag became that feature gate (--feature-gates=GATE=BOOL).
struct FlagRename {
  const char* old_name;
  const char* new_name;
  const char* gate;
};
constexpr FlagRename kFlagRenames[] = {
    {"experimental-enable-distributed-tracing", "enable-distributed-tracing", nullptr},
    {"experimental-distributed-tracing-address", "distributed-tracing-address", nullptr},
    {"experimental-distributed-tracing-service-name", "distributed-tracing-service-name", nullptr},
    {"experimental-distributed-tracing-instance-id", "distributed-tracing-instance-id", nullptr},
    {"experimental-distributed-tracing-sampling-rate", "distributed-tracing-sampling-rate", nullptr},
    {"experimental-initial-corrupt-check", nullptr, "InitialCorruptCheck"},
    {"experimental-corrupt-check-time", "corrupt-check-time", nullptr},
    {"experimental-compact-hash-check-enabled", nullptr, "CompactHashCheck"},
    {"experimental-compact-hash-check-time", "compact-hash-check-time", nullptr},
    {"experimental-enable-lease-checkpoint", nullptr, "LeaseCheckpoint"},
    {"experimental-compaction-batch-limit", "compaction-batch-limit", nullptr},
    {"experimental-peer-skip-client-san-verification", "peer-skip-client-san-verification", nullptr},
    {"experimental-watch-progress-notify-interval", "watch-progress-notify-interval", nullptr},
    {"experimental-warning-apply-duration", "warning-apply-duration", nullptr},
    {"experimental-txn-mode-write-with-shared-buffer", nullptr, "TxnModeWriteWithSharedBuffer"},
    {"experimental-bootstrap-defrag-threshold-megabytes", "bootstrap-defrag-threshold-megabytes", nullptr},
    {"experimental-warning-unary-request-duration", "warning-unary-request-duration", nullptr},
    {"experimental-compaction-sleep-interval", "compaction-sleep-interval", nullptr},
    {"experimental-downgrade-check-time", "downgrade-check-time", nullptr},
    {"experimental-enable-lease-checkpoint-persist", nullptr, "LeaseCheckpointPersist"},
    {"experimental-memory-mlock", "memory-mlock", nullptr},
    {"experimental-snapshot-catchup-entries", "snapshot-catchup-entries", nullptr},
    {"experimental-stop-grpc-service-on-defrag", nullptr, "StopGRPCServiceOnDefrag"},
};

// Free loopback TCP port: bind 127.0.0.1:0, read it back, close. Ports handed
// out by this process are never handed out twice.
int pick_free_port() {
  static std::mutex* mu = new std::mutex;
  static std::set<int>* given = new std::set<int>;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      throw std::system_error(errno, std::generic_category(), "EtcdCluster: socket");
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    int port = -1;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    ::close(fd);
    if (port <= 0) continue;
    std::lock_guard lk(*mu);
    if (given->insert(port).second) return port;
  }
  throw std::runtime_error("EtcdCluster: could not find a free loopback port");
}

// Non-blocking connect to 127.0.0.1:port bounded by deadline; -1 on failure.
int connect_loopback(int port, Clock::time_point deadline) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  for (;;) {
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return -1;
    }
    break;
  }
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

struct HttpResponse {
  int status = 0;
  std::string body;
};

std::string to_lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<std::string> dechunk(std::string_view in) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const auto eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) return std::nullopt;
    const std::string size_line(in.substr(pos, eol - pos));
    char* end = nullptr;
    const unsigned long size = std::strtoul(size_line.c_str(), &end, 16);
    if (end == size_line.c_str()) return std::nullopt;
    pos = eol + 2;
    if (size == 0) return out;
    if (pos + size > in.size()) return std::nullopt;
    out.append(in.substr(pos, size));
    pos += size + 2;  // data + CRLF
  }
}

// Minimal blocking HTTP/1.1 GET to 127.0.0.1:port with an overall timeout.
std::optional<HttpResponse> http_get(int port, const std::string& path, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const int fd = connect_loopback(port, deadline);
  if (fd < 0) return std::nullopt;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nUser-Agent: etcd-recipes-testing\r\n"
                          "Accept: */*\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, remaining_ms(deadline)) <= 0) return std::nullopt;
      continue;
    }
    return std::nullopt;
  }

  std::string raw;
  char buf[16384];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      raw.append(buf, static_cast<size_t>(n));
      if (raw.size() > (64u << 20)) return std::nullopt;
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, remaining_ms(deadline));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return std::nullopt;
      continue;
    }
    return std::nullopt;
  }

  const auto hdr_end = raw.find("\r\n\r\n");
  if (hdr_end == std::string::npos || raw.compare(0, 5, "HTTP/") != 0) {
    return std::nullopt;
  }
  HttpResponse resp;
  const auto sp = raw.find(' ');
  if (sp == std::string::npos || sp > hdr_end) return std::nullopt;
  resp.status = std::atoi(raw.c_str() + sp + 1);
  const std::string headers = to_lower(raw.substr(0, hdr_end));
  std::string_view body(raw);
  body.remove_prefix(hdr_end + 4);
  if (headers.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    auto d = dechunk(body);
    if (!d) return std::nullopt;
    resp.body = std::move(*d);
  } else {
    resp.body = std::string(body);
  }
  return resp;
}

bool metrics_say_leader(const std::string& body) {
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "etcd_server_is_leader 1") return true;
  }
  return false;
}

std::string read_from(const fs::path& p, long long offset, size_t max_bytes) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const long long size = static_cast<long long>(in.tellg());
  if (size <= 0) return {};
  long long start = std::max<long long>(offset, 0);
  if (size - start > static_cast<long long>(max_bytes)) {
    start = size - static_cast<long long>(max_bytes);
  }
  if (start >= size) return {};
  in.seekg(start);
  std::string out(static_cast<size_t>(size - start), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

std::string last_lines(const std::string& text, int lines) {
  if (lines <= 0) return {};
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  size_t pos = end;
  int count = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++count == lines) break;
    --pos;
  }
  return text.substr(pos);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status));
  }
  return "status " + std::to_string(status);
}

std::string random_suffix() {
  std::random_device rd;
  char buf[20];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  return buf;
}

// --- Stale temp dir sweeping ------------------------------------------------
// The destructor and the atexit hook remove a cluster's temp dir, but neither
// runs if the test process is SIGKILLed (e.g. by a test timeout). Each temp
// dir therefore carries an owner file "<pid-namespace> <pid> <start-time>";
// the first start() of a process removes etcd-recipes-* dirs whose owner (in
// the same pid namespace) no longer exists. Kept dirs (keep_data_on_failure)
// have no owner file and are never swept.

constexpr const char* kOwnerFile = ".etcd-recipes-owner";

std::string pid_namespace() {
  std::error_code ec;
  auto target = fs::read_symlink("/proc/self/ns/pid", ec);
  return ec ? std::string() : target.string();
}

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); ""
// if the process does not exist.
std::string process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream fields(stat.substr(paren + 1));
  std::string f;
  for (int i = 3; i <= 22 && (fields >> f); ++i) {
    if (i == 22) return f;
  }
  return {};
}

std::string owner_tag(pid_t pid) {
  const std::string st = process_start_time(pid);
  if (st.empty()) return {};
  return pid_namespace() + " " + std::to_string(pid) + " " + st;
}

void write_owner_file(const fs::path& dir) {
  std::ofstream out(dir / kOwnerFile, std::ios::trunc);
  out << owner_tag(::getpid()) << "\n";
}

void sweep_stale_dirs(const fs::path& tmp) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const std::string ns = pid_namespace();
    if (ns.empty()) return;
    std::error_code ec;
    for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      if (name.rfind("etcd-recipes-", 0) != 0) continue;
      std::ifstream in(it->path() / kOwnerFile);
      std::string owner_ns, pid_str, start;
      if (!(in >> owner_ns >> pid_str >> start) || owner_ns != ns) continue;
      char* endp = nullptr;
      const long pid = std::strtol(pid_str.c_str(), &endp, 10);
      if (*endp != '\0' || pid <= 0) continue;
      if (owner_tag(static_cast<pid_t>(pid)) == owner_ns + " " + pid_str + " " + start) {
        continue;  // owner alive
      }
      std::error_code rm_ec;
      fs::remove_all(it->path(), rm_ec);
    }
  });
}

}  // namespace

// ===========================================================================

std::string default_etcd_binary() {
  if (const char* e = std::getenv("ETCD_RECIPES_ETCD"); e != nullptr && *e != '\0') {
    if (!executable(e)) {
      throw std::runtime_error(std::string("EtcdCluster: ETCD_RECIPES_ETCD=") + e +
                               " does not exist or is not executable");
    }
    return fs::absolute(e).string();
  }
  return find_binary("etcd");
}

std::string etcdctl_binary() { return etcdctl_binary(std::string()); }

std::string etcdctl_binary(const std::string& etcd_binary) {
  if (const char* e = std::getenv("ETCD_RECIPES_ETCDCTL"); e != nullptr && *e != '\0') {
    if (!executable(e)) {
      throw std::runtime_error(std::string("EtcdCluster: ETCD_RECIPES_ETCDCTL=") + e +
                               " does not exist or is not executable");
    }
    return fs::absolute(e).string();
  }
  std::string etcd;
  try {
    etcd = find_binary(etcd_binary);
  } catch (const std::runtime_error&) {
  }
  if (!etcd.empty()) {
    const fs::path sibling = fs::path(etcd).parent_path() / "etcdctl";
    if (executable(sibling)) return sibling.string();
  }
  if (auto p = search_path("etcdctl")) return p->string();
  return {};
}

EtcdVersion etcd_version(const std::string& binary) {
  const std::string path = find_binary(binary);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw std::system_error(errno, std::generic_category(), "EtcdCluster: stat(" + path + ")");
  }
  // Keyed by the file's identity too: a binary rebuilt in place is asked again.
  const std::string key = path + "\n" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                          std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
                          std::to_string(st.st_size);
  static std::mutex* mu = new std::mutex;
  static std::map<std::string, EtcdVersion>* known = new std::map<std::string, EtcdVersion>;
  {
    std::lock_guard lk(*mu);
    if (auto it = known->find(key); it != known->end()) return it->second;
  }
  bool timed_out = false;
  const std::string out = run_and_capture({path, "--version"}, Clock::now() + std::chrono::seconds(10), timed_out);
  const auto v = parse_etcd_version(out);
  if (!v) {
    throw std::runtime_error("EtcdCluster: `" + path + " --version` " +
                             (timed_out ? std::string("did not finish within 10 s") : "printed no etcd version") +
                             (out.empty() ? std::string() : ":\n" + out.substr(0, 2000)));
  }
  std::lock_guard lk(*mu);
  return known->emplace(key, *v).first->second;
}

std::vector<std::string> spell_flags_for(const EtcdVersion& v, std::vector<std::string> args) {
  const bool new_names = v.at_least(3, 6);
  std::vector<std::string> out;
  out.reserve(args.size());
  for (auto& a : args) {
    if (a.size() < 2 || a[0] != '-') {
      out.push_back(std::move(a));
      continue;
    }
    const size_t dashes = a[1] == '-' ? 2 : 1;
    const auto eq = a.find('=');
    const std::string name = a.substr(dashes, eq == std::string::npos ? std::string::npos : eq - dashes);
    const std::optional<std::string> value =
        eq == std::string::npos ? std::nullopt : std::optional<std::string>(a.substr(eq + 1));
    const std::string suffix = value ? "=" + *value : "";
    bool done = false;
    if (new_names) {
      for (const auto& r : kFlagRenames) {
        if (name != r.old_name) continue;
        out.push_back(r.gate ? "--feature-gates=" + std::string(r.gate) + "=" + value.value_or("true")
                             : "--" + std::string(r.new_name) + suffix);
        done = true;
        break;
      }
    } else if (name == "feature-gates" && value) {
      // Only if etcd had an --experimental-* flag for every gate named.
      std::vector<std::string> flags;
      std::string_view rest(*value);
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        const auto item_eq = item.find('=');
        const std::string gate(item.substr(0, item_eq));
        const std::string on = item_eq == std::string_view::npos ? "true" : std::string(item.substr(item_eq + 1));
        const FlagRename* match = nullptr;
        for (const auto& r : kFlagRenames) {
          if (r.gate && gate == r.gate) match = &r;
        }
        if (!match) {
          flags.clear();
          break;
        }
        flags.push_back("--" + std::string(match->old_name) + "=" + on);
      }
      if (!flags.empty()) {
        out.insert(out.end(), flags.begin(), flags.end());
        done = true;
      }
    } else {
      for (const auto& r : kFlagRenames) {
        if (r.new_name == nullptr || name != r.new_name) continue;
        out.push_back("--" + std::string(r.old_name) + suffix);
        done = true;
        break;
      }
    }
    if (!done) out.push_back(std::move(a));
  }
  return out;
}

EtcdCluster::EtcdCluster(EtcdClusterOptions options) : options_(std::move(options)), owner_pid_(::getpid()) {
  if (options_.members < 1) {
    throw std::invalid_argument("EtcdCluster: members must be >= 1");
  }
  if (options_.client_cert_auth && !options_.tls) {
    throw std::invalid_argument("EtcdCluster: client_cert_auth requires tls");
  }
  binary_ = find_binary(options_.etcd_binary);
  version_ = etcd_version(binary_);

  const fs::path tmp = fs::temp_directory_path();
  sweep_stale_dirs(tmp);
  std::string tmpl = (tmp / "etcd-recipes-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "EtcdCluster: mkdtemp(" + tmpl + ")");
  }
  dir_ = tmpl;
  register_dir(dir_);
  write_owner_file(dir_);
  const std::string base = dir_.filename().string();
  token_ = base + "-" + std::to_string(::getpid()) + "-" + random_suffix();
  network_id_ = detail::next_network_id();

  fs::path log_dir = dir_;
  std::string log_prefix;
  if (!options_.log_dir.empty()) {
    log_dir = options_.log_dir;
    std::error_code ec;
    fs::create_directories(log_dir, ec);
    log_prefix = base + "-";
  }
  members_.resize(static_cast<size_t>(options_.members));
  for (int i = 0; i < options_.members; ++i) {
    Member& m = members_[static_cast<size_t>(i)];
    m.name = std::to_string(i).insert(0, 1, 'm');
    m.data_dir = dir_ / (m.name + ".etcd");
    m.log_path = log_dir / (log_prefix + m.name + ".log");
  }
}

std::unique_ptr<EtcdCluster> EtcdCluster::start_single() { return start(EtcdClusterOptions{}); }

std::unique_ptr<EtcdCluster> EtcdCluster::start_three() {
  EtcdClusterOptions o;
  o.members = 3;
  return start(std::move(o));
}

std::unique_ptr<EtcdCluster> EtcdCluster::start(EtcdClusterOptions options) {
  std::unique_ptr<EtcdCluster> c(new EtcdCluster(std::move(options)));
  const auto deadline = Clock::now() + c->options_.start_timeout;
  const int n = c->options_.members;
  std::string failure;

  for (int attempt = 0; attempt < kMaxStartAttempts && failure.empty(); ++attempt) {
    {
      std::lock_guard lk(c->mu_);
      if (attempt > 0) {
        c->kill_all_locked();
        for (auto& m : c->members_) {
          std::error_code ec;
          fs::remove_all(m.data_dir, ec);
        }
      }
      for (auto& m : c->members_) {
        m.client_port = pick_free_port();
        m.peer_port = pick_free_port();
        m.metrics_port = pick_free_port();
      }
      if (c->network_id_ != 0) {
        try {
          c->apply_rules_locked();
        } catch (const std::exception& e) {
          failure = e.what();
          break;
        }
      }
      // Start members one after the other: a new member first asks every
      // peer URL whether the cluster already exists, and a peer whose port is
      // bound but not yet served (because it is bootstrapping itself) makes
      // that request hang for etcd's 1 s bootstrap timeout. A member's
      // metrics port opens only once it serves its peer port, so wait for it
      // (or for the process to die; the loop below classifies that).
      for (int i = 0; i < n; ++i) {
        c->spawn_locked(i);
        if (i + 1 == n) break;
        while (Clock::now() < deadline && !c->reap_if_exited_locked(i) && !c->metrics_port_open(i)) {
          sleep_until_at_most(deadline, milliseconds(5));
        }
      }
    }

    bool retry = false;
    while (true) {
      // 1. Did a member die?
      {
        std::lock_guard lk(c->mu_);
        for (int i = 0; i < n && !retry && failure.empty(); ++i) {
          if (!c->reap_if_exited_locked(i)) continue;
          if (c->port_clash_since_spawn_locked(i)) {
            retry = true;
          } else {
            const Member& m = c->members_[static_cast<size_t>(i)];
            failure = "etcd member " + m.name + " exited during startup (" + describe_status(m.last_status) + ")";
          }
        }
      }
      if (retry || !failure.empty()) break;

      // 2. All healthy?
      bool all = true;
      for (int i = 0; i < n && all; ++i) {
        const int ms = std::clamp(remaining_ms(deadline), 1, 1000);
        all = c->healthy(i, milliseconds(ms));
      }
      if (all) {
        std::lock_guard lk(c->mu_);
        bool alive = true;
        for (int i = 0; i < n; ++i) alive = alive && !c->reap_if_exited_locked(i);
        if (alive) return c;
        continue;  // someone died right after; step 1 will classify it
      }

      if (Clock::now() >= deadline) {
        failure = "etcd cluster (" + std::to_string(n) + " members) did not become healthy within " +
                  std::to_string(c->options_.start_timeout.count()) + "s";
        break;
      }
      sleep_until_at_most(deadline, kPollInterval);
    }
    if (retry && attempt + 1 == kMaxStartAttempts) {
      failure = "etcd could not bind its ports after " + std::to_string(kMaxStartAttempts) + " attempts";
    }
  }

  // Failure: gather diagnostics, kill everything, clean up, throw.
  std::string msg = "EtcdCluster::start: " + failure + "\n";
  msg += "  binary: " + c->binary_ + " (etcd " + c->version_.text + ")\n  dir: " + c->dir_.string() + "\n";
  for (int i = 0; i < n; ++i) {
    const Member& m = c->members_[static_cast<size_t>(i)];
    msg += "--- " + m.name + " (client " + std::to_string(m.client_port) + ", peer " + std::to_string(m.peer_port) +
           ", metrics " + std::to_string(m.metrics_port) + ") log tail [" + m.log_path.string() + "]:\n" +
           c->log_tail(i, 25);
    if (!msg.empty() && msg.back() != '\n') msg += '\n';
  }
  if (c->options_.keep_data_on_failure) c->mark_failed();
  c.reset();
  throw std::runtime_error(msg);
}

EtcdCluster::~EtcdCluster() {
  // In a forked child (e.g. a gtest death test) the members and the temp dir
  // belong to the parent: leave them alone.
  if (::getpid() != owner_pid_) return;
  bool keep = false;
  {
    std::lock_guard lk(mu_);
    kill_all_locked();
    keep = options_.keep_data_on_failure && failed_;
    if (network_id_ != 0) (void)detail::run_nft(detail::delete_cluster_rules(network_id_));
  }
  unregister_dir(dir_);
  if (keep) {
    std::fprintf(stderr, "[etcd-recipes] keeping etcd cluster data and logs in %s\n", dir_.c_str());
    return;
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void EtcdCluster::mark_failed() {
  std::lock_guard lk(mu_);
  failed_ = true;
  if (options_.keep_data_on_failure) {
    unregister_dir(dir_);  // keep it at exit, too
    std::error_code ec;
    fs::remove(dir_ / kOwnerFile, ec);  // and never sweep it
  }
}

int EtcdCluster::size() const { return options_.members; }

std::string EtcdCluster::scheme() const { return tls() ? "https" : "http"; }

void EtcdCluster::check_index(int i) const {
  if (i < 0 || i >= options_.members) {
    throw std::out_of_range("EtcdCluster: member index " + std::to_string(i) + " out of range [0, " +
                            std::to_string(options_.members) + ")");
  }
}

// Ports are fixed once start() has returned, so no locking is needed here.
std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (int i = 0; i < options_.members; ++i) out.push_back(endpoint(i));
  return out;
}

std::string EtcdCluster::endpoint(int i) const { return "127.0.0.1:" + std::to_string(client_port(i)); }

std::string EtcdCluster::endpoints_csv() const {
  std::string out;
  for (const auto& e : endpoints()) out += (out.empty() ? "" : ",") + e;
  return out;
}

std::vector<std::string> EtcdCluster::client_urls() const {
  std::vector<std::string> out;
  for (const auto& e : endpoints()) out.push_back(scheme() + "://" + e);
  return out;
}

int EtcdCluster::client_port(int i) const {
  check_index(i);
  return members_[static_cast<size_t>(i)].client_port;
}

int EtcdCluster::peer_port(int i) const {
  check_index(i);
  return members_[static_cast<size_t>(i)].peer_port;
}

int EtcdCluster::metrics_port(int i) const {
  check_index(i);
  return members_[static_cast<size_t>(i)].metrics_port;
}

fs::path EtcdCluster::data_dir(int i) const {
  check_index(i);
  return members_[static_cast<size_t>(i)].data_dir;
}

fs::path EtcdCluster::log_path(int i) const {
  check_index(i);
  return members_[static_cast<size_t>(i)].log_path;
}

std::string EtcdCluster::log_tail(int i, int lines) const {
  return last_lines(read_from(log_path(i), 0, 256 * 1024), lines);
}

// ---------------------------------------------------------------------------

std::vector<std::string> EtcdCluster::member_args(int i) const {
  const Member& m = members_[static_cast<size_t>(i)];
  const bool use_tls = options_.tls.has_value();
  const std::string cs = use_tls ? "https://" : "http://";
  const std::string ps = use_tls ? "https://" : "http://";
  auto url = [](const std::string& s, int port) { return s + "127.0.0.1:" + std::to_string(port); };
  std::string initial_cluster;
  for (const auto& o : members_) {
    if (!initial_cluster.empty()) initial_cluster += ',';
    initial_cluster += o.name + "=" + url(ps, o.peer_port);
  }
  std::vector<std::string> a = {
      binary_,
      "--name",
      m.name,
      "--data-dir",
      m.data_dir.string(),
      "--listen-client-urls",
      url(cs, m.client_port),
      "--advertise-client-urls",
      url(cs, m.client_port),
      "--listen-peer-urls",
      url(ps, m.peer_port),
      "--initial-advertise-peer-urls",
      url(ps, m.peer_port),
      "--listen-metrics-urls",
      url("http://", m.metrics_port),
      "--initial-cluster",
      initial_cluster,
      // With an existing data dir (restart) etcd ignores the --initial-*
      // flags and recovers from its WAL, so "new" is correct for restarts too.
      "--initial-cluster-state",
      "new",
      "--initial-cluster-token",
      token_,
      "--heartbeat-interval",
      std::to_string(options_.heartbeat.count()),
      "--election-timeout",
      std::to_string(options_.election_timeout.count()),
      "--snapshot-count",
      "10000",
      "--quota-backend-bytes",
      std::to_string(256LL * 1024 * 1024),
      "--auto-compaction-retention",
      "0",
      "--logger",
      "zap",
      "--log-level",
      "warn",
  };
  if (use_tls) {
    const TestCerts& t = *options_.tls;
    for (const auto& [flag, path] : {std::pair<std::string, fs::path>{"--cert-file", t.server_cert},
                                     {"--key-file", t.server_key},
                                     {"--peer-cert-file", t.server_cert},
                                     {"--peer-key-file", t.server_key},
                                     {"--peer-trusted-ca-file", t.ca_cert}}) {
      a.push_back(flag);
      a.push_back(fs::absolute(path).string());
    }
    a.push_back("--peer-client-cert-auth=true");
    // etcd 3.4 demands client certificates whenever it has a client CA.
    if (options_.client_cert_auth) {
      a.push_back("--client-cert-auth=true");
      a.push_back("--trusted-ca-file");
      a.push_back(fs::absolute(t.ca_cert).string());
    }
  }
  const auto extra = spell_flags_for(version_, options_.extra_args);
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void EtcdCluster::spawn_locked(int i) {
  Member& m = members_[static_cast<size_t>(i)];
  std::vector<std::string> args = member_args(i);

  // etcd treats ETCD_* variables as flags; keep the members hermetic.
  std::vector<std::string> env_store = hermetic_env();
  std::vector<char*> argv, envp;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);

  const int log_fd = ::open(m.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    throw std::system_error(errno, std::generic_category(), "EtcdCluster: open(" + m.log_path.string() + ")");
  }
  struct FdCloser {
    int fd;
    ~FdCloser() {
      if (fd >= 0) ::close(fd);
    }
  } log_closer{log_fd};
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    throw std::system_error(errno, std::generic_category(), "EtcdCluster: open(/dev/null)");
  }
  FdCloser null_closer{null_fd};

  std::string header = "=== etcd-recipes: starting " + m.name + " (etcd " + version_.text + "):";
  for (const auto& s : args) header += " " + s;
  header += "\n";
  [[maybe_unused]] auto w = ::write(log_fd, header.data(), header.size());
  struct stat st;
  m.log_offset = ::fstat(log_fd, &st) == 0 ? static_cast<long long>(st.st_size) : 0;

  SpawnJob job;
  job.path = binary_.c_str();
  job.argv = argv.data();
  job.envp = envp.data();
  job.out_fd = log_fd;
  job.in_fd = null_fd;
  if (network_id_ != 0) job.gid = detail::member_gid(network_id_, i);
  Spawner::get().run(job);
  if (job.pid <= 0) {
    throw std::system_error(job.err, std::generic_category(), "EtcdCluster: fork");
  }
  m.pid = job.pid;
  m.paused = false;
}

bool EtcdCluster::port_clash_since_spawn_locked(int i) const {
  const Member& m = members_[static_cast<size_t>(i)];
  return read_from(m.log_path, m.log_offset, 1 << 20).find("address already in use") != std::string::npos;
}

// Returns true if member i is not running (reaping it if it just exited).
bool EtcdCluster::reap_if_exited_locked(int i) const {
  Member& m = members_[static_cast<size_t>(i)];
  if (m.pid <= 0) return true;
  if (!is_registered_pid(m.pid)) {
    // Already killed and reaped by the atexit hook (e.g. a static cluster
    // destroyed after it ran), or we are a forked child and the process
    // belongs to the parent: never signal that pid again, it may be reused.
    m.pid = -1;
    m.paused = false;
    return true;
  }
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(m.pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  if (r == m.pid) {
    m.last_status = status;
  } else {
    m.last_status = 0;  // ECHILD: reaped elsewhere (e.g. SIGCHLD ignored)
  }
  unregister_pid(m.pid);
  m.pid = -1;
  m.paused = false;
  return true;
}

void EtcdCluster::kill_locked(int i) {
  if (reap_if_exited_locked(i)) return;
  Member& m = members_[static_cast<size_t>(i)];
  ::kill(m.pid, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(m.pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  m.last_status = r == m.pid ? status : 0;
  unregister_pid(m.pid);
  m.pid = -1;
  m.paused = false;
}

void EtcdCluster::stop_locked(int i) {
  if (reap_if_exited_locked(i)) return;
  Member& m = members_[static_cast<size_t>(i)];
  ::kill(m.pid, SIGTERM);
  ::kill(m.pid, SIGCONT);  // a stopped process would never see the SIGTERM
  m.paused = false;
  const auto deadline = Clock::now() + stop_grace(version_, options_.election_timeout);
  while (Clock::now() < deadline) {
    if (reap_if_exited_locked(i)) return;
    std::this_thread::sleep_for(milliseconds(5));
  }
  kill_locked(i);
}

void EtcdCluster::kill_all_locked() {
  for (int i = 0; i < options_.members; ++i) {
    if (!reap_if_exited_locked(i)) ::kill(members_[static_cast<size_t>(i)].pid, SIGKILL);
  }
  for (int i = 0; i < options_.members; ++i) kill_locked(i);
}

void EtcdCluster::stop(int i) {
  check_index(i);
  std::lock_guard lk(mu_);
  stop_locked(i);
}

void EtcdCluster::kill(int i) {
  check_index(i);
  std::lock_guard lk(mu_);
  kill_locked(i);
}

void EtcdCluster::pause(int i) {
  check_index(i);
  std::lock_guard lk(mu_);
  if (reap_if_exited_locked(i)) return;
  Member& m = members_[static_cast<size_t>(i)];
  if (m.paused) return;
  ::kill(m.pid, SIGSTOP);
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(m.pid, &status, WUNTRACED);
  } while (r < 0 && errno == EINTR);
  if (r == m.pid && WIFSTOPPED(status)) {
    m.paused = true;
    return;
  }
  // Exited (or reaped elsewhere) instead of stopping.
  m.last_status = r == m.pid ? status : 0;
  unregister_pid(m.pid);
  m.pid = -1;
  m.paused = false;
}

void EtcdCluster::resume(int i) {
  check_index(i);
  std::lock_guard lk(mu_);
  if (reap_if_exited_locked(i)) return;
  Member& m = members_[static_cast<size_t>(i)];
  if (!m.paused) return;
  ::kill(m.pid, SIGCONT);
  m.paused = false;
}

bool EtcdCluster::metrics_port_open(int i) const {
  const int fd = connect_loopback(metrics_port(i), Clock::now() + milliseconds(200));
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

void EtcdCluster::restart(int i) {
  check_index(i);
  std::lock_guard lk(mu_);
  stop_locked(i);
  const Member& m = members_[static_cast<size_t>(i)];
  const auto deadline = Clock::now() + options_.start_timeout;
  std::string failure;
  for (int attempt = 0; attempt < kMaxRestartAttempts; ++attempt) {
    spawn_locked(i);
    bool clash = false;
    while (true) {
      if (reap_if_exited_locked(i)) {
        if (port_clash_since_spawn_locked(i) && attempt + 1 < kMaxRestartAttempts && Clock::now() < deadline) {
          clash = true;
        } else {
          failure = "exited during restart (" + describe_status(m.last_status) + ")";
        }
        break;
      }
      if (metrics_port_open(i)) {
        // The metrics listener is opened last during etcd startup, so the
        // process has come up; make sure it did not die right away.
        if (!reap_if_exited_locked(i)) return;
        continue;
      }
      if (Clock::now() >= deadline) {
        failure = "did not come up within " + std::to_string(options_.start_timeout.count()) + "s";
        kill_locked(i);
        break;
      }
      sleep_until_at_most(deadline, milliseconds(10));
    }
    if (!clash) break;
    sleep_until_at_most(deadline, milliseconds(250));
  }
  throw std::runtime_error("EtcdCluster::restart: member " + m.name + " " + failure + "; log tail [" +
                           m.log_path.string() + "]:\n" + last_lines(read_from(m.log_path, 0, 256 * 1024), 25));
}

bool EtcdCluster::is_running(int i) const {
  check_index(i);
  std::lock_guard lk(mu_);
  return !reap_if_exited_locked(i);
}

bool EtcdCluster::is_paused(int i) const {
  check_index(i);
  std::lock_guard lk(mu_);
  if (reap_if_exited_locked(i)) return false;
  return members_[static_cast<size_t>(i)].paused;
}

pid_t EtcdCluster::pid(int i) const {
  check_index(i);
  std::lock_guard lk(mu_);
  if (reap_if_exited_locked(i)) return -1;
  return members_[static_cast<size_t>(i)].pid;
}

// ---------------------------------------------------------------------------

bool EtcdCluster::healthy(int i, milliseconds timeout) const {
  auto r = http_get(metrics_port(i), "/health", timeout);
  if (!r || r->status != 200) return false;
  std::string body = r->body;
  body.erase(
      std::remove_if(body.begin(), body.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
      body.end());
  return body.find("\"health\":\"true\"") != std::string::npos;
}

std::optional<int> EtcdCluster::leader(milliseconds timeout) const {
  std::vector<int> candidates;
  {
    std::lock_guard lk(mu_);
    for (int i = 0; i < options_.members; ++i) {
      if (!reap_if_exited_locked(i) && !members_[static_cast<size_t>(i)].paused) {
        candidates.push_back(i);
      }
    }
  }
  std::optional<int> found;
  for (int i : candidates) {
    auto r = http_get(metrics_port(i), "/metrics", timeout);
    if (!r || r->status != 200) continue;
    if (metrics_say_leader(r->body)) {
      if (found) return std::nullopt;  // two claim leadership: still electing
      found = i;
    }
  }
  return found;
}

int EtcdCluster::wait_for_leader(milliseconds deadline) const {
  const auto end = Clock::now() + deadline;
  while (true) {
    const int ms = std::clamp(remaining_ms(end), 1, 1000);
    if (auto l = leader(milliseconds(ms))) return *l;
    if (Clock::now() >= end) break;
    sleep_until_at_most(end, kPollInterval);
  }
  std::string msg =
      "EtcdCluster::wait_for_leader: no leader within " + std::to_string(deadline.count()) + "ms; members:";
  for (int i = 0; i < options_.members; ++i) {
    msg += " m" + std::to_string(i) + "=" + (is_running(i) ? (is_paused(i) ? "paused" : "running") : "down");
  }
  throw std::runtime_error(msg);
}

void EtcdCluster::wait_healthy(milliseconds deadline) const {
  const auto end = Clock::now() + deadline;
  int unhealthy = -1;
  bool have_running = false;
  while (true) {
    std::vector<int> live;
    {
      std::lock_guard lk(mu_);
      for (int i = 0; i < options_.members; ++i) {
        if (!reap_if_exited_locked(i) && !members_[static_cast<size_t>(i)].paused) {
          live.push_back(i);
        }
      }
    }
    have_running = !live.empty();
    unhealthy = -1;
    for (int i : live) {
      if (!healthy(i, milliseconds(std::clamp(remaining_ms(end), 1, 1000)))) {
        unhealthy = i;
        break;
      }
    }
    if (have_running && unhealthy < 0 && leader(milliseconds(std::clamp(remaining_ms(end), 1, 1000)))) {
      return;
    }
    if (Clock::now() >= end) break;
    sleep_until_at_most(end, kPollInterval);
  }
  std::string msg =
      "EtcdCluster::wait_healthy: cluster not healthy within " + std::to_string(deadline.count()) + "ms: ";
  if (!have_running) {
    msg += "no running member";
  } else if (unhealthy >= 0) {
    msg += "member m" + std::to_string(unhealthy) + " unhealthy; log tail:\n" + log_tail(unhealthy, 20);
  } else {
    msg += "no (unique) leader";
  }
  throw std::runtime_error(msg);
}

}  // namespace etcd::testing

namespace etcd::testing {

// --- partitions --------------------------------------------------------------

void EtcdCluster::apply_rules_locked() {
  std::vector<int> peer_ports;
  for (const auto& m : members_) peer_ports.push_back(m.peer_port);
  const std::string err = detail::run_nft(detail::cluster_rules(network_id_, peer_ports, blocked_));
  if (!err.empty()) throw std::runtime_error("EtcdCluster: nft: " + err);
}

void EtcdCluster::block_locked(const std::vector<int>& from, const std::vector<int>& to) {
  if (network_id_ == 0) {
    auto why = partitions_unavailable();
    throw std::runtime_error("EtcdCluster: cannot partition members: " +
                             (why ? *why : std::string("the cluster was started before enter_private_network()")));
  }
  for (int f : from) check_index(f);
  for (int t : to) check_index(t);
  for (int f : from) {
    for (int t : to) {
      if (f != t) blocked_.insert({f, t});
    }
  }
}

void EtcdCluster::partition(const std::vector<int>& a, const std::vector<int>& b) {
  std::lock_guard lk(mu_);
  auto before = blocked_;
  try {
    block_locked(a, b);
    block_locked(b, a);
    apply_rules_locked();
  } catch (...) {
    blocked_ = std::move(before);
    throw;
  }
}

void EtcdCluster::partition_one_way(const std::vector<int>& from, const std::vector<int>& to) {
  std::lock_guard lk(mu_);
  auto before = blocked_;
  try {
    block_locked(from, to);
    apply_rules_locked();
  } catch (...) {
    blocked_ = std::move(before);
    throw;
  }
}

void EtcdCluster::isolate(int i) {
  check_index(i);
  std::vector<int> others;
  for (int j = 0; j < size(); ++j) {
    if (j != i) others.push_back(j);
  }
  partition({i}, others);
}

void EtcdCluster::heal() {
  std::lock_guard lk(mu_);
  if (network_id_ == 0) return;
  auto before = std::exchange(blocked_, {});
  try {
    apply_rules_locked();
  } catch (...) {
    blocked_ = std::move(before);
    throw;
  }
}

std::set<std::pair<int, int>> EtcdCluster::partitioned_links() const {
  std::lock_guard lk(mu_);
  return blocked_;
}

}  // namespace etcd::testing
