// Tests of the etcd::testing harness itself (EtcdCluster, FaultProxy, certs).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif
#include <gtest/gtest.h>
#include <asio.hpp>

#include "etcd/testing/certs.h"
#include "etcd/testing/etcd_cluster.h"
#include "etcd/testing/fault_proxy.h"
#include "etcd/testing/private_network.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using etcd::testing::EtcdCluster;
using etcd::testing::EtcdClusterOptions;
using etcd::testing::FaultProxy;

// Polls pred every 5 ms until it holds or `timeout` passes.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = 5s) {
  const auto end = Clock::now() + timeout;
  while (true) {
    if (pred()) return true;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(5ms);
  }
}

bool proc_exists(pid_t pid) { return fs::exists("/proc/" + std::to_string(pid)); }

// Process state letter from /proc/<pid>/stat ('T' = stopped).
char proc_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = s.rfind(')');
  if (paren == std::string::npos || paren + 2 >= s.size()) return '?';
  return s[paren + 2];
}

fs::path make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "harness-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
  return tmpl;
}

// ---------------------------------------------------------------------------
// Blocking socket client helpers (deliberately not asio: they play the role
// of an arbitrary client under test).

class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  // Ends both directions now: a send or receive blocked on another thread returns.
  void shut_down() { ::shutdown(fd_, SHUT_RDWR); }

  bool send_all(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  enum class Result { kOk, kTimeout, kClosed, kError };

  // Reads exactly n bytes within timeout.
  Result recv_exact(size_t n, std::string& out, std::chrono::milliseconds timeout) {
    out.clear();
    const auto end = Clock::now() + timeout;
    char buf[65536];
    while (out.size() < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      if (left <= 0) return Result::kTimeout;
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left));
      if (r == 0) return Result::kTimeout;
      if (r < 0) return Result::kError;
      const ssize_t got = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
      if (got == 0) return Result::kClosed;
      if (got < 0) {
        last_errno_ = errno;
        return Result::kError;
      }
      out.append(buf, static_cast<size_t>(got));
    }
    return Result::kOk;
  }

  // Waits for the connection to be closed or reset by the peer.
  bool wait_closed(std::chrono::milliseconds timeout) {
    std::string ignored;
    while (true) {
      const Result r = recv_exact(1, ignored, timeout);
      if (r == Result::kClosed || r == Result::kError) return true;
      if (r == Result::kTimeout) return false;
    }
  }

  int last_errno() const { return last_errno_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  int last_errno_ = 0;
};

// Echo round trip through `c`.
bool echo(Client& c, const std::string& msg, std::chrono::milliseconds timeout = 2s) {
  if (!c.send_all(msg)) return false;
  std::string got;
  return c.recv_exact(msg.size(), got, timeout) == Client::Result::kOk && got == msg;
}

