// Kept leases under a slow and under a silent link: thousands of leases
// survive answers that are slow but within their TTL, over several
// keep-alive streams and without a stream being given up; a lease whose TTL
// passed without a confirmed renewal is reported lost, and never before
// safe_until().
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>

#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

class LeaseKeepAliveFaultTest : public ProxiedSingleMemberTest {
 protected:
  // `n` leases of `ttl`, granted at most 250 at a time; fails the test (and
  // returns fewer) if a grant fails or does not complete in time.
  static std::vector<Lease> grant(Client& c, int n, std::chrono::seconds ttl) {
    struct Got {
      std::mutex mu;
      std::condition_variable cv;
      std::vector<Lease> leases;
      int done = 0;
      std::optional<Status> error;
    };
    auto got = std::make_shared<Got>();
    for (int i = 0; i < n; ++i) {
      c.lease(ttl).timeout(20s).then([got](Result<Lease> r) {
        std::lock_guard lock(got->mu);
        if (r.ok()) {
          got->leases.push_back(std::move(r).value());
        } else if (!got->error) {
          got->error = r.status();
        }
        ++got->done;
        got->cv.notify_all();
      });
      if ((i + 1) % 250 == 0 || i + 1 == n) {
        std::unique_lock lock(got->mu);
        const bool all = got->cv.wait_for(lock, 30s, [&] { return got->done == i + 1; });
        EXPECT_TRUE(all) << got->done << " of " << i + 1 << " grants completed";
        EXPECT_FALSE(got->error.has_value()) << got->error->to_string();
        if (!all || got->error) break;
      }
    }
    std::lock_guard lock(got->mu);
    return std::move(got->leases);
  }

  // `n` leases of `ttl` through a link that delays every chunk by `delay`
  // each way, for `ttls` TTLs: none lost, none given up, no stream restart,
  // every lease renewed over the slow link and still known to etcd.
  void expect_kept_through_slow_link(int n, std::chrono::seconds ttl, std::chrono::milliseconds delay, int ttls) {
    Client c(proxied());
    auto leases = grant(c, n, ttl);
    ASSERT_EQ(leases.size(), static_cast<std::size_t>(n));
    std::atomic<int> lost{0};
    std::vector<Subscription> subs;
    for (auto& l : leases) {
      ASSERT_EQ(l.ttl(), ttl);
      subs.push_back(l.on_lost([&lost](const Status&) { lost.fetch_add(1); }));
    }
    // Several streams, none carrying more than its share.
    EXPECT_EQ(c.stats().lease_streams, (n + 255) / 256u);
    EXPECT_EQ(c.stats().leases_kept, static_cast<uint64_t>(n));

    // Every lease renewed once before the link slows down.
    const auto renewed_by = [&](Deadline t) {
      return std::ranges::all_of(leases, [&](const Lease& l) { return l.safe_until() > t + ttl - 1s; });
    };
    const auto granted_by = Clock::now();
    ASSERT_TRUE(eventually([&] { return renewed_by(granted_by); }, 10s, 50ms));

    proxy_->set_delay(delay);
    const auto slowed_at = Clock::now();
    // TTLs of slow answers: every lease must be renewed over and over.
    Deadline last_check = slowed_at;
    while (Clock::now() < slowed_at + ttls * ttl) {
      std::this_thread::sleep_for(500ms);
      const auto now = Clock::now();
      ASSERT_EQ(lost.load(), 0) << "a lease was lost " << ms_between(slowed_at, now) << " ms into the slow link ("
                                << c.stats().lease_stream_restarts << " stream restarts)";
      for (auto& l : leases) ASSERT_TRUE(l.alive()) << "lease " << l.id() << " is no longer alive";
      last_check = now;
    }
    // Renewals sent under the delay were confirmed: each lease is safe for
    // more than what it was granted before the link slowed.
    EXPECT_TRUE(renewed_by(slowed_at + ttl)) << "some lease had no renewal confirmed over the slow link";
    EXPECT_EQ(c.stats().lease_stream_restarts, 0u) << "a keep-alive stream was given up while it was merely slow";
    EXPECT_EQ(c.stats().leases_kept, static_cast<uint64_t>(n));
    // etcd agrees: every lease still exists.
    auto listed = client().lease_leases().timeout(10s).wait();
    ASSERT_TRUE(listed.ok()) << listed.status().to_string();
    std::set<int64_t> on_server(listed->leases.begin(), listed->leases.end());
    for (auto& l : leases) EXPECT_TRUE(on_server.contains(l.id())) << "etcd no longer has lease " << l.id();
    report_timing("keepalive.slow_link_checked_for", ms_between(slowed_at, last_check));

    proxy_->pass();
    for (auto& l : leases) l.detach();
  }
};

