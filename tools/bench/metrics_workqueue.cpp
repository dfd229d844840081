// DistributedWorkQueue metrics: an enqueue + receive + ack
// cycle one at a time (against the same Txns sent by the raw client), the
// throughput of 2 producers and 8 consumer objects racing for items, and
// how long an item held by a consumer that was SIGKILLed stays hidden.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "etcd/recipes/metrics.h"
#include "etcd/recipes/work_queue.h"
#include "process.h"

namespace bench::metrics_workqueue {
namespace {

using etcd::recipes::DistributedWorkQueue;
using etcd::recipes::WorkItem;
using etcd::recipes::WorkQueueOptions;
using Millis = std::chrono::duration<double, std::milli>;

// One object enqueues an item, receives it and acks it: three etcd writes
// (the enqueue Txn, the claim Txn, the ack Txn); the consumer learns of
// the item from its own watch, so no read. The first cycle (before the
// warm-up) grants the consumer's presence lease.
double workqueue_cycle_seq(Context& ctx) {
  DistributedWorkQueue q(ctx.client, Context::key_prefix("workqueue_cycle_seq") + "queue");
  const std::string value(32, 'v');
  // Where a cycle's time goes: a cycle that falls short of its RPCs' floor
  // (workqueue_rpcs_seq) shows it here against the paired put's round trip.
  Clock::duration in_enqueue{}, in_receive{}, in_ack{};
  uint64_t cycles = 0;
  const double rate = measure_cycle_paired(ctx, [&] {
    const auto t0 = Clock::now();
    (void)q.enqueue(value).timeout(kCallBound).wait().value();
    const auto t1 = Clock::now();
    const WorkItem item = q.receive().timeout(std::chrono::seconds(10)).wait().value();
    const auto t2 = Clock::now();
    if (item.value() != value) throw std::runtime_error("workqueue_cycle_seq: received another value");
    if (!item.ack().timeout(kCallBound).wait().value()) throw std::runtime_error("workqueue_cycle_seq: the ack found its claim gone");
    const auto t3 = Clock::now();
    in_enqueue += t1 - t0;
    in_receive += t2 - t1;
    in_ack += t3 - t2;
    ++cycles;
  });
  q.close();
  const auto per_cycle = [&](Clock::duration d) { return Millis(d).count() / static_cast<double>(cycles); };
  const double put_ms = 1000.0 / ctx.paired_base(ctx.metric()).value_or(0.0);
  ctx.note(
      fmt("workqueue_cycle_seq: per cycle (warm-up included) enqueue %.3f ms, receive %.3f ms (the item's "
          "watch event + the claim Txn), ack %.3f ms; a paired put took %.3f ms",
          per_cycle(in_enqueue), per_cycle(in_receive), per_cycle(in_ack), put_ms));
  return rate;
}

// --- workqueue_rpcs_seq (the floor of the design) ---------------------------------

// The three Txns of one enqueue + receive + ack sent by the raw client with
// no recipe code around them, interleaved with puts like the cycle: the
// enqueue Txn guarded by the producer key (creating the item, recording the
// sequence number), the claim (the item unchanged and unclaimed: create the
// claim under a lease, count the delivery with an ignore_value put), the ack
// guarded by the claim's revision (delete item and claim). The ratio of
// workqueue_cycle_seq to it is what the recipe keeps of its RPCs' rate.
double workqueue_rpcs_seq(Context& ctx) {
  const std::string prefix = Context::key_prefix("workqueue_rpcs_seq");
  const std::string producer = prefix + "producers/p";
  const std::string record = "wq1\n" + std::string(32, 'v');
  // Outlives the metric's window (warm-up + twice the window) without a
  // keep-alive, whose stream traffic the floor should not carry.
  const int64_t lease = ctx.client.lease_grant(std::chrono::seconds(120)).timeout(kCallBound).wait().value().id;
  int64_t guard = 0;
  uint64_t seq = 0;
  const auto run = measure_sequential_paired(ctx, [&] {
    const std::string id = "p-" + std::to_string(++seq);
    const std::string item = prefix + "items/" + id;
    const std::string claim = prefix + "claims/" + id;
    etcd::Txn enqueue;
    enqueue.when(etcd::Compare::mod_revision(producer) == guard)
        .then({etcd::Op::put(item, record), etcd::Op::put(producer, std::to_string(seq))})
        .otherwise(etcd::Op::get(producer));
    const auto e = ctx.client.txn(enqueue).timeout(kCallBound).wait().value();
    if (!e.succeeded) throw std::runtime_error("workqueue_rpcs_seq: the guard moved");
    guard = e.header.revision;
    etcd::Txn take;
    take.when(etcd::Compare::mod_revision(item) == e.header.revision, etcd::Compare::create_revision(claim) == 0)
        .then({etcd::Op::put(claim, "bench", etcd::PutOptions{.lease = lease}),
               etcd::Op::put(item, "", etcd::PutOptions{.ignore_value = true})})
        .otherwise(etcd::Op::get(claim));
    const auto c = ctx.client.txn(take).timeout(kCallBound).wait().value();
    if (!c.succeeded) throw std::runtime_error("workqueue_rpcs_seq: the claim failed");
    etcd::Txn ack;
    ack.when(etcd::Compare::create_revision(claim) == c.header.revision)
        .then({etcd::Op::del(item), etcd::Op::del(claim)})
        .otherwise(etcd::Op::get(item, etcd::GetOptions{.keys_only = true}));
    if (!ctx.client.txn(ack).timeout(kCallBound).wait().value().succeeded) throw std::runtime_error("workqueue_rpcs_seq: the ack failed");
  });
  (void)ctx.client.lease_revoke(lease).timeout(kCallBound).wait();
  return run.rate;
}

// --- workqueue_throughput_8c ----------------------------------------------------------

// 2 producers keep enqueues in flight (their group commit batches them);
// 8 consumer objects (as 8 processes would) each keep one receive
// outstanding: when it delivers, the consumer sends the ack and the next
// receive at once. The backlog stays bounded. Items acked per second of
// the window.
constexpr int kProducers = 2;
constexpr int kConsumers = 8;
constexpr int kProducerDepth = 32;
constexpr int64_t kMaxBacklog = 2000;

class Throughput : public std::enable_shared_from_this<Throughput> {
 public:
  Throughput(etcd::Client& client, const std::string& name, std::shared_ptr<etcd::recipes::PrometheusMetrics> m) {
    WorkQueueOptions opts;
    opts.recipe.metrics = std::move(m);
    for (int i = 0; i < kProducers; ++i) {
      producers_.push_back(std::make_unique<DistributedWorkQueue>(client, name, opts));
    }
    for (int i = 0; i < kConsumers; ++i) {
      consumers_.push_back(std::make_unique<DistributedWorkQueue>(client, name, opts));
    }
  }

