// Fast failover: a call whose member cannot answer it ends as soon as the
// client can tell (the call watch, src/client/call_watch.h), not at its
// deadline — with the raft leader SIGKILLed under a writer that talks to it
// or to a surviving follower, and with the etcd leader paused while an
// election's leader resigns.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "etcd/recipes/election.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using Ms = std::chrono::milliseconds;

class FastFailoverTest : public ThreeMemberTest {
 protected:
  // Sequential writes through a client on the leader or on a follower; the
  // leader is SIGKILLed. Checks that writes go on within a check interval
  // (plus slack) of the cluster's new leader, instead of one stranded write
  // holding the writer until its deadline, and that every failed write is
  // reported as such (outcome unknown, or refused before it was applied).
  enum class Fault { kKill, kPause };
  void writes_across_a_leader_fault(bool via_leader, Fault fault) {
    const int leader = cluster_->wait_for_leader(10s);
    const int first = via_leader ? leader : (leader + 1) % cluster_->size();
    Client c(options_starting_at(first));
    ASSERT_TRUE(c.put("/ff/k", "warm").wait().ok());
    ASSERT_EQ(c.current_endpoint(), cluster_->endpoint(first));
    const auto interval = c.options().retry.member_check_interval;

    struct Outcome {
      Clock::time_point start, end;
      Status status;
    };
    std::mutex mu;
    std::vector<Outcome> writes;
    std::atomic<bool> stop{false};
    // A deadline far beyond an election: only the call watch can end a
    // stranded write early.
    constexpr auto kWriteTimeout = 10s;
    std::thread writer([&] {
      for (int i = 0; !stop.load(); ++i) {
        const auto start = Clock::now();
        auto r = c.put("/ff/k", std::to_string(i)).timeout(kWriteTimeout).wait();
        std::lock_guard lock(mu);
        writes.push_back({start, Clock::now(), r.status()});
      }
    });
    std::this_thread::sleep_for(Ms(200));
    const auto kill_at = Clock::now();
    if (fault == Fault::kKill) {
      cluster_->kill(leader);
    } else {
      cluster_->pause(leader);
    }
    const auto killed = Clock::now();
    // The harness's leader poll skips a paused member.
    cluster_->wait_for_leader(10s);
    const auto elected = Clock::now();
    const bool recovered = eventually(
        [&] {
          std::lock_guard lock(mu);
          return std::any_of(writes.begin(), writes.end(),
                             [&](const Outcome& w) { return w.status.ok() && w.start >= killed; });
        },
        15s, Ms(5));
    stop = true;
    writer.join();
    if (fault == Fault::kPause) cluster_->resume(leader);
    ASSERT_TRUE(recovered) << "no write succeeded within 15 s of the fault";

    long long gap = 0;
    Clock::time_point last_ok{};
    Clock::time_point first_ok_after{};
    for (const auto& w : writes) {
      if (!w.status.ok()) {
        EXPECT_TRUE(w.status.is(Errc::kOutcomeUnknown) || w.status.is(Errc::kNoLeader) ||
                    w.status.code() == StatusCode::kUnavailable)
            << w.status.to_string();
        continue;
      }
      if (last_ok != Clock::time_point{}) gap = std::max(gap, ms_between(last_ok, w.end));
      last_ok = w.end;
      if (first_ok_after == Clock::time_point{} && w.start >= killed) first_ok_after = w.end;
    }
    const std::string what = std::string(fault == Fault::kKill ? "leader_kill" : "leader_pause") +
                             (via_leader ? ".via_leader" : ".via_follower");
    report_timing(what + ".new_leader_after_fault", ms_between(kill_at, elected));
    report_timing(what + ".longest_gap", gap);
    report_timing(what + ".recovered_after_new_leader", ms_between(elected, first_ok_after));
    // The new leader is seen by polling (20 ms); a stranded write is given
    // up within 1.5 check intervals of the term change, or, on a member that
    // stopped answering, once its check went unanswered.
    const long long allowed =
        3 * interval.count() / 2 +
        (fault == Fault::kPause && via_leader ? c.options().retry.member_check_timeout.count() : 0) + 500;
    EXPECT_LE(ms_between(elected, first_ok_after), allowed) << "writes resumed long after the cluster had a new leader";
    EXPECT_LE(gap, ms_between(kill_at, elected) + allowed + 100);
  }
};

TEST_F(FastFailoverTest, WritesThroughTheDyingLeaderResumeRightAfterTheElection) {
  writes_across_a_leader_fault(/*via_leader=*/true, Fault::kKill);
}

// A write in flight when the leader dies was usually in the followers' logs
// already and commits with the next leader; one forwarded after the death is
// lost, and etcd would hold it for its request timeout.
TEST_F(FastFailoverTest, WritesThroughAFollowerResumeRightAfterTheElection) {
  writes_across_a_leader_fault(/*via_leader=*/false, Fault::kKill);
}

// A paused leader strands every write a follower forwards to it (its
// connections stay open), which makes that case certain.
TEST_F(FastFailoverTest, WritesThroughAFollowerOfAPausedLeaderResumeRightAfterTheElection) {
  writes_across_a_leader_fault(/*via_leader=*/false, Fault::kPause);
}

// Through the paused leader itself: nothing fails, nothing arrives; the
// check goes unanswered.
TEST_F(FastFailoverTest, WritesThroughAPausedLeaderResumeSoonAfterTheElection) {
  writes_across_a_leader_fault(/*via_leader=*/true, Fault::kPause);
}

// The shape of etcd-io/etcd#14641: the etcd leader stops answering without closing
// its connections while the election's leader, whose client talks to it,
// resigns. The resign's delete must not hold the waiting candidate (on a
// client of another member) out until the delete's deadline.
TEST_F(FastFailoverTest, ResignWhileTheEtcdLeaderIsPausedLetsTheNextCandidateLeadSoon) {
  const int leader = cluster_->wait_for_leader(10s);
  Client a(options_starting_at(leader));
  Client b(options_starting_at((leader + 1) % cluster_->size()));
  recipes::LeaderLatch first(a, "/ff/election", "a");
  recipes::LeaderLatch second(b, "/ff/election", "b");
  first.start();
  ASSERT_TRUE(first.await_for(10s));
  second.start();
  ASSERT_TRUE(eventually([&] {
    auto p = second.participants().wait();
    return p.ok() && p->size() == 2;
  }));

  const auto paused_at = Clock::now();
  cluster_->pause(leader);
  Result<bool> resigned = false;
  Clock::time_point resign_returned{};
  std::thread resigner([&] {
    resigned = first.resign().wait();
    resign_returned = Clock::now();
  });
  const bool led = second.await_for(15s);
  const auto led_at = Clock::now();
  resigner.join();
  cluster_->resume(leader);
  ASSERT_TRUE(led) << "the waiting candidate never led";
  report_timing("paused_leader.next_candidate_led_after_pause", ms_between(paused_at, led_at));
  report_timing("paused_leader.resign_returned_after_pause", ms_between(paused_at, resign_returned));
  EXPECT_TRUE(resigned.ok()) << resigned.status().to_string();
  // An election (1-2 timeouts, 250 ms here) plus one check interval and one
  // check timeout, with slack for a loaded machine; the delete's deadline
  // (5 s) is far beyond.
  const auto& retry = a.options().retry;
  EXPECT_LE(ms_between(paused_at, led_at),
            2 * 250 + retry.member_check_interval.count() * 3 / 2 + retry.member_check_timeout.count() + 800);
}

}  // namespace
}  // namespace etcd::test
