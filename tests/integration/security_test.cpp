// Security against real etcd members: TLS with a verified server
// certificate, client-certificate authentication, user/password
// authentication with permissions, auth-token expiry and refresh, and key
// namespaces.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "etcd/testing/certs.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

namespace fs = std::filesystem;
using Ms = std::chrono::milliseconds;
using etcd::testing::EtcdCluster;
using etcd::testing::EtcdClusterOptions;
using etcd::testing::TestCerts;

long long ms_since(Clock::time_point t) { return std::chrono::duration_cast<Ms>(Clock::now() - t).count(); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool mentions_tls_failure(const Status& s) {
  const std::string m = lower(s.message());
  return m.find("ssl") != std::string::npos || m.find("handshake") != std::string::npos ||
         m.find("certificate") != std::string::npos || m.find("tls") != std::string::npos;
}

fs::path make_temp_dir(const std::string& stem) {
  std::string templ = (fs::temp_directory_path() / (stem + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return templ;
}

// Collects watch events (key, value) and the error that ended a watch.
struct Events {
  std::mutex mu;
  std::vector<Event> events;
  std::optional<Status> error;
  WatchHandler handler() {
    return [this](Result<WatchResponse> r) {
      std::lock_guard lock(mu);
      if (!r.ok()) {
        error = r.status();
        return;
      }
      for (auto& e : r->events) events.push_back(e);
    };
  }
  size_t count() {
    std::lock_guard lock(mu);
    return events.size();
  }
  std::optional<Status> err() {
    std::lock_guard lock(mu);
    return error;
  }
  std::vector<std::string> keys() {
    std::lock_guard lock(mu);
    std::vector<std::string> out;
    for (auto& e : events) out.push_back(e.kv.key);
    return out;
  }
};

// Runs etcdctl (v3 API; the one that goes with the harness's etcd) against
// `endpoints`; returns its exit code and appends its output to `log`.
int etcdctl(const std::string& endpoints, const std::string& args, std::string& log, const fs::path& scratch) {
  const fs::path out = scratch / "etcdctl.out";
  static const std::string found = etcd::testing::etcdctl_binary();
  const std::string ctl = found.empty() ? "etcdctl" : "'" + found + "'";
  const std::string cmd = "ETCDCTL_API=3 timeout 30 " + ctl + " --endpoints=" + endpoints +
                          " --dial-timeout=5s --command-timeout=10s " + args + " > " + out.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream s;
  s << in.rdbuf();
  log += "$ etcdctl " + args + "\n" + s.str();
  return rc;
}

std::string urls_csv(const EtcdCluster& c) {
  std::string out;
  for (const auto& u : c.client_urls()) out += (out.empty() ? "" : ",") + u;
  return out;
}

// Creates root (password rootpw) and enables authentication; optionally
// adds alice (password alicepw) whose role may read and write only /alice/.
bool enable_auth(const EtcdCluster& c, bool with_alice, std::string& log) {
  const fs::path scratch = c.dir();
  const std::string ep = urls_csv(c);
  if (etcdctl(ep, "user add root:rootpw", log, scratch) != 0) return false;
  if (with_alice) {
    if (etcdctl(ep, "user add alice:alicepw", log, scratch) != 0) return false;
    if (etcdctl(ep, "role add alice-role", log, scratch) != 0) return false;
    if (etcdctl(ep, "role grant-permission alice-role --prefix=true readwrite /alice/", log, scratch) != 0)
      return false;
    if (etcdctl(ep, "user grant-role alice alice-role", log, scratch) != 0) return false;
  }
  return etcdctl(ep, "auth enable", log, scratch) == 0;
}

// ---------------------------------------------------------------------------
// TLS: a member serving https with certificates from a test CA.

class TlsTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = make_temp_dir("etcd-recipes-tls");
    certs_ = etcd::testing::make_test_certs(dir_);
    EtcdClusterOptions o;
    o.tls = certs_;  // server-only TLS: no client certificates required
    cluster_ = EtcdCluster::start(o);
  }
  static void TearDownTestSuite() {
    cluster_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 protected:
  static ClientOptions options_with_ca(const fs::path& ca) {
    ClientOptions o;
    o.endpoints = cluster_->endpoints();
    o.tls = TlsOptions{.ca_file = ca.string()};
    return o;
  }
  static inline fs::path dir_;
  static inline TestCerts certs_;
  static inline std::unique_ptr<EtcdCluster> cluster_;
};

TEST_F(TlsTest, ClientTrustingTheCaPutsGetsAndWatches) {
  ASSERT_TRUE(cluster_->tls());
  Client c(options_with_ca(certs_.ca_cert));
  Events ev;
  auto watcher = c.watch("/tls/", {.prefix = true}, ev.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));
  auto put = c.put("/tls/a", "secret-ish").timeout(5s).wait();
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  auto got = c.get("/tls/a").timeout(5s).wait();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].value, "secret-ish");
  ASSERT_TRUE(eventually([&] { return ev.count() == 1; }, 5s));
  EXPECT_EQ(ev.keys(), std::vector<std::string>{"/tls/a"});
}

