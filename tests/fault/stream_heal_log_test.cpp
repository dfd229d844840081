// The log sink (etcd/log.h) hears the client's long-lived streams heal: a
// watch stream and a lease keep-alive stream cut by the network each give a
// warning when they break and an info record when they are back, from the
// source "client" and the endpoint, and the watch goes on delivering.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "etcd/log.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

// The records the sink received.
class StreamHealLog {
 public:
  LogSink sink() {
    return [this](const LogRecord& r) {
      std::lock_guard lock(mu_);
      seen_.push_back(r);
      cv_.notify_all();
    };
  }
  // The first record at `level` whose message has `part`, waiting up to `timeout`.
  std::optional<LogRecord> wait_for(LogLevel level, const std::string& part, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    std::optional<LogRecord> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& r : seen_) {
        if (r.level == level && r.message.find(part) != std::string::npos) {
          found = r;
          return true;
        }
      }
      return false;
    });
    return found;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<LogRecord> seen_;
};

class StreamHealLogTest : public ProxiedSingleMemberTest {
 protected:
  void SetUp() override {
    ProxiedSingleMemberTest::SetUp();
    set_log_sink(log_.sink(), LogLevel::kInfo);
  }
  void TearDown() override {
    set_log_sink(nullptr);
    ProxiedSingleMemberTest::TearDown();
  }
  StreamHealLog log_;
};

TEST_F(StreamHealLogTest, AWatchStreamAndAKeepAliveStreamReportTheBreakAndTheHeal) {
  Client& c = proxied_client();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> seen;
  // From the revision after now: the first put is seen even if it commits
  // before the watch is created.
  auto now = c.get(key("w/")).wait();
  ASSERT_TRUE(now.ok()) << now.status().to_string();
  auto watcher =
      c.watch(key("w/"), {.prefix = true, .start_revision = now->header.revision + 1}, [&](Result<WatchResponse> r) {
        if (!r.ok()) return;
        std::lock_guard lock(mu);
        for (const auto& e : r->events) seen.push_back(e.kv.key);
        cv.notify_all();
      });
  const auto saw = [&](const std::string& k) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 20s, [&] { return std::find(seen.begin(), seen.end(), k) != seen.end(); });
  };
  ASSERT_TRUE(c.put(key("w/before"), "1").wait().ok());
  ASSERT_TRUE(saw(key("w/before")));
  const auto granted_at = Clock::now();
  auto lease = c.lease(3s).wait();
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  // Renewed once: the keep-alive stream is open (it opens with the first renewal).
  ASSERT_TRUE(eventually([&] { return lease->safe_until() > granted_at + 3s + 500ms; }, 10s, 20ms));

  proxy_->reset_all();  // every connection through the proxy is cut

  const auto watch_broke = log_.wait_for(LogLevel::kWarning, "the watch stream broke", 20s);
  ASSERT_TRUE(watch_broke.has_value());
  EXPECT_EQ(watch_broke->source.kind, "client");
  EXPECT_EQ(watch_broke->source.name, proxy_->endpoint());
  EXPECT_FALSE(watch_broke->status.ok());
  const auto watch_back = log_.wait_for(LogLevel::kInfo, "the watch stream is back", 20s);
  ASSERT_TRUE(watch_back.has_value());
  EXPECT_EQ(watch_back->source.kind, "client");
  EXPECT_EQ(watch_back->source.name, proxy_->endpoint());
  EXPECT_TRUE(watch_back->status.ok());

  const auto lease_broke = log_.wait_for(LogLevel::kWarning, "the lease keep-alive stream broke", 20s);
  ASSERT_TRUE(lease_broke.has_value());
  EXPECT_EQ(lease_broke->source.kind, "client");
  EXPECT_EQ(lease_broke->source.name, proxy_->endpoint());
  const auto lease_back = log_.wait_for(LogLevel::kInfo, "the lease keep-alive stream is back", 20s);
  ASSERT_TRUE(lease_back.has_value());
  EXPECT_EQ(lease_back->source.name, proxy_->endpoint());

  // Healed: the watch delivers what was written after the cut, and the lease lives.
  ASSERT_TRUE(c.put(key("w/after"), "2").wait().ok());
  EXPECT_TRUE(saw(key("w/after")));
  auto ttl = c.lease_time_to_live(lease->id()).wait();
  ASSERT_TRUE(ttl.ok()) << ttl.status().to_string();
  EXPECT_GT(ttl->ttl, 0);
}

}  // namespace
}  // namespace etcd::test
