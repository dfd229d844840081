// Recipes that keep trying in the background never give up on a failure a
// retry can fix: a campaign whose session's lease grant met a link that was
// held and then reset (the grant's outcome unknown) records the failure and
// contends again until the link is back, then leads.
#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <thread>

#include "etcd/recipes/election.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/transient.h"
#include "etcd/retry.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using namespace etcd::recipes;

std::string describe(const std::vector<Status>& errors) {
  std::string out;
  for (const auto& e : errors) out += "\n  " + e.to_string();
  return out.empty() ? " (none)" : out;
}

class BackgroundRetryTest : public ProxiedSingleMemberTest {
 protected:
  void SetUp() override {
    ProxiedSingleMemberTest::SetUp();
    proxied_client();  // connected before the test cuts anything
  }

  // Another client through the proxy, connected, whose calls' default
  // deadline is 300 ms: a link held for seconds fails many of them.
  Client short_deadline_client() {
    ClientOptions o = proxied();
    o.default_timeout = 300ms;
    Client c(o);
    EXPECT_TRUE(c.put(key("warm"), "up").wait().ok());
    return c;
  }

  static RecipeOptions options() {
    RecipeOptions o;
    o.session_ttl = 3s;
    return o;
  }

  // Holds the link, runs `start`, waits until what it sent first (the
  // session's lease grant) is held, then resets every connection the link
  // held: the grant fails, its outcome unknown. New connections pass.
  // A request is more bytes than the frames an idle HTTP/2 connection may
  // send meanwhile (a PING is 17, a WINDOW_UPDATE 13, a SETTINGS ack 9).
  void reset_the_link_under(const std::function<void()>& start) {
    constexpr std::uint64_t kRequestBytes = 40;
    proxy_->blackhole_then_reset();
    const auto before = proxy_->bytes_received();
    start();
    ASSERT_TRUE(eventually([&] { return proxy_->bytes_received() >= before + kRequestBytes; }, 10s))
        << "no request was sent";
    proxy_->restore();
  }

  // The first failure `r` recorded: one a retry can fix, not a loop that
  // stopped.
  template <class Recipe>
  void expect_a_retried_failure(const Recipe& r, bool outcome_unknown) {
    ASSERT_TRUE(eventually([&] { return !r.errors().empty(); }, 20s)) << "no failure was recorded";
    const Status first = r.errors().front();
    std::cout << "[          ] first failure: " << first.to_string() << std::endl;
    if (outcome_unknown) {
      EXPECT_TRUE(first.is(Errc::kOutcomeUnknown)) << first.to_string();
    }
    EXPECT_NE(classify(first), Retry::kNever) << first.to_string();
    for (const auto& e : r.errors()) EXPECT_EQ(e.message().find("stopped"), std::string::npos) << e.to_string();
  }

};

TEST_F(BackgroundRetryTest, LatchWhoseLeaseGrantMetAResetLinkKeepsContendingAndLeads) {
  LeaderLatch latch(proxied_client(), key("latch"), "a", options());
  reset_the_link_under([&] { latch.start(); });

  ASSERT_TRUE(latch.await_for(20s)) << "never led after the link came back; errors:" << describe(latch.errors());
  EXPECT_TRUE(latch.is_held());
  expect_a_retried_failure(latch, /*outcome_unknown=*/true);
  // It leads with one key: nothing from the failed attempt stays queued.
  auto participants = latch.participants().timeout(5s).wait();
  ASSERT_TRUE(participants.ok()) << participants.status().to_string();
  EXPECT_EQ(participants->size(), 1u);
}

TEST_F(BackgroundRetryTest, SelectorWhoseLeaseGrantMetAResetLinkKeepsContendingAndRunsItsTerm) {
  std::atomic<int> terms_begun{0};
  LeaderSelector selector(
      proxied_client(), key("selector"), "a",
      [&](std::stop_token stop, LeaderTerm&) {
        terms_begun.fetch_add(1);
        while (!stop.stop_requested()) std::this_thread::sleep_for(10ms);
      },
      options());
  reset_the_link_under([&] { selector.start(); });

  ASSERT_TRUE(eventually([&] { return terms_begun.load() == 1; }, 20s))
      << "no term after the link came back; errors:" << describe(selector.errors());
  EXPECT_TRUE(selector.is_held());
  expect_a_retried_failure(selector, /*outcome_unknown=*/true);
  selector.close();
}

// A wait the caller did not bound is one too: an acquire() without a
// deadline waits through the failed grant instead of failing with it.
TEST_F(BackgroundRetryTest, UnboundedMutexAcquireWaitsThroughALeaseGrantThatMetAResetLink) {
  DistributedMutex mutex(proxied_client(), key("mutex"), options());
  std::future<Result<Hold>> acquired;
  reset_the_link_under([&] { acquired = std::async(std::launch::async, [&] { return mutex.acquire().wait(); }); });

  if (acquired.wait_for(20s) != std::future_status::ready) {
    mutex.close();  // ends the acquire, so that the future can go
    FAIL() << "not acquired after the link came back; errors:" << describe(mutex.errors());
  }
  auto hold = acquired.get();
  ASSERT_TRUE(hold.ok()) << hold.status().to_string();
  EXPECT_TRUE(hold->is_held());
  expect_a_retried_failure(mutex, /*outcome_unknown=*/true);
  EXPECT_TRUE(mutex.unlock());
}

// A link held for longer than many calls' deadlines: every campaign fails
// (each failure recorded) until the link is back.
TEST_F(BackgroundRetryTest, LatchKeepsContendingWhileTheLinkIsHeldPastManyDeadlines) {
  Client short_calls = short_deadline_client();
  LeaderLatch latch(short_calls, key("latch"), "a", options());
  proxy_->blackhole_then_reset();
  latch.start();
  ASSERT_TRUE(eventually([&] { return latch.errors().size() >= 3; }, 20s))
      << "errors:" << describe(latch.errors());
  EXPECT_FALSE(latch.is_held());
  proxy_->restore();

  ASSERT_TRUE(latch.await_for(20s)) << "never led after the link came back; errors:" << describe(latch.errors());
  expect_a_retried_failure(latch, /*outcome_unknown=*/false);
}

// The presence lease tries a first grant a few times only; a transient key
// started in the background goes on trying after that.
TEST_F(BackgroundRetryTest, TransientKeyStartedInTheBackgroundIsCreatedOnceTheLinkIsBack) {
  Client short_calls = short_deadline_client();
  TransientKeyValue member(short_calls, key("member"), "me", options());
  proxy_->blackhole_then_reset();
  member.start();
  ASSERT_TRUE(eventually([&] { return member.errors().size() >= 2; }, 40s))
      << "errors:" << describe(member.errors());
  EXPECT_FALSE(member.is_held());
  proxy_->restore();

  ASSERT_TRUE(eventually([&] { return member.is_held(); }, 20s))
      << "never created after the link came back; errors:" << describe(member.errors());
  expect_a_retried_failure(member, /*outcome_unknown=*/false);
  auto kv = client().get(key("member")).wait();
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  ASSERT_EQ(kv->kvs.size(), 1u);
  EXPECT_EQ(kv->kvs[0].value, "me");
  EXPECT_EQ(kv->kvs[0].lease, member.lease());
}

}  // namespace
}  // namespace etcd::test