// Minimal HTTP/1.0 POST (the response is then never chunked).
std::optional<std::string> http_post(int port, const std::string& path, const std::string& body) {
  Client c(port);
  if (!c.connected()) return std::nullopt;
  const std::string req = "POST " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" +
                          "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body;
  if (!c.send_all(req)) return std::nullopt;
  std::string resp, chunk;
  const auto end = Clock::now() + 5s;
  while (Clock::now() < end) {
    const auto r = c.recv_exact(1, chunk, 5s);
    if (r == Client::Result::kOk) {
      resp += chunk;
      continue;
    }
    if (r == Client::Result::kClosed) return resp;
    return std::nullopt;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Asio echo server on its own thread.

class EchoServer {
 public:
  EchoServer() : acceptor_(io_, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~EchoServer() {
    io_.stop();
    thread_.join();
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port()); }
  int accepted() const { return accepted_.load(); }

 private:
  struct Conn : std::enable_shared_from_this<Conn> {
    explicit Conn(asio::ip::tcp::socket s) : sock(std::move(s)) {}
    asio::ip::tcp::socket sock;
    std::array<char, 65536> buf;
    void read() {
      auto self = shared_from_this();
      sock.async_read_some(asio::buffer(buf), [self](asio::error_code ec, size_t n) {
        if (ec) {
          if (ec == asio::error::eof) {
            asio::error_code ignored;
            self->sock.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
          }
          return;
        }
        asio::async_write(self->sock, asio::buffer(self->buf.data(), n), [self](asio::error_code e, size_t) {
          if (!e) self->read();
        });
      });
    }
  };
  void accept() {
    acceptor_.async_accept([this](asio::error_code ec, asio::ip::tcp::socket s) {
      if (ec) return;
      ++accepted_;
      asio::error_code ignored;
      s.set_option(asio::ip::tcp::no_delay(true), ignored);
      std::make_shared<Conn>(std::move(s))->read();
      accept();
    });
  }
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<int> accepted_{0};
};

// ===========================================================================
// EtcdCluster

TEST(EtcdClusterTest, SingleMemberStartsHealthyWithLeaderZero) {
  auto c = EtcdCluster::start_single();
  ASSERT_EQ(c->size(), 1);
  EXPECT_TRUE(c->healthy(0));
  EXPECT_EQ(c->leader(), std::optional<int>(0));
  EXPECT_EQ(c->wait_for_leader(5s), 0);
  EXPECT_TRUE(c->is_running(0));
  EXPECT_FALSE(c->is_paused(0));
  const pid_t pid = c->pid(0);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(::getpgid(pid), pid) << "member must lead its own process group";
  EXPECT_EQ(c->scheme(), "http");
  ASSERT_EQ(c->endpoints().size(), 1u);
  EXPECT_EQ(c->endpoint(0), "127.0.0.1:" + std::to_string(c->client_port(0)));
  EXPECT_EQ(c->endpoints_csv(), c->endpoint(0));
  EXPECT_EQ(c->client_urls()[0], "http://" + c->endpoint(0));
  EXPECT_TRUE(fs::is_directory(c->dir()));
  EXPECT_EQ(c->dir().filename().string().rfind("etcd-recipes-", 0), 0u);
  EXPECT_TRUE(fs::exists(c->log_path(0)));
  EXPECT_NE(c->log_tail(0, 1000).find("etcd-recipes: starting m0"), std::string::npos);
  EXPECT_THROW(c->endpoint(1), std::out_of_range);

  // The client URL really serves the v3 API (grpc-gateway JSON).
  auto put = http_post(c->client_port(0), "/v3/kv/put",
                       R"({"key":"Zm9v","value":"YmFy"})");  // foo=bar
  ASSERT_TRUE(put.has_value());
  EXPECT_NE(put->find("200 OK"), std::string::npos) << *put;
}

// Outside a private network (this binary never enters one) partitions are
// refused with the reason, and a late enter_private_network() (threads
// already run) does not move the process.
TEST(EtcdClusterTest, PartitionsOutsideAPrivateNetworkAreRefusedWithTheReason) {
  auto why = etcd::testing::partitions_unavailable();
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("enter_private_network"), std::string::npos) << *why;
  auto cluster = etcd::testing::EtcdCluster::start_single();
  try {
    cluster->partition_one_way({0}, {0});
    FAIL() << "partition_one_way() did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot partition"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cluster->isolate(0), std::runtime_error);
  EXPECT_NO_THROW(cluster->heal());
  EXPECT_TRUE(cluster->partitioned_links().empty());
  const auto net = etcd::testing::enter_private_network();  // the cluster's threads exist by now
  EXPECT_FALSE(net.entered);
  EXPECT_FALSE(net.partitions);
  EXPECT_NE(net.reason.find("one thread"), std::string::npos) << net.reason;
  EXPECT_TRUE(cluster->healthy(0));
}

TEST(EtcdClusterTest, ThreeMembersElectALeader) {
  auto c = EtcdCluster::start_three();
  ASSERT_EQ(c->size(), 3);
  const int l = c->wait_for_leader(10s);
  EXPECT_GE(l, 0);
  EXPECT_LT(l, 3);
  const auto endpoints = c->endpoints();
  const std::set<std::string> eps(endpoints.begin(), endpoints.end());
  EXPECT_EQ(eps.size(), 3u);
  std::set<int> ports;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(c->healthy(i));
    ports.insert(c->client_port(i));
    ports.insert(c->peer_port(i));
    ports.insert(c->metrics_port(i));
  }
  EXPECT_EQ(ports.size(), 9u);
  EXPECT_NO_THROW(c->wait_healthy(10s));
}

TEST(EtcdClusterTest, KillingTheLeaderElectsAnotherOne) {
  auto c = EtcdCluster::start_three();
  const int old_leader = c->wait_for_leader(10s);
  const pid_t old_pid = c->pid(old_leader);
  c->kill(old_leader);
  EXPECT_FALSE(c->is_running(old_leader));
  EXPECT_EQ(c->pid(old_leader), -1);
  EXPECT_FALSE(proc_exists(old_pid)) << "killed member must be reaped";
  const int new_leader = c->wait_for_leader(10s);
  EXPECT_NE(new_leader, old_leader);
  EXPECT_NO_THROW(c->wait_healthy(10s));
  // Killing again is a no-op.
  EXPECT_NO_THROW(c->kill(old_leader));
}