  void start() {
    for (auto& p : producers_) {
      for (int i = 0; i < kProducerDepth; ++i) produce(p.get());
    }
    for (auto& c : consumers_) consume(c.get());
  }

  uint64_t acked() const { return acked_.load(); }
  uint64_t stale_acks() const { return stale_acks_.load(); }
  int64_t enqueued() const { return enqueued_.load(); }

  // Stops issuing, waits for what is in flight, closes everything.
  void stop() {
    calls_.stop();
    for (auto& c : consumers_) c->close();  // parked receives end with kClosed
    calls_.drain("workqueue_throughput_8c");
  }

 private:
  void produce(DistributedWorkQueue* p) {
    if (calls_.stopping()) return;
    if (enqueued_.load() - static_cast<int64_t>(acked_.load()) > kMaxBacklog) {
      // Throttled: try again once consumers caught up a little.
      throttled_.park(p);
      return;
    }
    calls_.begin();
    p->enqueue(value_).then([self = shared_from_this(), p](etcd::Result<etcd::recipes::Enqueued> r) {
      if (!r.ok()) self->calls_.fail(r.status());
      self->enqueued_ += 1;
      self->produce(p);
      self->calls_.end();
    });
  }

  void consume(DistributedWorkQueue* c) {
    if (calls_.stopping()) return;
    calls_.begin();
    c->receive().then([self = shared_from_this(), c](etcd::Result<WorkItem> r) {
      if (r.ok()) {
        self->ack(*r);
        self->consume(c);
      } else if (!self->calls_.stopping()) {
        self->calls_.fail(r.status());
      }
      self->calls_.end();
    });
  }

  void ack(const WorkItem& item) {
    calls_.begin();
    item.ack().then([self = shared_from_this()](etcd::Result<bool> r) {
      if (r.ok()) {
        (*r ? self->acked_ : self->stale_acks_) += 1;
        for (auto* p : self->throttled_.take_all()) self->produce(p);
      } else if (!self->calls_.stopping()) {
        self->calls_.fail(r.status());
      }
      self->calls_.end();
    });
  }

