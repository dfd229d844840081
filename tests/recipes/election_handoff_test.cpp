// Election turnover latency: when the leader resigns, the next candidate
// must lead promptly, also while other writes keep etcd's store moving.
//
// etcd 3.4 serves a watch whose start revision is already behind the store
// from a loop that runs only every 100 ms. A candidate that reads its
// predecessor at revision R and then watches from R+1 meets that loop
// whenever another write lands in between, and then takes up to 100 ms to
// notice that its predecessor resigned. The lock recipes' anchored wait
// avoids it, so the test measures a mutex handoff under the same writes as
// its control (as in the mutex's own
// HandoffIsPromptWhileOtherWritesLandBetweenAWaitersReadAndItsWatch) and
// allows the election no longer tail than the mutex's.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <thread>
#include "client/client_access.h"
#include "recipes/core/recipe_core.h"

#include "etcd/recipes/election.h"
#include "etcd/recipes/mutex.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedMutex;
using recipes::LeaderLatch;

// Which latch became the leader, and when (from on_is_leader listeners).
struct Elected {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<int, std::chrono::steady_clock::time_point>> queue;

  void put(int who) {
    std::lock_guard lock(mu);
    queue.emplace_back(who, std::chrono::steady_clock::now());
    cv.notify_all();
  }
  std::optional<std::pair<int, std::chrono::steady_clock::time_point>> take(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, timeout, [&] { return !queue.empty(); })) return std::nullopt;
    auto v = queue.front();
    queue.pop_front();
    return v;
  }
};

class ElectionHandoffTest : public SingleMemberTest {};