TEST(EtcdClusterTest, RestartedMemberBecomesHealthyAndKeepsItsData) {
  auto c = EtcdCluster::start_single();
  ASSERT_TRUE(http_post(c->client_port(0), "/v3/kv/put", R"({"key":"Zm9v","value":"YmFy"})").has_value());
  const int port = c->client_port(0);
  c->kill(0);
  EXPECT_FALSE(c->healthy(0, 200ms));
  c->restart(0);
  EXPECT_TRUE(c->is_running(0));
  EXPECT_EQ(c->client_port(0), port);
  EXPECT_NO_THROW(c->wait_healthy(10s));
  auto range = http_post(c->client_port(0), "/v3/kv/range", R"({"key":"Zm9v"})");
  ASSERT_TRUE(range.has_value());
  EXPECT_NE(range->find("YmFy"), std::string::npos) << "data lost across restart: " << *range;

  // restart() of a running member = stop + start.
  const pid_t before = c->pid(0);
  c->restart(0);
  EXPECT_NE(c->pid(0), before);
  EXPECT_NO_THROW(c->wait_healthy(10s));
}

TEST(EtcdClusterTest, RestartedFollowerRejoinsThreeMemberCluster) {
  auto c = EtcdCluster::start_three();
  const int l = c->wait_for_leader(10s);
  const int f = (l + 1) % 3;
  c->kill(f);
  c->restart(f);
  EXPECT_NO_THROW(c->wait_healthy(10s));
  EXPECT_TRUE(c->healthy(f));
}

TEST(EtcdClusterTest, PauseAndResume) {
  auto c = EtcdCluster::start_three();
  const int l = c->wait_for_leader(10s);
  const pid_t pid = c->pid(l);
  c->pause(l);
  EXPECT_TRUE(c->is_paused(l));
  EXPECT_TRUE(c->is_running(l));
  EXPECT_EQ(proc_state(pid), 'T');
  EXPECT_FALSE(c->healthy(l, 200ms));
  // The two others elect a new leader; leader() ignores paused members.
  const int l2 = c->wait_for_leader(10s);
  EXPECT_NE(l2, l);
  c->pause(l);  // idempotent
  c->resume(l);
  EXPECT_FALSE(c->is_paused(l));
  EXPECT_TRUE(eventually([&] { return proc_state(pid) != 'T'; }));
  EXPECT_NO_THROW(c->wait_healthy(10s));
  EXPECT_TRUE(c->healthy(l));
  EXPECT_EQ(c->pid(l), pid);
}

TEST(EtcdClusterTest, StopWorksOnPausedMember) {
  auto c = EtcdCluster::start_single();
  const pid_t pid = c->pid(0);
  c->pause(0);
  const auto t0 = Clock::now();
  c->stop(0);
  EXPECT_LT(Clock::now() - t0, 4s) << "SIGTERM should have been honoured";
  EXPECT_FALSE(c->is_running(0));
  EXPECT_FALSE(proc_exists(pid));
  EXPECT_THROW(c->wait_healthy(300ms), std::runtime_error);
  EXPECT_THROW(c->wait_for_leader(300ms), std::runtime_error);
}

TEST(EtcdClusterTest, DestructorLeavesNoProcessOrDirectoryBehind) {
  std::vector<pid_t> pids;
  fs::path dir;
  {
    auto c = EtcdCluster::start_three();
    for (int i = 0; i < 3; ++i) pids.push_back(c->pid(i));
    c->pause(1);  // a stopped process must be killed too
    dir = c->dir();
    ASSERT_TRUE(fs::exists(dir));
  }
  for (pid_t p : pids) EXPECT_FALSE(proc_exists(p)) << "etcd pid " << p << " leaked";
  EXPECT_FALSE(fs::exists(dir));
}

