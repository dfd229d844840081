// A workload: clients that use one recipe family during the campaign, and
// the checker of that family's guarantee over what they recorded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "etcd/client.h"
#include "etcd/testing/etcd_cluster.h"
#include "history.h"

namespace chaos {

// A broken guarantee, with the history index it is anchored at.
struct Violation {
  std::string recipe;
  std::string what;
  int64_t at = -1;  // history index (-1: none)
  // A broken guarantee (false: the checker itself could not run).
  bool guarantee = true;
};

struct Context {
  etcd::testing::EtcdCluster* cluster = nullptr;
  History* history = nullptr;
  // Clients of the workloads, each starting at another member's FaultProxy
  // (all proxies are its endpoints); shared by the recipe objects.
  std::vector<etcd::Client> clients;
  // Talks to the members directly (no proxy): setup, final reads.
  etcd::Client* admin = nullptr;
  uint64_t seed = 0;
  // Scales how many parties a workload runs (1: the short run).
  int scale = 1;
};

// Deletes everything under `prefix` through ctx.admin (a workload's setup:
// each run starts from nothing); throws etcd::Error if etcd refuses.
void clear_prefix(Context& ctx, const std::string& prefix);

// The threads of a workload. Declare it as the workload's last member, so
// that they are joined before the members they use are destroyed.
class Threads {
 public:
  // Runs f(std::stop_token) on a thread of its own until stop().
  template <class F>
  void spawn(F&& f) {
    threads_.emplace_back(std::forward<F>(f));
  }
  // Asks every thread to end and joins them.
  void stop() {
    for (auto& t : threads_) t.request_stop();
    threads_.clear();
  }

 private:
  std::vector<std::jthread> threads_;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  // Before the faults: writes what the checker needs to start from.
  virtual void setup(Context& ctx) = 0;
  // Starts the workload's threads; they run until stop().
  virtual void start(Context& ctx) = 0;
  // Ends new operations and joins the threads (every call they make has a
  // deadline, so this returns within seconds).
  virtual void stop() = 0;
  // Every fault has been undone (at `t`, seconds since the start); the
  // workload keeps running for a quiet period before stop().
  virtual void healed(double t) { healed_at_ = t; }
  // After the faults have healed: what must still happen for the check
  // (drain a queue, let a cache catch up). Bounded.
  virtual void settle(Context&) {}
  virtual std::vector<Violation> check(Context& ctx) = 0;
  // Operation counts for the report (by outcome).
  virtual std::map<std::string, int64_t> counts() const = 0;

 protected:
  double healed_at_ = -1;
};

std::unique_ptr<Workload> make_mutex_workload();
std::unique_ptr<Workload> make_rwlock_workload();
std::unique_ptr<Workload> make_semaphore_workload();
std::unique_ptr<Workload> make_election_workload();
std::unique_ptr<Workload> make_counter_workload();
std::unique_ptr<Workload> make_queue_workload();
std::unique_ptr<Workload> make_work_queue_workload();
std::unique_ptr<Workload> make_barrier_workload();
std::unique_ptr<Workload> make_cache_workload();
std::unique_ptr<Workload> make_discovery_workload();

// Zero-padded decimal, so that etcd's byte-wise value comparison orders
// tokens as numbers.
std::string pad(int64_t v);

}  // namespace chaos
