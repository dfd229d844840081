// DistributedQueue metrics: an enqueue + dequeue cycle one at a
// time (against etcd's Go contrib/recipes Queue: go_queue_cycle_seq), and
// the throughput of 2 producers and 8 consumer objects racing for items.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench.h"
#include "etcd/recipes/metrics.h"
#include "etcd/recipes/queue.h"

namespace bench::metrics_queue {
namespace {

using etcd::recipes::DistributedQueue;
using etcd::recipes::RecipeOptions;

// One object enqueues an item and dequeues it: two etcd writes (the
// enqueue Txn, the guarded delete); the consumer learns of the item from
// its own watch, so no read.
double queue_cycle_seq(Context& ctx) {
  DistributedQueue q(ctx.client, Context::key_prefix("queue_cycle_seq") + "queue");
  const std::string value(32, 'v');
  const double rate = measure_cycle_paired(ctx, [&] {
    (void)q.enqueue(value).timeout(kCallBound).wait().value();
    if (q.dequeue().timeout(std::chrono::seconds(10)).wait().value() != value) {
      throw std::runtime_error("queue_cycle_seq: dequeued another value");
    }
  });
  q.close();
  return rate;
}

// --- queue_rpcs_seq / go_queue_rpcs_seq (the floor of each design) ---------

// The RPCs of one enqueue + dequeue sent by the raw client with no recipe
// code around them, interleaved with puts like the cycles: DistributedQueue's
// (the enqueue Txn guarded by the producer key, creating the item and
// recording the sequence number; a delete with prev_kv) and etcd Go
// contrib/recipes Queue's (a create-if-absent Txn; a Get of the oldest key,
// sorted by create revision; a Txn that deletes it if its mod revision is
// unchanged). Their ratio is the most queue_cycle_seq / go_queue_cycle_seq
// can be when neither side spends anything beyond its RPCs.
double queue_rpcs_seq(Context& ctx) {
  const std::string prefix = Context::key_prefix("queue_rpcs_seq");
  const std::string producer = prefix + "producers/p";
  const std::string value(32, 'v');
  int64_t guard = 0;
  uint64_t seq = 0;
  const auto run = measure_sequential_paired(ctx, [&] {
    const std::string item = prefix + "items/p-" + std::to_string(++seq);
    etcd::Txn enqueue;
    enqueue.when(etcd::Compare::mod_revision(producer) == guard)
        .then({etcd::Op::put(item, value), etcd::Op::put(producer, std::to_string(seq))})
        .otherwise(etcd::Op::get(producer));
    const auto r = ctx.client.txn(enqueue).timeout(kCallBound).wait().value();
    if (!r.succeeded) throw std::runtime_error("queue_rpcs_seq: the guard moved");
    guard = r.header.revision;
    if (ctx.client.del(item, etcd::DeleteOptions{.prev_kv = true}).timeout(kCallBound).wait().value().deleted != 1) {
      throw std::runtime_error("queue_rpcs_seq: the item was not there");
    }
  });
  return run.rate;
}

double go_queue_rpcs_seq(Context& ctx) {
  const std::string prefix = Context::key_prefix("go_queue_rpcs_seq") + "queue";
  const std::string value(32, 'v');
  uint64_t n = 0;
  const auto run = measure_sequential_paired(ctx, [&] {
    const std::string item = prefix + "/" + std::to_string(++n);
    etcd::Txn enqueue;
    enqueue.when(etcd::Compare::version(item) == 0).then(etcd::Op::put(item, value));
    if (!ctx.client.txn(enqueue).timeout(kCallBound).wait().value().succeeded) throw std::runtime_error("go_queue_rpcs_seq: key exists");
    const auto first = ctx.client
                           .get(prefix, etcd::GetOptions{.prefix = true,
                                                         .limit = 1,
                                                         .sort_order = etcd::SortOrder::kAscend,
                                                         .sort_target = etcd::SortTarget::kCreate})
                           .timeout(kCallBound).wait()
                           .value();
    if (first.kvs.empty()) throw std::runtime_error("go_queue_rpcs_seq: empty");
    etcd::Txn take;
    take.when(etcd::Compare::mod_revision(first.kvs[0].key) == first.kvs[0].mod_revision)
        .then(etcd::Op::del(first.kvs[0].key));
    if (!ctx.client.txn(take).timeout(kCallBound).wait().value().succeeded) throw std::runtime_error("go_queue_rpcs_seq: lost the take");
  });
  return run.rate;
}

// --- queue_throughput_8c ---------------------------------------------------------

// 2 producers keep enqueues in flight (their group commit batches them);
// 8 consumer objects (as 8 processes would) each keep one dequeue parked.
// The backlog stays bounded. Items dequeued per second of the window.
constexpr int kProducers = 2;
constexpr int kConsumers = 8;
constexpr int kProducerDepth = 32;
constexpr int64_t kMaxBacklog = 2000;

class Throughput : public std::enable_shared_from_this<Throughput> {
 public:
  Throughput(etcd::Client& client, const std::string& name, std::shared_ptr<etcd::recipes::PrometheusMetrics> m) {
    RecipeOptions opts;
    opts.metrics = std::move(m);
    for (int i = 0; i < kProducers; ++i) producers_.push_back(std::make_unique<DistributedQueue>(client, name, opts));
    for (int i = 0; i < kConsumers; ++i) consumers_.push_back(std::make_unique<DistributedQueue>(client, name, opts));
  }