TEST_F(ElectionHandoffTest, TheNextCandidateLeadsPromptlyWhileOtherWritesLand) {
  const long baseline = etcd::detail::ClientAccess::core(client()).use_count();
  Client noisy(options());
  NoiseWriters writers(noisy, key("noise"));

  constexpr int kCandidates = 5;
  const std::string name = key("election");
  Elected elected;
  std::vector<std::unique_ptr<LeaderLatch>> latches;
  std::vector<Subscription> subs;
  for (int i = 0; i < kCandidates; ++i) {
    latches.push_back(std::make_unique<LeaderLatch>(client(), name, "c" + std::to_string(i)));
    subs.push_back(latches.back()->on_is_leader([&elected, i](int64_t) { elected.put(i); }));
  }
  const auto queued = [&] {
    GetOptions o;
    o.prefix = true;
    o.count_only = true;
    return client().get(name + "/", o).wait()->count == kCandidates;
  };
  for (auto& l : latches) l->start();
  auto first = elected.take(10s);
  ASSERT_TRUE(first.has_value());
  int leader = first->first;

  // The control: a mutex handoff (its waiter's wait is anchored), measured
  // under the same writes and the same machine load, in blocks that take
  // turns with the election's, so that a loaded machine's own tail does not
  // count against the election. (Blocks, not single turns: a pause between
  // two turnovers lets etcd's 100 ms loop catch the queued watches up, which
  // would hide the delay this test is about.)
  auto holder = std::make_unique<DistributedMutex>(client(), key("control"));
  auto waiter = std::make_unique<DistributedMutex>(client(), key("control"));
  const auto mutex_handoff = [&]() -> std::optional<double> {
    if (!holder->acquire().timeout(5s).wait().ok()) return std::nullopt;
    auto pending = waiter->acquire().timeout(5s).future();
    GetOptions o;
    o.prefix = true;
    o.count_only = true;
    if (!eventually([&] { return client().get(key("control/"), o).wait()->count == 2; })) return std::nullopt;
    std::this_thread::sleep_for(5ms);  // the waiter reads its predecessor and watches it
    const auto released = std::chrono::steady_clock::now();
    if (!holder->unlock()) return std::nullopt;
    if (!pending.get().ok()) return std::nullopt;
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - released).count();
    if (!waiter->unlock()) return std::nullopt;
    return took;
  };

  constexpr int kBlocks = 3;
  constexpr int kPerBlock = 20;
  constexpr int kRounds = kBlocks * kPerBlock;
  std::vector<double> election_ms, mutex_ms;
  const auto measure = [&] {
    election_ms.clear();
    mutex_ms.clear();
    for (int b = 0; b < kBlocks; ++b) {
      for (int i = 0; i < kPerBlock; ++i) {
        ASSERT_TRUE(eventually(queued));
        std::this_thread::sleep_for(5ms);  // the queued candidates read their predecessors and watch them
        ASSERT_TRUE(latches[leader]->is_held());
        const auto resigned = std::chrono::steady_clock::now();
        auto r = latches[leader]->resign().wait();
        ASSERT_TRUE(r.ok() && *r) << (r.ok() ? "lost" : r.status().to_string());
        auto next = elected.take(5s);
        ASSERT_TRUE(next.has_value()) << "nobody took over";
        ASSERT_NE(next->first, leader);
        election_ms.push_back(std::chrono::duration<double, std::milli>(next->second - resigned).count());
        latches[leader]->start();  // queue again, at the back
        leader = next->first;
      }
      for (int i = 0; i < kPerBlock; ++i) {
        auto control = mutex_handoff();
        ASSERT_TRUE(control.has_value()) << "the mutex control failed";
        mutex_ms.push_back(*control);
      }
    }
  };
  // What counts as slow: 20 ms, or three times the control's median when
  // the machine is so loaded that a plain handoff takes longer than 7 ms.
  // etcd's loop delays a wake-up by up to 100 ms; a loaded machine (the
  // suite runs two tests at a time on two cores) stretches every turnover
  // alike, and an election turnover has more to do than a mutex handoff
  // (five candidates' watches, the resigned one queuing again), so a fixed
  // 20 ms counted the load's tail, not the loop: under the suite's load the
  // control's median was 9-10 ms and the election's tail 24-33 ms, never
  // near the loop's 100 ms.
  const auto median = [](std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const auto describe = [](const char* what, std::vector<double> ms, double bound) {
    std::sort(ms.begin(), ms.end());
    const auto over = [&](double b) {
      return static_cast<int>(std::count_if(ms.begin(), ms.end(), [&](double v) { return v > b; }));
    };
    std::printf("%s under writes: min %.1f median %.1f p90 %.1f max %.1f ms; %d over %.1f ms, %d over 40 ms (of %zu)\n",
                what, ms.front(), ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back(), over(bound), bound, over(40.0),
                ms.size());
    return over(bound);
  };
  measure();
  if (HasFatalFailure()) return;
  double slow_ms = std::max(20.0, 3 * median(mutex_ms));
  int election_slow = describe("election turnover", election_ms, slow_ms);
  int mutex_slow = describe("mutex handoff (control)", mutex_ms, slow_ms);
  if (election_slow > mutex_slow + kRounds / 20) {
    // Once more: a burst of load on a shared machine seldom comes back in
    // the next 60 rounds, while the slow wake-up this guards against showed
    // in 8 of 10 runs.
    measure();
    if (HasFatalFailure()) return;
    slow_ms = std::max(20.0, 3 * median(mutex_ms));
    election_slow = describe("election turnover (again)", election_ms, slow_ms);
    mutex_slow = describe("mutex handoff (control, again)", mutex_ms, slow_ms);
  }
  // An anchored wait wakes with the resign's own event. Watching from the
  // read's next revision, as the candidate does today, put 3 to 9 of 60
  // turnovers past 20 ms in ten runs, while the mutex control had 0 to 4 in
  // the same runs: the election waited for etcd's 100 ms loop, and this
  // check failed in 8 of the 10 runs. On a loaded machine both get a tail
  // of their own; the election may not have more of it than the mutex, plus
  // a few (a write can still land between the server reading its revision
  // for a watch and creating it).
  EXPECT_LE(election_slow, mutex_slow + kRounds / 20);
  holder->close();
  waiter->close();
  holder.reset();
  waiter.reset();
  for (auto& l : latches) l->close();
  latches.clear();
  // The test drops the client only once the closed latches let go of it.
  EXPECT_TRUE(eventually([&] { return etcd::detail::ClientAccess::core(client()).use_count() <= baseline; }, 15s));
}

}  // namespace
}  // namespace etcd::test