TEST(EtcdClusterTest, KeepDataOnFailureKeepsDirectoryWhenMarkedFailed) {
  EtcdClusterOptions o;
  o.keep_data_on_failure = true;
  fs::path dir;
  pid_t pid = -1;
  {
    auto c = EtcdCluster::start(o);
    dir = c->dir();
    pid = c->pid(0);
    c->mark_failed();
  }
  EXPECT_FALSE(proc_exists(pid));
  EXPECT_TRUE(fs::exists(dir / "m0.log"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(EtcdClusterTest, ClusterStartedFromShortLivedThreadSurvivesIt) {
  std::unique_ptr<EtcdCluster> c;
  std::thread([&] { c = EtcdCluster::start_single(); }).join();
  ASSERT_TRUE(c);
  EXPECT_NO_THROW(c->wait_healthy(5s));
  EXPECT_TRUE(c->is_running(0)) << "PR_SET_PDEATHSIG must not fire on thread exit";
  std::thread([&] { c->restart(0); }).join();
  EXPECT_NO_THROW(c->wait_healthy(5s));
  EXPECT_TRUE(c->is_running(0));
}

// Constant-initialized, so destroyed only after the harness's atexit hook has
// already killed the members (the pattern of a static fixture cluster).
std::unique_ptr<EtcdCluster> g_static_cluster;

// A forked child of the test process (gtest "fast" death tests) that exits
// normally must not kill the parent's members or delete its data, and can
// start clusters of its own (cleaned up by the atexit hook).
TEST(EtcdClusterDeathTest, ForkedChildDoesNotTouchParentMembers) {
  GTEST_FLAG_SET(death_test_style, "fast");
  auto c = EtcdCluster::start_single();
  const pid_t pid = c->pid(0);
  EXPECT_EXIT(
      {
        auto own = EtcdCluster::start_single();
        if (!own->healthy(0)) std::_Exit(3);
        own.release();  // leaked on purpose: the atexit hook must clean it
        g_static_cluster = EtcdCluster::start_single();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_TRUE(c->is_running(0));
  EXPECT_TRUE(proc_exists(pid));
  EXPECT_TRUE(fs::exists(c->dir()));
  EXPECT_NO_THROW(c->wait_healthy(5s));
}

TEST(EtcdClusterTest, StartFailureThrowsWithLogTail) {
  EtcdClusterOptions o;
  o.extra_args = {"--no-such-flag-xyz"};
  o.start_timeout = 10s;
  try {
    EtcdCluster::start(o);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("exited during startup"), std::string::npos) << what;
    EXPECT_NE(what.find("flag provided but not defined: -no-such-flag-xyz"), std::string::npos) << what;
  }
}

TEST(EtcdClusterTest, MissingBinaryThrows) {
  EtcdClusterOptions o;
  o.etcd_binary = "/nonexistent/etcd";
  EXPECT_THROW(EtcdCluster::start(o), std::runtime_error);
  o.etcd_binary = "etcd-recipes-no-such-binary";
  EXPECT_THROW(EtcdCluster::start(o), std::runtime_error);
}

TEST(EtcdClusterTest, LogDirOption) {
  const fs::path logs = make_temp_dir();
  {
    EtcdClusterOptions o;
    o.log_dir = logs.string();
    auto c = EtcdCluster::start(o);
    EXPECT_EQ(c->log_path(0).parent_path(), logs);
    EXPECT_TRUE(fs::exists(c->log_path(0)));
  }
  EXPECT_FALSE(fs::is_empty(logs)) << "logs in a user log_dir are kept";
  fs::remove_all(logs);
}

// --- which etcd: ETCD_RECIPES_ETCD, version(), flags per release -----------

// Sets (or, with nullopt, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// What `binary --version` prints after "etcd Version: ", asked directly.
std::string reported_version(const std::string& binary) {
  const std::string cmd = "'" + binary + "' --version 2>&1";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return {};
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f) != nullptr) out += buf;
  ::pclose(f);
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const std::string tag = "etcd Version: ";
    if (line.rfind(tag, 0) == 0) return line.substr(tag.size());
  }
  return {};
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(EtcdClusterTest, VersionIsWhatTheBinaryReports) {
  auto c = EtcdCluster::start();
  EXPECT_EQ(c->binary(), etcd::testing::default_etcd_binary());
  if (const char* env = std::getenv("ETCD_RECIPES_ETCD"); env != nullptr && *env != '\0') {
    EXPECT_EQ(c->binary(), fs::absolute(env).string());
  }
  const std::string reported = reported_version(c->binary());
  ASSERT_FALSE(reported.empty()) << c->binary();
  EXPECT_EQ(c->version().text, reported);
  EXPECT_EQ(std::to_string(c->version().major) + "." + std::to_string(c->version().minor) + "." +
                std::to_string(c->version().patch),
            reported.substr(0, reported.find_first_not_of("0123456789.")));
  EXPECT_EQ(c->version(), etcd::testing::etcd_version(c->binary()));
  EXPECT_GE(c->version().major, 3);
  // The member's log names the release it started.
  EXPECT_NE(read_file(c->log_path(0)).find("=== etcd-recipes: starting m0 (etcd " + reported + "):"),
            std::string::npos)
      << c->log_tail(0);
}

TEST(EtcdClusterTest, EtcdRecipesEtcdDecidesWhatStarts) {
  const std::string real = etcd::testing::default_etcd_binary();
  const fs::path dir = make_temp_dir();
  const fs::path wrapper = dir / "etcd";
  const fs::path marker = dir / "started";
  {
    std::ofstream out(wrapper);
    out << "#!/bin/sh\necho \"$@\" >> '" << marker.string() << "'\nexec '" << real << "' \"$@\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all);
  {
    ScopedEnv env("ETCD_RECIPES_ETCD", wrapper.string());
    EXPECT_EQ(etcd::testing::default_etcd_binary(), wrapper.string());
    auto c = EtcdCluster::start();
    EXPECT_EQ(c->binary(), wrapper.string());
    EXPECT_EQ(c->version().text, reported_version(real));
    const std::string calls = read_file(marker);
    EXPECT_NE(calls.find("--version"), std::string::npos) << calls;
    EXPECT_NE(calls.find("--name m0"), std::string::npos) << calls;
    // An explicit EtcdClusterOptions::etcd_binary wins over the variable.
    EtcdClusterOptions o;
    o.etcd_binary = real;
    EXPECT_EQ(EtcdCluster::start(o)->binary(), real);
  }
  {
    ScopedEnv env("ETCD_RECIPES_ETCD", (dir / "missing").string());
    try {
      EtcdCluster::start();
      ADD_FAILURE() << "expected std::runtime_error";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("ETCD_RECIPES_ETCD"), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(EtcdClusterTest, EtcdctlGoesWithTheEtcdBinary) {
  const fs::path dir = make_temp_dir();
  for (const char* name : {"etcd", "etcdctl"}) {
    std::ofstream(dir / name) << "#!/bin/sh\n";
    fs::permissions(dir / name, fs::perms::owner_all);
  }
  {
    ScopedEnv ctl("ETCD_RECIPES_ETCDCTL", std::nullopt);
    ScopedEnv env("ETCD_RECIPES_ETCD", (dir / "etcd").string());
    EXPECT_EQ(etcd::testing::etcdctl_binary(), (dir / "etcdctl").string());
    EXPECT_EQ(etcd::testing::etcdctl_binary((dir / "etcd").string()), (dir / "etcdctl").string());
  }
  {
    ScopedEnv ctl("ETCD_RECIPES_ETCDCTL", (dir / "etcdctl").string());
    EXPECT_EQ(etcd::testing::etcdctl_binary("/nonexistent/etcd"), (dir / "etcdctl").string());
  }
  fs::remove_all(dir);
}

TEST(EtcdClusterTest, ExperimentalFlagsAreSpelledForTheRelease) {
  using etcd::testing::EtcdVersion;
  using etcd::testing::spell_flags_for;
  using V = std::vector<std::string>;
  const EtcdVersion v35{3, 5, 21, "3.5.21"};
  const EtcdVersion v36{3, 6, 0, "3.6.0"};
  const EtcdVersion v37{3, 7, 1, "3.7.1"};
  const V old_names = {"--experimental-watch-progress-notify-interval=5s", "--experimental-compaction-batch-limit",
                       "100", "--experimental-initial-corrupt-check", "--max-txn-ops=8", "positional"};
  const V new_names = {"--watch-progress-notify-interval=5s", "--compaction-batch-limit", "100",
                       "--feature-gates=InitialCorruptCheck=true", "--max-txn-ops=8", "positional"};
  EXPECT_EQ(spell_flags_for(v35, old_names), old_names);
  EXPECT_EQ(spell_flags_for(v36, old_names), new_names);
  EXPECT_EQ(spell_flags_for(v37, old_names), new_names);
  EXPECT_EQ(spell_flags_for(v37, new_names), new_names);
  EXPECT_EQ(spell_flags_for(v35, new_names),
            (V{"--experimental-watch-progress-notify-interval=5s", "--experimental-compaction-batch-limit", "100",
               "--experimental-initial-corrupt-check=true", "--max-txn-ops=8", "positional"}));
  EXPECT_EQ(spell_flags_for(v36, {"-experimental-enable-lease-checkpoint=false"}),
            V{"--feature-gates=LeaseCheckpoint=false"});
  // A gate without an old flag stays as it is (etcd before 3.6 rejects it).
  EXPECT_EQ(spell_flags_for(v35, {"--feature-gates=AllAlpha=true"}), V{"--feature-gates=AllAlpha=true"});
  EXPECT_LT(v35, v36);
  EXPECT_TRUE(v37.at_least(3, 6));
  EXPECT_FALSE(v35.at_least(3, 6));
}

TEST(EtcdClusterTest, ExperimentalFlagStartsOnEveryRelease) {
  // 3.7 refuses the old name, 3.4 and 3.5 know only the old one.
  EtcdClusterOptions o;
  o.extra_args = {"--experimental-watch-progress-notify-interval=5s"};
  auto c = EtcdCluster::start(o);
  EXPECT_TRUE(c->healthy(0));
  const std::string log = read_file(c->log_path(0));
  const bool renamed = c->version().at_least(3, 6);
  EXPECT_NE(log.find(renamed ? " --watch-progress-notify-interval=5s" : " --experimental-watch-progress-notify-interval=5s"),
            std::string::npos)
      << c->log_tail(0);
}

// ===========================================================================
// FaultProxy

TEST(FaultProxyTest, ForwardsBytes) {
  EchoServer echo_server;
  auto proxy = FaultProxy::start(echo_server.endpoint());
  EXPECT_EQ(proxy->endpoint(), "127.0.0.1:" + std::to_string(proxy->port()));
  EXPECT_EQ(proxy->target(), echo_server.endpoint());
  {
    Client c(proxy->port());
    ASSERT_TRUE(c.connected());
    EXPECT_TRUE(echo(c, "hello"));
    EXPECT_TRUE(echo(c, "world"));
    EXPECT_EQ(proxy->connections(), 1u);
    // The counter is bumped when a write completes, which may be observed
    // just after the client already received the echo.
    EXPECT_TRUE(eventually([&] { return proxy->bytes_forwarded() == 20u; })) << proxy->bytes_forwarded();

    // Bulk transfer (exercises backpressure and partial writes).
    std::string big(3u << 20, '\0');
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + 7);
    std::thread sender([&] { c.send_all(big); });
    std::string got;
    EXPECT_EQ(c.recv_exact(big.size(), got, 20s), Client::Result::kOk);
    sender.join();
    EXPECT_TRUE(got == big);
  }
  // Client close propagates (half-close -> echo server closes -> session ends).
  EXPECT_TRUE(eventually([&] { return proxy->connections() == 0; }));
}

TEST(FaultProxyTest, DelayAddsLatencyAndPreservesOrder) {
  EchoServer echo_server;
  auto proxy = FaultProxy::start(echo_server.endpoint());
  Client c(proxy->port());
  ASSERT_TRUE(echo(c, "warmup"));

  proxy->set_delay(150ms);
  auto t0 = Clock::now();
  ASSERT_TRUE(echo(c, "ping", 5s));
  const auto rtt = Clock::now() - t0;
  EXPECT_GE(rtt, 295ms) << "delay applies in both directions";
  EXPECT_LT(rtt, 3s);

  // Order is preserved across many small writes.
  std::string expected;
  for (int i = 0; i < 50; ++i) {
    // Not `"<" + std::to_string(i)`: GCC 12's -Wrestrict false positive at -O3.
    const std::string part = std::string("<").append(std::to_string(i)).append(">");
    expected += part;
    ASSERT_TRUE(c.send_all(part));
  }
  std::string got;
  ASSERT_EQ(c.recv_exact(expected.size(), got, 5s), Client::Result::kOk);
  EXPECT_EQ(got, expected);

  proxy->pass();
  t0 = Clock::now();
  ASSERT_TRUE(echo(c, "fast"));
  EXPECT_LT(Clock::now() - t0, 250ms) << "no delay after pass()";
}

TEST(FaultProxyTest, BlackholeHoldsBytesAndRestoreDeliversThemInOrder) {
  // A partition as TCP lives through it: silence, then everything, in
  // order; never a gap in a stream.
  EchoServer echo_server;
  auto proxy = FaultProxy::start(echo_server.endpoint());
  Client c(proxy->port());
  ASSERT_TRUE(echo(c, "before"));
  // Both ways of the echo are counted (the reply's count may land just
  // after the client read it).
  ASSERT_TRUE(eventually([&] { return proxy->bytes_forwarded() == 12; })) << proxy->bytes_forwarded();
  const auto received = proxy->bytes_received();
  const auto forwarded = proxy->bytes_forwarded();

  proxy->blackhole();
  ASSERT_TRUE(c.send_all("held-1,"));
  std::string got;
  EXPECT_EQ(c.recv_exact(1, got, 300ms), Client::Result::kTimeout);
  // Held bytes were received, not forwarded.
  EXPECT_TRUE(eventually([&] { return proxy->bytes_received() == received + 7; })) << proxy->bytes_received();
  EXPECT_EQ(proxy->bytes_forwarded(), forwarded);
  ASSERT_TRUE(c.send_all("held-2"));

  // New connections are still accepted (and stay silent).
  Client c2(proxy->port());
  ASSERT_TRUE(c2.connected());
  EXPECT_TRUE(eventually([&] { return proxy->connections() == 2; }));
  ASSERT_TRUE(c2.send_all("x"));
  EXPECT_EQ(c2.recv_exact(1, got, 200ms), Client::Result::kTimeout);
  EXPECT_EQ(proxy->connections(), 2u);

  proxy->restore();
  ASSERT_EQ(c.recv_exact(13, got, 2s), Client::Result::kOk) << "the held bytes arrive after the partition";
  EXPECT_EQ(got, "held-1,held-2");
  EXPECT_TRUE(echo(c, "after")) << "the connection survived the blackhole";
  ASSERT_EQ(c2.recv_exact(1, got, 2s), Client::Result::kOk);
  EXPECT_EQ(got, "x");
  EXPECT_TRUE(echo(c2, "after2"));
}

TEST(FaultProxyTest, BlackholeHoldsALargeTransferAndDeliversItWhole) {
  // More than the proxy holds (8 MiB a direction): the sender's writes
  // block, as across a real partition, and every byte arrives once it heals.
  EchoServer echo_server;
  auto proxy = FaultProxy::start(echo_server.endpoint());
  Client c(proxy->port());
  ASSERT_TRUE(echo(c, "before"));
  proxy->blackhole();
  std::string payload(12u << 20, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + (i * 7919) % 26);
  std::thread sender([&] { (void)c.send_all(payload); });
  std::string got;
  EXPECT_EQ(c.recv_exact(1, got, 300ms), Client::Result::kTimeout);
  proxy->restore();
  const auto received = c.recv_exact(payload.size(), got, 30s);
  if (received != Client::Result::kOk) c.shut_down();  // the sender may still be blocked: end it
  sender.join();
  ASSERT_EQ(received, Client::Result::kOk);
  EXPECT_TRUE(got == payload) << "bytes lost, reordered or changed across the partition";
}

TEST(FaultProxyTest, BlackholeThenResetResetsHeldConnectionsOnRestore) {
  // A partition longer than TCP's retransmissions: what it held is never
  // delivered, the connections fail; new ones work.
  EchoServer echo_server;
  auto proxy = FaultProxy::start(echo_server.endpoint());
  Client c(proxy->port());
  ASSERT_TRUE(echo(c, "before"));
  proxy->blackhole_then_reset();
  ASSERT_TRUE(c.send_all("never"));
  std::string got;
  EXPECT_EQ(c.recv_exact(1, got, 300ms), Client::Result::kTimeout);
  proxy->restore();
  EXPECT_EQ(c.recv_exact(1, got, 2s), Client::Result::kError);
  EXPECT_EQ(c.last_errno(), ECONNRESET);
  Client c2(proxy->port());
  EXPECT_TRUE(echo(c2, "new connections work"));
}

TEST(FaultProxyTest, ResetAllResetsCurrentConnections) {
  EchoServer echo_server;
  auto proxy = FaultProxy::start(echo_server.endpoint());
  Client c(proxy->port());
  ASSERT_TRUE(echo(c, "hi"));
  proxy->reset_all();
  EXPECT_EQ(proxy->connections(), 0u);
  std::string got;
  EXPECT_EQ(c.recv_exact(1, got, 2s), Client::Result::kError);
  EXPECT_EQ(c.last_errno(), ECONNRESET);

  Client c2(proxy->port());
  EXPECT_TRUE(echo(c2, "new connections work"));
}

TEST(FaultProxyTest, CutResetsAndRefusesUntilRestore) {
  EchoServer echo_server;
  auto proxy = FaultProxy::start(echo_server.endpoint());
  Client c(proxy->port());
  ASSERT_TRUE(echo(c, "hi"));

  proxy->cut();
  EXPECT_TRUE(c.wait_closed(2s));
  EXPECT_EQ(proxy->connections(), 0u);
  {
    Client refused(proxy->port());
    // TCP handshake may complete (kernel backlog), but the proxy resets it.
    if (refused.connected()) {
      EXPECT_TRUE(refused.wait_closed(2s));
    }
    EXPECT_EQ(proxy->connections(), 0u);
  }
  const int accepted_before = echo_server.accepted();

  proxy->restore();
  Client c3(proxy->port());
  EXPECT_TRUE(echo(c3, "back"));
  EXPECT_EQ(echo_server.accepted(), accepted_before + 1);
}

TEST(FaultProxyTest, UnreachableTargetResetsClients) {
  int dead_port;
  {
    EchoServer tmp;  // grab a port, then free it
    dead_port = tmp.port();
  }
  auto proxy = FaultProxy::start("127.0.0.1:" + std::to_string(dead_port));
  Client c(proxy->port());
  ASSERT_TRUE(c.connected());
  EXPECT_TRUE(c.wait_closed(2s));
  EXPECT_TRUE(eventually([&] { return proxy->connections() == 0; }));
}

TEST(FaultProxyTest, DestructorWithLiveAndBlackholedConnectionsDoesNotHang) {
  EchoServer echo_server;
  auto proxy = FaultProxy::start(echo_server.endpoint());
  Client c1(proxy->port());
  Client c2(proxy->port());
  ASSERT_TRUE(echo(c1, "a"));
  ASSERT_TRUE(echo(c2, "b"));
  proxy->set_delay(10s);
  ASSERT_TRUE(c1.send_all("pending"));
  proxy->blackhole();
  const auto t0 = Clock::now();
  proxy.reset();
  EXPECT_LT(Clock::now() - t0, 1s);
  EXPECT_TRUE(c1.wait_closed(2s));
  EXPECT_TRUE(c2.wait_closed(2s));
}

TEST(FaultProxyTest, BadTargetThrows) {
  EXPECT_THROW(FaultProxy::start("no-port"), std::runtime_error);
  EXPECT_THROW(FaultProxy::start("127.0.0.1:"), std::runtime_error);
}

TEST(FaultProxyTest, ProxiesEtcdClientTraffic) {
  auto c = EtcdCluster::start_single();
  auto proxy = FaultProxy::start(c->endpoint(0));
  auto put = http_post(proxy->port(), "/v3/kv/put", R"({"key":"Zm9v","value":"YmFy"})");
  ASSERT_TRUE(put.has_value());
  EXPECT_NE(put->find("200 OK"), std::string::npos);
  proxy->cut();
  EXPECT_FALSE(http_post(proxy->port(), "/v3/kv/range", R"({"key":"Zm9v"})").value_or("").find("YmFy") !=
               std::string::npos);
  proxy->restore();
  auto range = http_post(proxy->port(), "/v3/kv/range", R"({"key":"Zm9v"})");
  ASSERT_TRUE(range.has_value());
  EXPECT_NE(range->find("YmFy"), std::string::npos);
}

// ===========================================================================
// Certificates / TLS

int run(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }  // mkdtemp paths: no quotes

TEST(CertsTest, MakeTestCertsProducesAValidChain) {
  const fs::path dir = make_temp_dir();
  const auto certs = etcd::testing::make_test_certs(dir / "certs", "alice");
  for (const auto& p : {certs.ca_cert, certs.ca_key, certs.server_cert, certs.server_key, certs.client_cert,
                        certs.client_key, certs.other_ca_cert}) {
    ASSERT_TRUE(fs::exists(p)) << p;
    EXPECT_GT(fs::file_size(p), 100u) << p;
  }
  EXPECT_EQ(certs.dir, dir / "certs");
  const std::string quiet = " >/dev/null 2>&1";
  EXPECT_EQ(run("openssl verify -CAfile " + q(certs.ca_cert) + " " + q(certs.server_cert) + " " + q(certs.client_cert) +
                quiet),
            0);
  EXPECT_NE(run("openssl verify -CAfile " + q(certs.other_ca_cert) + " " + q(certs.server_cert) + quiet), 0);
  EXPECT_EQ(run("openssl x509 -in " + q(certs.client_cert) + " -noout -subject | grep -q 'CN *= *alice'"), 0);
  EXPECT_EQ(
      run("openssl x509 -in " + q(certs.server_cert) + " -noout -ext subjectAltName | grep -q 'IP Address:127.0.0.1'"),
      0);
  fs::remove_all(dir);
}

TEST(CertsTest, OpensslFailureThrows) {
  // A regular file where the directory should be.
  const fs::path dir = make_temp_dir();
  std::ofstream(dir / "file") << "x";
  EXPECT_THROW(etcd::testing::make_test_certs(dir / "file"), std::runtime_error);
  fs::remove_all(dir);
}

TEST(CertsTest, TlsMemberBecomesHealthy) {
  const fs::path dir = make_temp_dir();
  EtcdClusterOptions o;
  o.tls = etcd::testing::make_test_certs(dir);
  o.client_cert_auth = true;
  auto c = EtcdCluster::start(o);
  EXPECT_TRUE(c->tls());
  EXPECT_EQ(c->scheme(), "https");
  EXPECT_EQ(c->client_urls()[0], "https://" + c->endpoint(0));
  EXPECT_NO_THROW(c->wait_healthy(10s));
  EXPECT_EQ(c->wait_for_leader(5s), 0);

  if (run("command -v curl >/dev/null 2>&1") == 0) {
    const std::string url = "https://127.0.0.1:" + std::to_string(c->client_port(0)) + "/version";
    const std::string base = "curl -sf --max-time 5 --cacert " + q(o.tls->ca_cert) + " ";
    EXPECT_EQ(run(base + "--cert " + q(o.tls->client_cert) + " --key " + q(o.tls->client_key) + " " + url +
                  " >/dev/null 2>&1"),
              0)
        << "TLS with a client certificate must work";
    EXPECT_NE(run(base + url + " >/dev/null 2>&1"), 0) << "client-cert-auth must reject clients without a certificate";
    EXPECT_NE(run("curl -sf --max-time 5 --cacert " + q(o.tls->other_ca_cert) + " --cert " + q(o.tls->client_cert) +
                  " --key " + q(o.tls->client_key) + " " + url + " >/dev/null 2>&1"),
              0)
        << "server cert must not verify against the unrelated CA";
  }
  c.reset();
  fs::remove_all(dir);
}

TEST(CertsTest, ThreeMemberTlsClusterWithPeerTls) {
  const fs::path dir = make_temp_dir();
  EtcdClusterOptions o;
  o.members = 3;
  o.tls = etcd::testing::make_test_certs(dir);
  auto c = EtcdCluster::start(o);
  EXPECT_NO_THROW(c->wait_healthy(10s));
  const int l = c->wait_for_leader(10s);
  c->kill(l);
  EXPECT_NE(c->wait_for_leader(10s), l);
  c.reset();
  fs::remove_all(dir);
}

}  // namespace