  void start() {
    for (auto& p : producers_) {
      for (int i = 0; i < kProducerDepth; ++i) produce(p.get());
    }
    for (auto& c : consumers_) consume(c.get());
  }

  uint64_t dequeued() const { return dequeued_.load(); }

  // Stops issuing, waits for what is in flight, closes everything.
  void stop() {
    calls_.stop();
    for (auto& c : consumers_) c->close();  // parked dequeues end with kClosed
    calls_.drain("queue_throughput_8c");
  }

 private:
  void produce(DistributedQueue* p) {
    if (calls_.stopping()) return;
    if (enqueued_.load() - static_cast<int64_t>(dequeued_.load()) > kMaxBacklog) {
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

  void consume(DistributedQueue* c) {
    if (calls_.stopping()) return;
    calls_.begin();
    c->dequeue().then([self = shared_from_this(), c](etcd::Result<std::string> r) {
      if (r.ok()) {
        self->dequeued_ += 1;
        for (auto* p : self->throttled_.take_all()) self->produce(p);
        self->consume(c);
      } else if (!self->calls_.stopping()) {
        self->calls_.fail(r.status());
      }
      self->calls_.end();
    });
  }

  const std::string value_ = std::string(32, 'v');
  std::vector<std::unique_ptr<DistributedQueue>> producers_;
  std::vector<std::unique_ptr<DistributedQueue>> consumers_;
  std::atomic<int64_t> enqueued_{0};
  std::atomic<uint64_t> dequeued_{0};
  CallsInFlight calls_;
  ParkedProducers<DistributedQueue> throttled_;
};

double queue_throughput_8c(Context& ctx) {
  const std::string name = Context::key_prefix("queue_throughput_8c") + "queue";
  auto metrics = std::make_shared<etcd::recipes::PrometheusMetrics>();
  auto run = std::make_shared<Throughput>(ctx.client, name, metrics);
  const auto rpcs_before = ctx.client.stats().rpcs_started;
  run->start();
  std::this_thread::sleep_for(ctx.settings.warmup);
  const uint64_t at_start = run->dequeued();
  const etcd::recipes::Labels labels{{"queue", name}};
  const double conflicts_at_start = metrics->value("etcd_recipes_queue_take_conflicts_total", labels);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(ctx.settings.duration);
  const uint64_t items = run->dequeued() - at_start;
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double conflicts = metrics->value("etcd_recipes_queue_take_conflicts_total", labels) - conflicts_at_start;
  run->stop();
  const double enqueue_txns = metrics->value("etcd_recipes_queue_enqueued_total", labels);
  ctx.note(
      fmt("queue_throughput_8c: %llu items in %.1f s; %.2f failed takes (conflicts) per item among %d consumer "
          "objects; %llu RPCs in all (%.0f items enqueued)",
          static_cast<unsigned long long>(items), seconds, items ? conflicts / static_cast<double>(items) : 0.0,
          kConsumers, static_cast<unsigned long long>(ctx.client.stats().rpcs_started - rpcs_before), enqueue_txns));
  return static_cast<double>(items) / seconds;
}

[[maybe_unused]] const bool kRegistered =
    add_metrics({
        {.name = "queue_cycle_seq", .unit = "cycles/s", .order = 600, .run = queue_cycle_seq},
        {.name = "queue_rpcs_seq", .unit = "cycles/s", .order = 601, .run = queue_rpcs_seq},
        {.name = "go_queue_rpcs_seq", .unit = "cycles/s", .order = 602, .run = go_queue_rpcs_seq},
        {.name = "queue_throughput_8c",
         .unit = "items/s",
         .base = "put_pipelined",
         .order = 610,
         .run = queue_throughput_8c},
    }) &&
    add_comparison({"queue_cycle_seq_vs_go", "queue_cycle_seq", "go_queue_cycle_seq"});

}  // namespace
}  // namespace bench::metrics_queue
