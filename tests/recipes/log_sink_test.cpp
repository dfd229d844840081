// The log sink (etcd/log.h) against a real etcd member: each kind of
// background event reaches it — a retried call, a lost hold, a resync after
// a compaction, a dead letter — on the client's callback thread, and a
// sink that throws is contained.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "etcd/log.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/path_children_cache.h"
#include "etcd/recipes/work_queue.h"
#include "etcd/session.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

// Records the sink received, and the name of the thread each ran on.
class LogCollector {
 public:
  struct Seen {
    LogRecord record;
    std::string thread;
  };
  LogSink sink() {
    return [this](const LogRecord& r) {
      char name[32] = {};
      pthread_getname_np(pthread_self(), name, sizeof name);
      std::lock_guard lock(mu_);
      seen_.push_back(Seen{r, name});
      cv_.notify_all();
    };
  }
  // The first record that `pred` accepts, waiting up to `timeout`.
  std::optional<Seen> wait_for(const std::function<bool(const LogRecord&)>& pred,
                               std::chrono::milliseconds timeout = 20s) {
    std::unique_lock lock(mu_);
    std::optional<Seen> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& s : seen_) {
        if (pred(s.record)) {
          found = s;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  size_t size() {
    std::lock_guard lock(mu_);
    return seen_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Seen> seen_;
};

bool log_text_contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class LogSinkTest : public ProxiedSingleMemberTest {
 protected:
  void SetUp() override {
    ProxiedSingleMemberTest::SetUp();
    set_log_sink(collector_.sink(), LogLevel::kInfo);
  }
  void TearDown() override {
    set_log_sink(nullptr);
    ProxiedSingleMemberTest::TearDown();
  }
  LogCollector collector_;
};

TEST_F(LogSinkTest, ALostHoldIsAWarningOfItsRecipe) {
  const std::string name = key("lock");
  auto session = Session::create(client(), SessionOptions{.ttl = std::chrono::seconds(30)});
  ASSERT_TRUE(session->start().wait().ok());
  recipes::RecipeOptions options;
  options.session = session;
  recipes::DistributedMutex mutex(client(), name, options);
  auto hold = mutex.acquire().timeout(10s).wait().value();
  ASSERT_TRUE(client().lease_revoke(session->lease_id()).wait().ok());
  auto seen = collector_.wait_for([&](const LogRecord& r) {
    return r.source.kind == "DistributedMutex" && r.source.name == name && r.level == LogLevel::kWarning;
  });
  ASSERT_TRUE(seen.has_value()) << "no record of the loss";
  EXPECT_TRUE(log_text_contains(seen->record.to_string(), "lost")) << seen->record.to_string();
  EXPECT_EQ(seen->thread.rfind("etcd-callback", 0), 0u) << "ran on " << seen->thread;
  EXPECT_FALSE(hold.is_held());
}

TEST_F(LogSinkTest, ACallRetriedAfterTheMemberWasUnreachableIsLoggedByTheClient) {
  Client& c = proxied_client();
  proxy_->blackhole_then_reset();
  std::thread restore([this] {
    std::this_thread::sleep_for(300ms);
    proxy_->restore();
  });
  auto got = c.get(key("k")).timeout(15s).wait();
  restore.join();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  auto seen = collector_.wait_for([&](const LogRecord& r) {
    return r.source.kind == "client" && r.source.name == proxy_->endpoint() && log_text_contains(r.message, "retrying");
  });
  ASSERT_TRUE(seen.has_value()) << "no record of the retry";
  EXPECT_EQ(seen->record.level, LogLevel::kInfo);
  EXPECT_FALSE(seen->record.status.ok()) << "the failure that was retried";
  EXPECT_EQ(seen->thread.rfind("etcd-callback", 0), 0u) << "ran on " << seen->thread;
}

TEST_F(LogSinkTest, AResyncAfterACompactionIsLogged) {
  const std::string path = key("cache");
  ASSERT_TRUE(client().put(path + "/a", "1").wait().ok());
  recipes::PathChildrenCache cache(proxied_client(), path);
  cache.start();
  ASSERT_TRUE(cache.wait_initialized().timeout(10s).wait().ok());
  proxy_->cut();
  ASSERT_TRUE(client().put(path + "/b", "2").wait().ok());
  auto probe = client().put(key("probe"), "x").wait();
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(client().compact(probe->header.revision).wait().ok());
  proxy_->restore();
  auto seen = collector_.wait_for(
      [&](const LogRecord& r) {
        return r.source.kind == "PathChildrenCache" && r.source.name == path &&
               log_text_contains(r.message, "read again");
      },
      30s);
  ASSERT_TRUE(seen.has_value()) << "no record of the resync";
  EXPECT_EQ(seen->record.level, LogLevel::kInfo);
  EXPECT_TRUE(log_text_contains(seen->record.message, "1 differences")) << seen->record.message;
}

TEST_F(LogSinkTest, ADeadLetterIsAWarningAndAThrowingSinkIsContained) {
  const std::string name = key("wq");
  recipes::DistributedWorkQueue wq(client(), name, {.visibility_timeout = 5s, .max_deliveries = 1});
  (void)wq.enqueue("poison-ish").wait().value();
  auto item = wq.receive().timeout(10s).wait().value();
  EXPECT_TRUE(item.requeue().wait().value());
  EXPECT_FALSE(wq.receive_for(1500ms).has_value()) << "delivered too often: dead-lettered, not delivered";
  auto seen = collector_.wait_for([&](const LogRecord& r) {
    return r.source.kind == "DistributedWorkQueue" && log_text_contains(r.message, "dead letters");
  });
  ASSERT_TRUE(seen.has_value()) << "no record of the dead letter";
  EXPECT_EQ(seen->record.level, LogLevel::kWarning);
  EXPECT_TRUE(log_text_contains(seen->record.message, item.id())) << seen->record.message;

  // A sink that throws: the library goes on, and so do later records.
  std::atomic<int> thrown{0};
  set_log_sink([&](const LogRecord&) {
    ++thrown;
    throw std::runtime_error("a sink that fails");
  });
  (void)wq.enqueue("again").wait().value();
  auto second = wq.receive().timeout(10s).wait().value();
  EXPECT_TRUE(second.requeue().wait().value());
  EXPECT_FALSE(wq.receive_for(1500ms).has_value());
  ASSERT_TRUE(eventually([&] { return thrown.load() >= 1; }, 10s)) << "the throwing sink never ran";
  set_log_sink(collector_.sink());
  (void)wq.enqueue("third").wait().value();
  auto third = wq.receive().timeout(10s).wait().value();
  EXPECT_TRUE(third.requeue().wait().value());
  EXPECT_FALSE(wq.receive_for(1500ms).has_value());
  EXPECT_TRUE(
      collector_.wait_for([&](const LogRecord& r) { return log_text_contains(r.message, third.id()); }).has_value());
  EXPECT_EQ(wq.dead_letters().wait().value().size(), 3u);
}

TEST(LogRecordTest, OneLineWithTimeLevelSourceMessageAndStatus) {
  LogRecord r{LogLevel::kWarning, std::chrono::system_clock::time_point(std::chrono::milliseconds(1767323045678)),
              LogSource{"DistributedMutex", "/locks/a"}, "mutex lost",
              Status(StatusCode::kAborted, "the key was deleted")};
  EXPECT_EQ(r.to_string().rfind("2026-01-02T03:04:05.678Z warning DistributedMutex[/locks/a]: mutex lost: ", 0), 0u)
      << r.to_string();
  EXPECT_TRUE(log_text_contains(r.to_string(), "the key was deleted"));
  EXPECT_EQ(to_string(LogLevel::kDebug), "debug");
  EXPECT_EQ(to_string(LogLevel::kError), "error");
}

}  // namespace
}  // namespace etcd::test
