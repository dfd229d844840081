// The keep-alive schedule: when leases renew, how many a stream carries, how
// bursts are spread and when a stream counts as dead.
#include "renewal_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace etcd::detail {
namespace {

using namespace std::chrono_literals;
using RS = RenewalSchedule;

TEST(RenewalScheduleTest, RenewsEveryThirdOfTheTtl) {
  EXPECT_EQ(RS::interval(3s), Clock::duration(1s));
  EXPECT_EQ(RS::interval(10s), std::chrono::duration_cast<Clock::duration>(10s) / 3);
  EXPECT_EQ(RS::interval(60s), Clock::duration(20s));
  // Two more tries remain before the TTL runs out, whatever the TTL.
  for (auto ttl : {2s, 5s, 10s, 30s, 3600s}) EXPECT_LE(3 * RS::interval(ttl), Clock::duration(ttl));
}

TEST(RenewalScheduleTest, FirstRenewalsOfLeasesGrantedTogetherSpreadOverHalfTheInterval) {
  const Deadline t0{};
  const auto ttl = 10s;
  const auto full = RS::interval(ttl);
  std::vector<Clock::duration> offsets;
  // etcd's lease ids of one member are nearly consecutive.
  const int64_t base = 0x694d7a1f2c3b0000;
  for (int64_t i = 0; i < 2000; ++i) offsets.push_back(RS::first_renewal(t0, ttl, base + i) - t0);
  for (auto o : offsets) {
    EXPECT_GE(o, full / 2);
    EXPECT_LE(o, full);
  }
  // Spread evenly: each tenth of the window holds roughly a tenth of them.
  std::vector<int> buckets(10, 0);
  for (auto o : offsets) {
    const auto b = static_cast<std::size_t>((o - full / 2) * 10 / (full / 2 + Clock::duration(1)));
    ++buckets.at(b);
  }
  for (int n : buckets) {
    EXPECT_GT(n, 140);
    EXPECT_LT(n, 260);
  }
  // Fixed per lease: the same id always gets the same point.
  EXPECT_EQ(RS::first_renewal(t0, ttl, base + 7), RS::first_renewal(t0, ttl, base + 7));
}

TEST(RenewalScheduleTest, SilenceLimitIsAThirdOfTheShortestTtlWithAnotherMemberAndAtLeastOneSecond) {
  EXPECT_EQ(RS::silence_limit(2s, true), RS::kMinSilence);
  EXPECT_EQ(RS::silence_limit(6s, true), Clock::duration(2s));
  EXPECT_EQ(RS::silence_limit(30s, true), Clock::duration(10s));
  // A stream declared dead after the limit still leaves its renewal, sent
  // a third of the TTL after the last confirmed one, time to go elsewhere.
  for (auto ttl : {3s, 6s, 10s, 60s}) {
    EXPECT_LT(RS::interval(ttl) + RS::silence_limit(ttl, true), Clock::duration(ttl));
  }
}

TEST(RenewalScheduleTest, WithNowhereBetterASlowMemberIsWaitedForHalfTheTtl) {
  EXPECT_EQ(RS::silence_limit(1s, false), RS::kMinSilence);
  EXPECT_EQ(RS::silence_limit(6s, false), Clock::duration(3s));
  EXPECT_EQ(RS::silence_limit(30s, false), Clock::duration(15s));
  for (auto ttl : {3s, 6s, 10s, 60s}) {
    // An answer slower than a third of the TTL (the limit with another
    // member to go to) but within half of it still renews in time...
    EXPECT_GT(RS::silence_limit(ttl, false), RS::interval(ttl));
    EXPECT_GE(RS::silence_limit(ttl, false), RS::silence_limit(ttl, true));
    // ...and a stream given up then leaves its renewal time on a fresh one.
    EXPECT_LT(RS::interval(ttl) + RS::silence_limit(ttl, false), Clock::duration(ttl));
  }
}

TEST(RenewalScheduleTest, OnlySilenceEndsAStreamNotASlowAnswer) {
  const Deadline t0{};
  const auto limit = RS::silence_limit(9s, true);  // 3 s
  // The oldest renewal has waited 10 s, but answers kept coming: alive.
  EXPECT_FALSE(RS::silent_too_long(t0 + 10s, t0, t0 + 9500ms, limit));
  // Nothing came back for longer than the limit since the renewal was sent.
  EXPECT_TRUE(RS::silent_too_long(t0 + 10s, t0 + 6s, t0 + 1s, limit));
  // A renewal sent after a long quiet period counts from its own send time.
  EXPECT_FALSE(RS::silent_too_long(t0 + 10s, t0 + 8s, t0, limit));
  EXPECT_TRUE(RS::silent_too_long(t0 + 11100ms, t0 + 8s, t0, limit));
}

TEST(RenewalScheduleTest, SendsPerTickAreTwiceTheSteadyRateSoABacklogDrains) {
  EXPECT_EQ(RS::sends_per_tick(0), RS::kMinSendsPerTick);
  EXPECT_EQ(RS::sends_per_tick(3.2), RS::kMinSendsPerTick);
  // 256 leases of a 2 s TTL: 38.4 renewals due per 100 ms tick.
  const double due = 256 * (std::chrono::duration<double>(RS::kTick) / std::chrono::duration<double>(RS::interval(2s)));
  EXPECT_EQ(RS::sends_per_tick(due), 77u);
  // Every lease of a stream due at once (after its predecessor died) goes
  // out within half an interval.
  const std::size_t leases = RS::kLeasesPerStream;
  const auto interval = RS::interval(10s);
  const double per_tick = static_cast<double>(leases) * (std::chrono::duration<double>(RS::kTick) /
                                                         std::chrono::duration<double>(interval));
  const auto ticks = (leases + RS::sends_per_tick(per_tick) - 1) / RS::sends_per_tick(per_tick);
  EXPECT_LE(RS::kTick * static_cast<int>(ticks), interval / 2);
}

TEST(RenewalScheduleTest, LeasesFillStreamsUpToTheBoundThenOpenAnother) {
  std::vector<std::size_t> loads;
  EXPECT_EQ(RS::pick_stream(loads), 0u);
  // 10,000 leases land on ceil(10,000 / 256) streams, none above the bound.
  for (int i = 0; i < 10000; ++i) {
    const auto s = RS::pick_stream(loads);
    if (s == loads.size()) loads.push_back(0);
    ++loads[s];
  }
  EXPECT_EQ(loads.size(), (10000 + RS::kLeasesPerStream - 1) / RS::kLeasesPerStream);
  EXPECT_LE(*std::ranges::max_element(loads), RS::kLeasesPerStream);
  // A stream that emptied is refilled before a new one opens.
  loads = {RS::kLeasesPerStream, 3, RS::kLeasesPerStream};
  EXPECT_EQ(RS::pick_stream(loads), 1u);
  // At the cap on streams, the least loaded one takes it.
  loads.assign(RS::kMaxStreams, RS::kLeasesPerStream + 5);
  loads[17] = RS::kLeasesPerStream + 1;
  EXPECT_EQ(RS::pick_stream(loads), 17u);
}

}  // namespace
}  // namespace etcd::detail