TEST_F(TlsTest, ClientTrustingAnotherCaFailsClearlyWithinItsDeadline) {
  Client c(options_with_ca(certs_.other_ca_cert));
  const auto start = Clock::now();
  auto got = c.get("/tls/a").timeout(3s).wait();
  const long long took = ms_since(start);
  ASSERT_FALSE(got.ok());
  std::cout << "[ info     ] wrong CA: " << got.status().to_string() << " after " << took << " ms" << std::endl;
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().to_string();
  EXPECT_TRUE(mentions_tls_failure(got.status())) << got.status().to_string();
  EXPECT_LE(took, 3500);

  // Nothing reached the server, so a write is not "outcome unknown".
  const auto put_start = Clock::now();
  auto put = c.put("/tls/b", "x").timeout(3s).wait();
  EXPECT_LE(ms_since(put_start), 3500);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), StatusCode::kUnavailable) << put.status().to_string();
  EXPECT_FALSE(put.status().is(Errc::kOutcomeUnknown)) << put.status().to_string();
  EXPECT_TRUE(mentions_tls_failure(put.status())) << put.status().to_string();
}

TEST_F(TlsTest, PlaintextClientAgainstATlsMemberFailsClearlyWithinItsDeadline) {
  ClientOptions o;
  o.endpoints = cluster_->endpoints();
  Client c(o);
  const auto start = Clock::now();
  auto got = c.get("/tls/a").timeout(3s).wait();
  const long long took = ms_since(start);
  ASSERT_FALSE(got.ok());
  std::cout << "[ info     ] plaintext client: " << got.status().to_string() << " after " << took << " ms" << std::endl;
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().to_string();
  EXPECT_FALSE(got.status().message().empty());
  EXPECT_LE(took, 3500);
}

// ---------------------------------------------------------------------------
// Mutual TLS: the member requires a client certificate signed by its CA.

class ClientCertTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = make_temp_dir("etcd-recipes-mtls");
    certs_ = etcd::testing::make_test_certs(dir_);
    EtcdClusterOptions o;
    o.tls = certs_;
    o.client_cert_auth = true;
    cluster_ = EtcdCluster::start(o);
  }
  static void TearDownTestSuite() {
    cluster_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 protected:
  static inline fs::path dir_;
  static inline TestCerts certs_;
  static inline std::unique_ptr<EtcdCluster> cluster_;
};

TEST_F(ClientCertTest, ClientWithACertificateWorks) {
  ClientOptions o;
  o.endpoints = cluster_->endpoints();
  o.tls = TlsOptions{.ca_file = certs_.ca_cert.string(),
                     .cert_file = certs_.client_cert.string(),
                     .key_file = certs_.client_key.string()};
  Client c(o);
  auto put = c.put("/mtls/a", "1").timeout(5s).wait();
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  auto got = c.get("/mtls/a").timeout(5s).wait();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].value, "1");
}