  const std::string value_ = std::string(32, 'v');
  std::vector<std::unique_ptr<DistributedWorkQueue>> producers_;
  std::vector<std::unique_ptr<DistributedWorkQueue>> consumers_;
  std::atomic<int64_t> enqueued_{0};
  std::atomic<uint64_t> acked_{0};
  std::atomic<uint64_t> stale_acks_{0};
  CallsInFlight calls_;
  ParkedProducers<DistributedWorkQueue> throttled_;
};

double workqueue_throughput_8c(Context& ctx) {
  const std::string name = Context::key_prefix("workqueue_throughput_8c") + "queue";
  auto metrics = std::make_shared<etcd::recipes::PrometheusMetrics>();
  auto run = std::make_shared<Throughput>(ctx.client, name, metrics);
  run->start();
  std::this_thread::sleep_for(ctx.settings.warmup);
  const etcd::recipes::Labels labels{{"queue", name}};
  const auto conflicts_now = [&] { return metrics->value("etcd_recipes_workqueue_take_conflicts_total", labels); };
  const uint64_t acked_at_start = run->acked();
  const uint64_t stale_at_start = run->stale_acks();
  const int64_t enqueued_at_start = run->enqueued();
  const double conflicts_at_start = conflicts_now();
  const uint64_t rpcs_at_start = ctx.client.stats().rpcs_started;
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(ctx.settings.duration);
  const uint64_t items = run->acked() - acked_at_start;
  const auto enqueued = static_cast<unsigned long long>(run->enqueued() - enqueued_at_start);
  const double conflicts = conflicts_now() - conflicts_at_start;
  const uint64_t rpcs = ctx.client.stats().rpcs_started - rpcs_at_start;
  const int64_t backlog = run->enqueued() - static_cast<int64_t>(run->acked());
  // Only the window's: close() at the end revokes the consumers' leases
  // under acks still in flight, which then find their claims gone.
  const uint64_t stale = run->stale_acks() - stale_at_start;
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  run->stop();
  const auto per_item = [&](double n) { return items ? n / static_cast<double>(items) : 0.0; };
  ctx.note(fmt(
      "workqueue_throughput_8c: %llu items acked in %.1f s (%llu enqueued); %.2f failed claims (conflicts) per "
      "item among %d consumer objects; %llu RPCs in the window, %.2f per item; %llu stale acks; "
      "backlog at the end %lld (cap %lld)",
      static_cast<unsigned long long>(items), seconds, enqueued, per_item(conflicts), kConsumers,
      static_cast<unsigned long long>(rpcs), per_item(static_cast<double>(rpcs)),
      static_cast<unsigned long long>(stale), static_cast<long long>(backlog), static_cast<long long>(kMaxBacklog)));
  return static_cast<double>(items) / seconds;
}

// --- workqueue_redelivery_ms ---------------------------------------------------------

// A consumer in another process receives an item and is SIGKILLed while it
// holds it; the figure is the time from the kill to the moment a consumer
// in the bench process (its receive parked before the kill) gets the item.
// The bar: the visibility timeout + 1 s.
constexpr std::chrono::seconds kVisibility{2};
constexpr auto kWorkerFlag = "--workqueue-worker";
constexpr auto kChildTimeout = std::chrono::seconds(30);
constexpr auto kHold = std::chrono::seconds(1);

// etcd-recipes-bench --workqueue-worker NAME ENDPOINTS VISIBILITY_S: receives
// one item, prints "received <id> <claim revision>", then holds it (its
// lease kept alive) until it is killed.
int workqueue_worker(const std::vector<std::string>& args) {
  return run_worker(args, 3, kWorkerFlag, "NAME ENDPOINTS VISIBILITY_S", [&]() -> int {
    etcd::Client client(worker_client_options(args[1]));
    WorkQueueOptions options;
    options.visibility_timeout = std::chrono::seconds(std::stoi(args[2]));
    DistributedWorkQueue wq(client, args[0], options);
    const WorkItem item = wq.receive().timeout(kChildTimeout).wait().value();
    std::printf("received %s %lld\n", item.id().c_str(), static_cast<long long>(item.claim()));
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  });
}

// What the bench's own parked receive got, and when.
struct Redelivered {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<etcd::Result<WorkItem>> result;
  Clock::time_point at{};
};

double one_redelivery(Context& ctx, DistributedWorkQueue& producer, DistributedWorkQueue& consumer,
                      const std::string& name, int round, std::string& granted, std::minstd_rand& rng) {
  const std::string value = "redelivery-" + std::to_string(round);
  (void)producer.enqueue(value).timeout(kCallBound).wait().value();
  ChildProcess worker(
      {self_path().string(), kWorkerFlag, name, ctx.endpoints_csv(), std::to_string(kVisibility.count())});
  const auto line = worker.read_line(kChildTimeout);
  std::string id;
  long long claim = 0;
  {
    std::istringstream in(line.value_or(""));
    std::string word;
    if (!(in >> word >> id >> claim) || word != "received") {
      throw std::runtime_error("workqueue_redelivery_ms: the worker said '" + line.value_or("(nothing)") + "'");
    }
  }
  const auto received_at = Clock::now();
  // The claim's lease is the worker's presence lease: what etcd granted is
  // what decides how long the item stays hidden.
  const auto claim_kv = ctx.client.get(name + "/claims/" + id).timeout(kCallBound).wait().value();
  if (claim_kv.kvs.empty() || claim_kv.kvs[0].create_revision != claim) {
    throw std::runtime_error("workqueue_redelivery_ms: the worker's claim of " + id + " is not in etcd");
  }
  granted = std::to_string(ctx.client.lease_time_to_live(claim_kv.kvs[0].lease).timeout(kCallBound).wait().value().granted_ttl);
  // The bench's consumer must find nothing while the worker holds the item
  // (this also starts its view, so the receive below is parked on a view
  // that knows the item).
  if (consumer.try_receive().timeout(kCallBound).wait().value()) {
    throw std::runtime_error("workqueue_redelivery_ms: the item was delivered while the worker held it");
  }
  // Killed in the middle of its work, not at the instant of its claim:
  // after its lease was renewed, at a random point of its renewal period
  // (a third of the TTL), which decides how much of the TTL is left.
  std::this_thread::sleep_until(received_at + kHold +
                                std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(
                                    0, std::chrono::milliseconds(kVisibility).count() / 3)(rng)));
  auto got = std::make_shared<Redelivered>();
  consumer.receive().timeout(kChildTimeout).then([got](etcd::Result<WorkItem> r) {
    std::lock_guard lock(got->mu);
    got->at = Clock::now();
    got->result = std::move(r);
    got->cv.notify_all();
  });
  const int pid = static_cast<int>(worker.pid());
  const auto killed_at = Clock::now();
  worker.kill();
  std::unique_lock lock(got->mu);
  if (!got->cv.wait_for(lock, kChildTimeout + std::chrono::seconds(5), [&] { return got->result.has_value(); })) {
    throw std::runtime_error("workqueue_redelivery_ms: the parked receive never completed");
  }
  const WorkItem item = got->result->value();
  const double ms = Millis(got->at - killed_at).count();
  lock.unlock();
  if (item.id() != id || item.value() != value || item.attempt() != 2) {
    throw std::runtime_error(fmt("workqueue_redelivery_ms: got %s (attempt %lld), expected %s (attempt 2)",
                                 item.id().c_str(), static_cast<long long>(item.attempt()), id.c_str()));
  }
  if (!item.ack().timeout(kCallBound).wait().value()) throw std::runtime_error("workqueue_redelivery_ms: the redelivery's ack failed");
  ctx.note(
      fmt("workqueue_redelivery_ms: round %d: worker pid %d held %s for %.0f ms, killed; redelivered %.0f ms "
          "after the kill",
          round, pid, id.c_str(), Millis(killed_at - received_at).count(), ms));
  return ms;
}

double workqueue_redelivery_ms(Context& ctx) {
  const std::string name = Context::key_prefix("workqueue_redelivery_ms") + "queue";
  WorkQueueOptions options;
  options.visibility_timeout = kVisibility;
  DistributedWorkQueue producer(ctx.client, name, options);  // enqueues only: takes no lease
  DistributedWorkQueue consumer(ctx.client, name, options);
  std::vector<double> ms;
  std::string granted;
  std::minstd_rand rng(std::random_device{}());
  for (int round = 1; round <= 3; ++round) {
    ms.push_back(one_redelivery(ctx, producer, consumer, name, round, granted, rng));
  }
  consumer.close();
  producer.close();
  const std::vector<double> in_order = ms;
  std::ranges::sort(ms);
  ctx.note(
      fmt("workqueue_redelivery_ms: visibility timeout %lld s (granted TTL %s s); rounds %.0f, %.0f, %.0f ms; "
          "median %.0f ms (bar: %lld ms)",
          static_cast<long long>(kVisibility.count()), granted.c_str(), in_order[0], in_order[1], in_order[2], ms[1],
          static_cast<long long>(kVisibility.count() * 1000 + 1000)));
  return ms[1];
}

[[maybe_unused]] const bool kRegistered =
    add_metrics({
        {.name = "workqueue_cycle_seq", .unit = "cycles/s", .order = 620, .run = workqueue_cycle_seq},
        {.name = "workqueue_rpcs_seq", .unit = "cycles/s", .order = 621, .run = workqueue_rpcs_seq},
        {.name = "workqueue_throughput_8c",
         .unit = "items/s",
         .base = "put_pipelined",
         .order = 630,
         .run = workqueue_throughput_8c},
        {.name = "workqueue_redelivery_ms",
         .unit = "ms",
         .kind = Kind::kLatency,
         .base = "",
         .order = 640,
         .run = workqueue_redelivery_ms},
    }) &&
    add_helper_mode({.flag = kWorkerFlag, .run = workqueue_worker});

}  // namespace
}  // namespace bench::metrics_workqueue