TEST_F(LeaseKeepAliveFaultTest, ThousandsOfLeasesSurviveSlowAnswersWithinTheirTtlWithoutAStreamRestart) {
  // Each way: a renewal's answer comes back 1.2 s after it was sent (plus
  // etcd's own time) instead of within a millisecond: slow, but within the
  // time a stream may stay silent.
  expect_kept_through_slow_link(2000, 6s, 600ms, 3);
}

TEST_F(LeaseKeepAliveFaultTest, WithNowhereBetterAnswersSlowerThanAThirdOfTheTtlKeepTheLeases) {
  // A round trip of 2.4 s against a 6 s TTL: longer than the third of the
  // TTL after which a stream moves to another member, but with one
  // endpoint there is none, and a renewal answered within half the TTL
  // renews in time: the stream is kept and so are the leases.
  expect_kept_through_slow_link(50, 6s, 1200ms, 2);
}

TEST_F(LeaseKeepAliveFaultTest, ALeaseWhoseTtlPassedWithoutAConfirmedRenewalIsLostAndNotBeforeSafeUntil) {
  constexpr auto kTtl = 3s;
  Client c(proxied());
  auto granted = c.lease(kTtl).timeout(10s).wait();
  ASSERT_TRUE(granted.ok()) << granted.status().to_string();
  Lease lease = std::move(granted).value();
  ASSERT_EQ(lease.ttl(), kTtl);
  const int64_t id = lease.id();
  const auto first = lease.safe_until();
  ASSERT_TRUE(eventually([&] { return lease.safe_until() > first; }, 5s)) << "no renewal confirmed";

  Mailbox<std::pair<Status, Deadline>> lost;
  auto sub = lease.on_lost([&](const Status& why) { lost.put({why, Clock::now()}); });
  proxy_->blackhole();
  const auto blackholed_at = Clock::now();

  // While the lease claims to be safe, etcd must still have it: a TTL
  // query sent before safe_until() never finds it expired.
  Deadline last_safe{};
  int checked = 0;
  while (lease.alive()) {
    const Deadline safe = lease.safe_until();
    if (safe == Deadline{}) break;
    last_safe = std::max(last_safe, safe);
    const auto asked_at = Clock::now();
    if (asked_at < safe) {
      auto t = client().lease_time_to_live(id).timeout(5s).wait();
      ASSERT_TRUE(t.ok()) << t.status().to_string();
      EXPECT_NE(t->ttl, -1) << "etcd expired the lease " << ms_between(asked_at, safe)
                            << " ms before the client's safe_until()";
      ++checked;
    }
    ASSERT_LT(Clock::now(), blackholed_at + 2 * kTtl) << "the lease still claims to be alive";
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_GT(checked, 0);
  auto why = lost.take(5s);
  ASSERT_TRUE(why.has_value()) << "on_lost did not run";
  EXPECT_TRUE(why->first.is(Errc::kLeaseExpired)) << why->first.to_string();
  EXPECT_FALSE(lease.alive());
  EXPECT_TRUE(lease.lost_token().stop_requested());
  // Reported once the TTL passed, not before the promise ran out, and
  // promptly (within a keeper tick or two of the expiry).
  EXPECT_GE(why->second, last_safe) << "lost " << ms_between(why->second, last_safe) << " ms before safe_until()";
  EXPECT_LE(why->second, last_safe + 250ms + 500ms);
  EXPECT_LE(why->second - blackholed_at, kTtl + 500ms);
  report_timing("keepalive.loss_after_safe_until", ms_between(last_safe, why->second));
  // The silent stream was given up (so a healthy member could have taken
  // over), and etcd expired the lease too.
  EXPECT_GE(c.stats().lease_stream_restarts, 1u);
  EXPECT_TRUE(eventually(
      [&] {
        auto t = client().lease_time_to_live(id).timeout(5s).wait();
        return t.ok() && t->ttl == -1;
      },
      10s, 100ms));
  proxy_->restore();
}

}  // namespace
}  // namespace etcd::test