TEST_F(ClientCertTest, ClientWithoutACertificateFailsWithinItsDeadline) {
  ClientOptions o;
  o.endpoints = cluster_->endpoints();
  o.tls = TlsOptions{.ca_file = certs_.ca_cert.string()};
  Client c(o);
  const auto start = Clock::now();
  auto got = c.get("/mtls/a").timeout(3s).wait();
  const long long took = ms_since(start);
  ASSERT_FALSE(got.ok());
  std::cout << "[ info     ] no client certificate: " << got.status().to_string() << " after " << took << " ms"
            << std::endl;
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().to_string();
  EXPECT_LE(took, 3500);
}

// ---------------------------------------------------------------------------
// User/password authentication and permissions.

class AuthTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    EtcdClusterOptions o;
    o.extra_args = {"--bcrypt-cost", "4"};  // fast authentication in tests
    cluster_ = EtcdCluster::start(o);
    setup_ok_ = enable_auth(*cluster_, /*with_alice=*/true, setup_log_);
  }
  static void TearDownTestSuite() { cluster_.reset(); }

 protected:
  void SetUp() override { ASSERT_TRUE(setup_ok_) << setup_log_; }
  static ClientOptions as(const std::string& user, const std::string& password) {
    ClientOptions o;
    o.endpoints = cluster_->endpoints();
    o.user = user;
    o.password = password;
    return o;
  }
  static inline std::unique_ptr<EtcdCluster> cluster_;
  static inline bool setup_ok_ = false;
  static inline std::string setup_log_;
};

TEST_F(AuthTest, RootWithTheRightPasswordWorks) {
  Client c(as("root", "rootpw"));
  auto put = c.put("/auth/root", "1").timeout(5s).wait();
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  auto got = c.get("/auth/root").timeout(5s).wait();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->kvs.size(), 1u);
  Events ev;
  auto watcher = c.watch("/auth/", {.prefix = true}, ev.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));
  ASSERT_TRUE(c.put("/auth/root", "2").timeout(5s).wait().ok());
  ASSERT_TRUE(eventually([&] { return ev.count() == 1 || ev.err().has_value(); }, 5s));
  EXPECT_FALSE(ev.err().has_value()) << ev.err()->to_string();
}

TEST_F(AuthTest, WrongPasswordIsAuthFailedAndThePasswordIsNeverEchoed) {
  const std::string wrong = "Wr0ng-Pa55w0rd-7f3e";
  Client c(as("root", wrong));
  const auto start = Clock::now();
  auto got = c.get("/auth/root").timeout(5s).wait();
  ASSERT_FALSE(got.ok());
  EXPECT_LE(ms_since(start), 5500);
  const Status& st = got.status();
  std::cout << "[ info     ] wrong password: " << st.to_string() << std::endl;
  EXPECT_TRUE(st.is(Errc::kAuthFailed)) << st.to_string();
  EXPECT_EQ(st.message().find(wrong), std::string::npos) << st.message();
  EXPECT_EQ(st.to_string().find(wrong), std::string::npos) << st.to_string();

  auto put = c.put("/auth/x", "1").timeout(5s).wait();
  ASSERT_FALSE(put.ok());
  EXPECT_TRUE(put.status().is(Errc::kAuthFailed)) << put.status().to_string();
  EXPECT_FALSE(put.status().is(Errc::kOutcomeUnknown));
  EXPECT_EQ(put.status().to_string().find(wrong), std::string::npos) << put.status().to_string();
}

