// Barriers under stress: 16 waiters on 16 clients, rounds of a gate set,
// waited on and removed (400 in the suite; ETCD_RECIPES_STRESS_ROUNDS sets
// another number, 1000 for a release), while other recipes write to the same
// member, a thread burns CPU, and every waiter's watch stream is asked for
// progress all the time (the client's liveness probe of an idle stream,
// here as often as the stream takes it). Every waiter must be released in
// every round, and none before the gate is removed.
#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/client_access.h"
#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/barrier.h"
#include "etcd/recipes/mutex.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedBarrier;
using recipes::DistributedBarrierWithCount;

constexpr int kWaiters = 16;

// The gate test's rounds: ETCD_RECIPES_STRESS_ROUNDS, or 400.
int gate_rounds() {
  const char* v = std::getenv("ETCD_RECIPES_STRESS_ROUNDS");
  const int n = v != nullptr ? std::atoi(v) : 0;
  return n > 0 ? n : 400;
}

// Completions of calls consumed with .then(), counted per round.
class Round {
 public:
  template <class T>
  void add(Call<T> call) {
    {
      std::lock_guard lock(state_->mu);
      ++state_->expected;
    }
    std::move(call).then([s = state_](Result<T> r) {
      std::lock_guard lock(s->mu);
      if (!r.ok() && !s->error) s->error = r.status();
      ++s->done;
      s->cv.notify_all();
    });
  }
  int done() const {
    std::lock_guard lock(state_->mu);
    return state_->done;
  }
  // True once every call completed, OK, within `timeout`.
  ::testing::AssertionResult all_released(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->done == state_->expected; })) {
      return ::testing::AssertionFailure() << (state_->expected - state_->done) << " of " << state_->expected
                                           << " waiters not released within " << timeout.count() << " ms";
    }
    if (state_->error) return ::testing::AssertionFailure() << "a wait failed: " << state_->error->to_string();
    return ::testing::AssertionSuccess();
  }

 private:
  struct State {
    mutable std::mutex mu;
    std::condition_variable cv;
    int expected = 0;
    int done = 0;
    std::optional<Status> error;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// What production adds around a barrier: other recipes' writes on the same
// member (each a new revision every waiter's watch has to pass), a busy
// CPU, and progress requests on every waiter's stream.
class Stress {
 public:
  Stress(const ClientOptions& options, const std::string& prefix, std::vector<std::unique_ptr<Client>>& probed)
      : traffic_(options) {
    threads_.emplace_back([this, prefix] {
      recipes::DistributedAtomicLong counter(traffic_, prefix + "counter");
      while (!stop_.load()) (void)counter.increment().timeout(5s).wait();
    });
    threads_.emplace_back([this, prefix] {
      recipes::DistributedMutex mutex(traffic_, prefix + "mutex");
      while (!stop_.load()) {
        if (mutex.acquire().timeout(5s).wait().ok()) (void)mutex.release().timeout(5s).wait();
      }
    });
    threads_.emplace_back([this] {
      // Busy, yielding now and then so the machine stays usable.
      while (!stop_.load()) {
        const auto until = std::chrono::steady_clock::now() + 2ms;
        while (std::chrono::steady_clock::now() < until) {
        }
        std::this_thread::yield();
      }
    });
    threads_.emplace_back([this, &probed] {
      while (!stop_.load()) {
        for (auto& c : probed) detail::ClientAccess::request_watch_progress(*c);
        std::this_thread::sleep_for(5ms);
      }
    });
  }
  Stress(const Stress&) = delete;
  Stress& operator=(const Stress&) = delete;
  ~Stress() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  Client traffic_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

class BarrierStressTest : public SingleMemberTest {
 protected:
  void SetUp() override {
    SingleMemberTest::SetUp();
    for (int i = 0; i < kWaiters; ++i) clients_.push_back(std::make_unique<Client>(options()));
  }
  void TearDown() override {
    clients_.clear();
    SingleMemberTest::TearDown();
  }
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(BarrierStressTest, EveryGateWaiterIsReleasedInEachRound) {
  const std::string name = key("gate");
  DistributedBarrier setter(client(), name);
  std::vector<std::unique_ptr<DistributedBarrier>> waiters;
  for (auto& c : clients_) waiters.push_back(std::make_unique<DistributedBarrier>(*c, name));
  Stress stress(options(), key("traffic/"), clients_);

  const int rounds = gate_rounds();
  for (int round = 0; round < rounds; ++round) {
    auto set = setter.set().timeout(10s).wait();
    ASSERT_TRUE(set.ok()) << "round " << round << ": " << set.status().to_string();
    ASSERT_TRUE(*set) << "round " << round << ": the gate was set already";
    Round calls;
    for (auto& w : waiters) calls.add(w->wait().timeout(30s));
    // A round trip on each waiter's client after its wait went out: the
    // waits have read the gate (set) by now, mostly.
    for (auto& c : clients_) ASSERT_TRUE(c->get(name).timeout(10s).wait().ok());
    ASSERT_EQ(calls.done(), 0) << "round " << round << ": a waiter was released while the gate was set";
    auto removed = setter.remove().timeout(10s).wait();
    ASSERT_TRUE(removed.ok()) << "round " << round << ": " << removed.status().to_string();
    ASSERT_TRUE(*removed) << "round " << round;
    ASSERT_TRUE(calls.all_released(15s)) << "round " << round;
  }
}

TEST_F(BarrierStressTest, EveryCountBarrierPartyIsReleasedInEachRound) {
  const std::string name = key("rendezvous");
  std::vector<std::unique_ptr<DistributedBarrierWithCount>> parties;
  for (auto& c : clients_) parties.push_back(std::make_unique<DistributedBarrierWithCount>(*c, name, kWaiters));
  Stress stress(options(), key("traffic/"), clients_);

  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    Round calls;
    for (int i = 0; i + 1 < kWaiters; ++i) calls.add(parties[i]->wait().timeout(30s));
    // The 15 are in etcd before the 16th comes.
    ASSERT_TRUE(eventually(
        [&] {
          auto r = client().get(name + "/parties/", GetOptions{.prefix = true, .count_only = true}).wait();
          return r.ok() && r->count >= kWaiters - 1;
        },
        15s, 1ms))
        << "round " << round;
    ASSERT_EQ(calls.done(), 0) << "round " << round << ": a party was released before the last one came";
    calls.add(parties.back()->wait().timeout(30s));
    ASSERT_TRUE(calls.all_released(15s)) << "round " << round;
  }
}

}  // namespace
}  // namespace etcd::test