TEST_F(AuthTest, AWatchWithAWrongPasswordEndsWithAuthFailed) {
  const std::string wrong = "Wr0ng-Pa55w0rd-9c1d";
  Client c(as("root", wrong));
  Events ev;
  // The watch is the client's first call: nothing has authenticated yet.
  auto watcher = c.watch("/auth/", {.prefix = true}, ev.handler());
  ASSERT_TRUE(eventually([&] { return ev.err().has_value(); }, 5s)) << "the watch neither failed nor ended";
  const Status err = *ev.err();
  std::cout << "[ info     ] watch with a wrong password: " << err.to_string() << std::endl;
  EXPECT_TRUE(err.is(Errc::kAuthFailed)) << err.to_string();
  EXPECT_EQ(err.to_string().find(wrong), std::string::npos) << err.to_string();
  EXPECT_FALSE(watcher.active());
}

TEST_F(AuthTest, AWatchAsTheFirstCallOfAnAuthenticatedClientWorks) {
  Client c(as("root", "rootpw"));
  Events ev;
  // No token yet: the watch stream has to wait for authentication.
  auto watcher = c.watch("/auth/first/", {.prefix = true}, ev.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));
  Client writer(as("root", "rootpw"));
  ASSERT_TRUE(writer.put("/auth/first/a", "1").timeout(5s).wait().ok());
  ASSERT_TRUE(eventually([&] { return ev.count() == 1 || ev.err().has_value(); }, 5s));
  EXPECT_FALSE(ev.err().has_value()) << ev.err()->to_string();
  EXPECT_EQ(ev.keys(), std::vector<std::string>{"/auth/first/a"});
}

TEST_F(AuthTest, AUserIsConfinedToItsPrefix) {
  Client alice(as("alice", "alicepw"));
  auto own = alice.put("/alice/x", "1").timeout(5s).wait();
  ASSERT_TRUE(own.ok()) << own.status().to_string();
  ASSERT_TRUE(alice.get("/alice/x").timeout(5s).wait().ok());

  auto outside = alice.put("/bob/x", "1").timeout(5s).wait();
  ASSERT_FALSE(outside.ok());
  EXPECT_TRUE(outside.status().is(Errc::kPermissionDenied)) << outside.status().to_string();
  EXPECT_EQ(outside.status().code(), StatusCode::kPermissionDenied) << outside.status().to_string();
  EXPECT_FALSE(outside.status().is(Errc::kOutcomeUnknown));

  auto read_outside = alice.get("/bob/x").timeout(5s).wait();
  ASSERT_FALSE(read_outside.ok());
  EXPECT_TRUE(read_outside.status().is(Errc::kPermissionDenied)) << read_outside.status().to_string();
  EXPECT_EQ(read_outside.status().code(), StatusCode::kPermissionDenied);

  // Nothing was written outside her prefix.
  Client root(as("root", "rootpw"));
  auto check = root.get("/bob/x").timeout(5s).wait();
  ASSERT_TRUE(check.ok()) << check.status().to_string();
  EXPECT_TRUE(check->kvs.empty());

  // A watch outside her prefix is refused, clearly.
  Events ev;
  auto watcher = alice.watch("/bob/", {.prefix = true}, ev.handler());
  ASSERT_TRUE(eventually([&] { return ev.err().has_value(); }, 5s));
  const Status werr = *ev.err();
  std::cout << "[ info     ] watch outside the prefix: " << werr.to_string() << std::endl;
  EXPECT_TRUE(werr.is(Errc::kPermissionDenied) || werr.is(Errc::kWatchCanceled)) << werr.to_string();
  EXPECT_NE(lower(werr.message()).find("permission denied"), std::string::npos) << werr.to_string();
}

// ---------------------------------------------------------------------------
// Auth token expiry: simple tokens that expire after 2 s of disuse.

TEST(TokenExpiryTest, ClientReauthenticatesAndItsWatchSurvivesTokenExpiry) {
  EtcdClusterOptions co;
  // etcd 3.4: --auth-token-ttl (seconds) applies to simple tokens, which
  // expire after that long without use.
  co.extra_args = {"--auth-token", "simple", "--auth-token-ttl", "2", "--bcrypt-cost", "4"};
  auto cluster = EtcdCluster::start(co);
  std::string log;
  ASSERT_TRUE(enable_auth(*cluster, /*with_alice=*/false, log)) << log;
  constexpr auto kIdle = 3500ms;  // > TTL + the server's 1 s expiry resolution

  auto proxy = etcd::testing::FaultProxy::start(cluster->endpoint(0));
  ClientOptions o;
  o.endpoints = {proxy->endpoint()};
  o.user = "root";
  o.password = "rootpw";
  Client c(o);
  ClientOptions wo = o;
  wo.endpoints = cluster->endpoints();
  Client other(wo);  // writes without touching c's token

  // The first call authenticates (a watch as the very first call is
  // AuthTest.AWatchAsTheFirstCallOfAnAuthenticatedClientWorks).
  auto first = c.put("/tok/0", "0").timeout(5s).wait();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  Events ev;
  auto watcher = c.watch("/tok/", {.prefix = true}, ev.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));

  // Calls spaced beyond the token TTL keep working: the client
  // authenticates again when the server calls its token invalid.
  const auto retries_before = c.stats().retries;
  for (int i = 1; i <= 3; ++i) {
    std::this_thread::sleep_for(kIdle);  // deliberate idleness: let the token expire
    auto put = c.put("/tok/" + std::to_string(i), std::to_string(i)).timeout(5s).wait();
    ASSERT_TRUE(put.ok()) << "after " << i << " idle periods: " << put.status().to_string();
    auto got = c.get("/tok/" + std::to_string(i)).timeout(5s).wait();
    ASSERT_TRUE(got.ok()) << got.status().to_string();
  }
  EXPECT_GE(c.stats().retries - retries_before, 3u) << "the token never expired: is --auth-token-ttl honoured?";

  // The watch opened at the start still delivers, several TTLs later,
  // including writes by another client.
  auto late = other.put("/tok/late", "x").timeout(5s).wait();
  ASSERT_TRUE(late.ok()) << late.status().to_string();
  ASSERT_TRUE(eventually([&] { return ev.count() >= 4 || ev.err().has_value(); }, 5s));
  ASSERT_FALSE(ev.err().has_value()) << ev.err()->to_string();
  EXPECT_EQ(ev.keys(), (std::vector<std::string>{"/tok/1", "/tok/2", "/tok/3", "/tok/late"}));

  // Let the token expire again, then force the watch stream to restart:
  // the re-created watch must not be refused with the stale token.
  std::this_thread::sleep_for(kIdle);
  const auto restarts = c.stats().watch_stream_restarts;
  proxy->reset_all();
  ASSERT_TRUE(eventually([&] { return c.stats().watch_stream_restarts > restarts; }, 5s));
  auto after = other.put("/tok/after-reset", "y").timeout(5s).wait();
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  ASSERT_TRUE(eventually([&] { return ev.count() >= 5 || ev.err().has_value(); }, 10s));
  ASSERT_FALSE(ev.err().has_value()) << "the watch ended: " << ev.err()->to_string();
  EXPECT_EQ(ev.keys().back(), "/tok/after-reset");
  EXPECT_EQ(ev.count(), 5u);
  EXPECT_TRUE(watcher.active());
}

// ---------------------------------------------------------------------------
// Namespaces.

using NamespaceTest = SingleMemberTest;

TEST_F(NamespaceTest, ClientsInDifferentNamespacesDoNotSeeEachOthersKeys) {
  ClientOptions oa = options(), ob = options();
  oa.namespace_prefix = key("a/");
  ob.namespace_prefix = key("b/");
  Client a(oa), b(ob);

  ASSERT_TRUE(a.put("k", "from-a").wait().ok());
  ASSERT_TRUE(b.put("k", "from-b").wait().ok());
  ASSERT_TRUE(a.put("only-a", "1").wait().ok());

  auto ga = a.get("k").wait();
  auto gb = b.get("k").wait();
  ASSERT_TRUE(ga.ok() && gb.ok());
  ASSERT_EQ(ga->kvs.size(), 1u);
  ASSERT_EQ(gb->kvs.size(), 1u);
  EXPECT_EQ(ga->kvs[0].value, "from-a");
  EXPECT_EQ(ga->kvs[0].key, "k");
  EXPECT_EQ(gb->kvs[0].value, "from-b");
  EXPECT_TRUE(b.get("only-a").wait()->kvs.empty());

  // "Everything" means everything in the namespace.
  auto all_b = b.get("", {.prefix = true}).wait();
  ASSERT_TRUE(all_b.ok()) << all_b.status().to_string();
  ASSERT_EQ(all_b->kvs.size(), 1u);
  EXPECT_EQ(all_b->kvs[0].key, "k");
  auto all_a = a.get("", {.prefix = true}).wait();
  ASSERT_TRUE(all_a.ok());
  EXPECT_EQ(all_a->kvs.size(), 2u);

  // The raw key space holds both, under their prefixes.
  auto raw = client().get(key(""), {.prefix = true}).wait();
  ASSERT_TRUE(raw.ok());
  std::vector<std::string> raw_keys;
  for (auto& kv : raw->kvs) raw_keys.push_back(kv.key);
  EXPECT_EQ(raw_keys, (std::vector<std::string>{key("a/k"), key("a/only-a"), key("b/k")}));

  // Deleting "everything" in b leaves a alone.
  auto del = b.del("", {.prefix = true}).wait();
  ASSERT_TRUE(del.ok()) << del.status().to_string();
  EXPECT_EQ(del->deleted, 1);
  EXPECT_EQ(a.get("", {.prefix = true}).wait()->kvs.size(), 2u);
}

TEST_F(NamespaceTest, WatchInANamespaceSeesNamespaceRelativeKeys) {
  ClientOptions oa = options(), ob = options();
  oa.namespace_prefix = key("a/");
  ob.namespace_prefix = key("b/");
  Client a(oa), b(ob);

  Events ev;
  auto watcher = a.watch("dir/", {.prefix = true, .prev_kv = true}, ev.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));
  Events all;
  auto everything = a.watch("", {.prefix = true}, all.handler());
  ASSERT_TRUE(everything.wait_created(Clock::now() + 5s));

  ASSERT_TRUE(b.put("dir/x", "b").wait().ok());                  // other namespace: unseen
  ASSERT_TRUE(a.put("dir/x", "1").wait().ok());                  // seen as dir/x
  ASSERT_TRUE(client().put(key("a/dir/y"), "raw").wait().ok());  // written raw, seen as dir/y
  ASSERT_TRUE(a.put("dir/x", "2").wait().ok());
  ASSERT_TRUE(a.put("elsewhere", "3").wait().ok());  // outside dir/
  ASSERT_TRUE(eventually([&] { return ev.count() >= 3 && all.count() >= 4; }, 5s));
  EXPECT_EQ(ev.keys(), (std::vector<std::string>{"dir/x", "dir/y", "dir/x"}));
  {
    std::lock_guard lock(ev.mu);
    ASSERT_TRUE(ev.events[2].prev_kv.has_value());
    EXPECT_EQ(ev.events[2].prev_kv->key, "dir/x");
    EXPECT_EQ(ev.events[2].prev_kv->value, "1");
  }
  EXPECT_EQ(all.keys(), (std::vector<std::string>{"dir/x", "dir/y", "dir/x", "elsewhere"}));
  EXPECT_FALSE(ev.err().has_value());
  EXPECT_FALSE(all.err().has_value());
}

}  // namespace
}  // namespace etcd::test
