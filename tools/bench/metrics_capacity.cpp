// Capacity metrics: what one recipe operation, and one parked
// waiter, costs etcd — raft writes, keys written and deleted, RPCs by kind,
// watch requests, leases, watchers and keys — counted by etcd itself (its
// /metrics, server_metrics.h), not estimated from the client's side. An
// operation runs many times, one at a time, between two scrapes taken once
// the counters stopped moving; the difference divided by the count is one
// row of docs/capacity.md. Only with --capacity (or named in --only).
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/barrier.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/path_children_cache.h"
#include "etcd/recipes/priority_queue.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "etcd/recipes/service_discovery.h"
#include "etcd/recipes/transient.h"
#include "etcd/recipes/work_queue.h"
#include "etcd/session.h"
#include "server_metrics.h"

namespace bench::metrics_capacity {
namespace {

using namespace std::chrono_literals;
using etcd::recipes::DistributedMutex;

// Enough that a stray background request (a hold's watch, a keep-alive's
// side effect) moves a per-operation figure by at most 0.005 (0.02 quick).
int ops(const Context& ctx) { return ctx.settings.quick ? 50 : 200; }
constexpr int kParked = 100;

ServerCounters scrape(const Context& ctx) {
  try {
    return read_server_counters(ctx.client.options().endpoints);
  } catch (const std::exception& e) {
    throw Skipped(std::string("cannot read etcd's /metrics on the client URLs: ") + e.what());
  }
}

bool same(const ServerCounters& a, const ServerCounters& b) {
  return a.proposals == b.proposals && a.keys == b.keys && a.watchers == b.watchers && a.txn_rpcs == b.txn_rpcs &&
         a.range_rpcs == b.range_rpcs && a.watch_requests == b.watch_requests && a.deletes == b.deletes &&
         a.lease_grants == b.lease_grants && a.lease_revokes == b.lease_revokes;
}

// The counters once they stayed still for `quiet` polls 100 ms apart:
// recipes finish some work after their call returned (a view's watch is
// created, a released hold's watch is cancelled, a closed object revokes
// its lease), and that work belongs to the rows it follows.
ServerCounters settled(const Context& ctx, int quiet = 2) {
  auto last = scrape(ctx);
  int still = 0;
  for (const auto give_up = Clock::now() + 15s; still < quiet && Clock::now() < give_up;) {
    std::this_thread::sleep_for(100ms);
    auto now = scrape(ctx);
    still = same(now, last) ? still + 1 : 0;
    last = now;
  }
  return last;
}

void wait_until(const std::function<bool()>& pred, Clock::duration bound, const std::string& what) {
  const auto give_up = Clock::now() + bound;
  while (!pred()) {
    if (Clock::now() > give_up) throw std::runtime_error(what);
    std::this_thread::sleep_for(1ms);
  }
}

void delete_prefix(Context& ctx, const std::string& prefix) {
  etcd::DeleteOptions all;
  all.prefix = true;
  ctx.client.del(prefix, all).timeout(30s).wait().value();
}

// One row: a line under the bench's table (the first row also prints the
// header) and the row's columns as the metric's JSON "detail".
void report(Context& ctx, const std::string& what, const ServerCounters& c) {
  const bool first = ctx.memo<bool>("capacity_header", [&] {
    ctx.note(
        fmt("capacity: etcd's own counters (/metrics) per operation or per parked waiter; %d ops one at a time, "
            "%d waiters parked at once",
            ops(ctx), kParked));
    ctx.note(fmt("%-46s %6s %6s %6s %6s %6s %6s %6s %6s %6s %8s %6s %6s", "capacity row", "writes", "puts", "dels",
                 "Txn", "Range", "DelRng", "watchQ", "grants", "revoke", "watchers", "keys", "fsyncs"));
    return true;
  });
  (void)first;
  ctx.note(fmt("%-46s %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %8.2f %6.2f %6.2f", what.c_str(),
               c.proposals, c.puts, c.deletes, c.txn_rpcs, c.range_rpcs, c.delete_rpcs, c.watch_requests,
               c.lease_grants, c.lease_revokes, c.watchers, c.keys, c.wal_fsyncs));
  ctx.set_detail(ctx.metric(), {
                                   {"writes", c.proposals},
                                   {"puts", c.puts},
                                   {"deletes", c.deletes},
                                   {"txn_rpcs", c.txn_rpcs},
                                   {"range_rpcs", c.range_rpcs},
                                   {"put_rpcs", c.put_rpcs},
                                   {"delete_rpcs", c.delete_rpcs},
                                   {"watch_requests", c.watch_requests},
                                   {"lease_grants", c.lease_grants},
                                   {"lease_revokes", c.lease_revokes},
                                   {"watchers", c.watchers},
                                   {"watch_streams", c.watch_streams},
                                   {"keys", c.keys},
                                   {"wal_fsyncs", c.wal_fsyncs},
                               });
}

// Runs `op` n times, one at a time, between two settled scrapes; reports
// the difference divided by `per` (n, or n times the parties of a round).
double op_row(Context& ctx, const std::string& what, int n, double per, const std::function<void(int)>& op) {
  const auto before = settled(ctx);
  for (int i = 0; i < n; ++i) op(i);
  const auto cost = (settled(ctx) - before) / per;
  report(ctx, what, cost);
  return cost.proposals;
}

double op_row(Context& ctx, const std::string& what, const std::function<void(int)>& op) {
  return op_row(ctx, what, ops(ctx), ops(ctx), op);
}

// Parks kParked waiters made by `park` (each returns what closes it), reads
// the counters once they settled (three still polls: a parked waiter's
// watch comes after its key), then closes them. Watchers and keys are
// gauges, so their difference is what the parked waiters hold.
double parked_row(Context& ctx, const std::string& what, const std::function<std::function<void()>(int)>& park) {
  const auto before = settled(ctx);
  std::vector<std::function<void()>> closers;
  for (int i = 0; i < kParked; ++i) closers.push_back(park(i));
  const auto cost = (settled(ctx, 3) - before) / kParked;
  for (auto& close : closers) close();
  closers.clear();
  report(ctx, what, cost);
  return cost.watchers;
}

template <class T>
void ignore(etcd::Result<T>) {}

// --- operations ----------------------------------------------------------------

// What moves with no operation at all, per second: the floor under every
// row (zero on the bench's own cluster; other clients of an --endpoints
// cluster show up here, and in every row).
double idle(Context& ctx) {
  const auto before = settled(ctx);
  const auto started = Clock::now();
  std::this_thread::sleep_for(2s);
  const auto after = scrape(ctx);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  // The disk's side of every write so far in this run (put_seq and
  // put_pipelined included, when they ran): what docs/capacity.md's
  // formulas take as their input.
  for (const auto& endpoint : ctx.client.options().endpoints) {
    const auto samples = scrape_metrics(endpoint, std::chrono::seconds(5));
    const double fsyncs = sum_series(samples, "etcd_disk_wal_fsync_duration_seconds_count");
    const double commits = sum_series(samples, "etcd_disk_backend_commit_duration_seconds_count");
    ctx.note(
        fmt("capacity: member %s: %.0f WAL fsyncs, mean %.3f ms; %.0f backend commits, mean %.3f ms; "
            "%.0f raft entries committed",
            endpoint.c_str(), fsyncs,
            fsyncs > 0 ? 1000 * sum_series(samples, "etcd_disk_wal_fsync_duration_seconds_sum") / fsyncs : 0.0, commits,
            commits > 0 ? 1000 * sum_series(samples, "etcd_disk_backend_commit_duration_seconds_sum") / commits : 0.0,
            sum_series(samples, "etcd_server_proposals_committed_total")));
  }
  report(ctx, "idle, per second", (after - before) / seconds);
  return (after - before).proposals / seconds;
}

double mutex_cycle(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_mutex_cycle") + "lock";
  DistributedMutex m(ctx.client, name);
  const auto cycle = [&](int) {
    m.acquire().timeout(kCallBound).wait().value();
    if (!m.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release reported a lost hold");
  };
  cycle(0);  // the session's lease grant belongs to the object, not the cycle
  return op_row(ctx, "mutex acquire+release", cycle);
}

double mutex_first_cycle(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_mutex_first_cycle") + "lock";
  return op_row(ctx, "mutex new object: acquire+release+close", [&](int) {
    DistributedMutex m(ctx.client, name);
    m.acquire().timeout(kCallBound).wait().value();
    if (!m.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release reported a lost hold");
    m.close();
  });
}

// A holder, one waiter parked behind it, the release that hands the lock
// over, and the waiter's release: per handoff.
double mutex_handoff(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_mutex_handoff") + "lock";
  DistributedMutex a(ctx.client, name);
  DistributedMutex b(ctx.client, name);
  const auto cycle = [&](int) {
    a.acquire().timeout(kCallBound).wait().value();
    const uint64_t watches = ctx.client.stats().watches_open;
    auto waiting = std::async(std::launch::async, [&] { return b.acquire().timeout(kCallBound).wait(); });
    wait_until([&] { return ctx.client.stats().watches_open > watches; }, 10s, "the waiter never parked");
    if (!a.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release reported a lost hold");
    (void)waiting.get().value();
    if (!b.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release reported a lost hold");
  };
  cycle(0);
  return op_row(ctx, "mutex handoff: A acq, B parks, A rel, B acq+rel", cycle);
}

double semaphore_cycle(Context& ctx) {
  etcd::recipes::DistributedSemaphore sem(ctx.client, Context::key_prefix("capacity_semaphore_cycle") + "sem", 3);
  const auto cycle = [&](int) {
    auto permit = sem.acquire().timeout(kCallBound).wait().value();
    if (!permit.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release reported a lost permit");
  };
  cycle(0);
  return op_row(ctx, "semaphore (3 permits) acquire+release", cycle);
}

// The semaphore's contended hand-off (2 permits, one held throughout by
// a third object, so the "one of N" path runs): A takes the other permit,
// B parks, A releases, B takes it and releases: per hand-off.
double semaphore_handoff(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_semaphore_handoff") + "sem";
  etcd::recipes::DistributedSemaphore c(ctx.client, name, 2);
  etcd::recipes::DistributedSemaphore a(ctx.client, name, 2);
  etcd::recipes::DistributedSemaphore b(ctx.client, name, 2);
  auto held = c.acquire().timeout(kCallBound).wait().value();
  const auto cycle = [&](int) {
    auto permit = a.acquire().timeout(kCallBound).wait().value();
    const uint64_t watches = ctx.client.stats().watches_open;
    auto waiting = std::async(std::launch::async, [&] { return b.acquire().timeout(kCallBound).wait(); });
    wait_until([&] { return ctx.client.stats().watches_open > watches; }, 10s, "the waiter never parked");
    if (!permit.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release reported a lost permit");
    auto handed = waiting.get().value();
    if (!handed.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release reported a lost permit");
  };
  cycle(0);
  const double writes = op_row(ctx, "semaphore handoff: A acq, B parks, A rel, B acq+rel", cycle);
  (void)held.release().timeout(kCallBound).wait();
  return writes;
}

double rwlock_cycle(Context& ctx, bool write) {
  etcd::recipes::DistributedReadWriteLock rw(ctx.client, Context::key_prefix(ctx.metric()) + "lock");
  auto& side = write ? rw.write_lock() : rw.read_lock();
  const auto cycle = [&](int) {
    side.acquire().timeout(kCallBound).wait().value();
    if (!side.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release reported a lost hold");
  };
  cycle(0);
  return op_row(ctx, write ? "rwlock write acquire+release" : "rwlock read acquire+release", cycle);
}

double latch_cycle(Context& ctx) {
  etcd::recipes::LeaderLatch latch(ctx.client, Context::key_prefix("capacity_latch_cycle") + "election", "bench");
  const auto cycle = [&](int) {
    latch.start();
    latch.await_leadership().timeout(kCallBound).wait().value();
    if (!latch.resign().timeout(kCallBound).wait().value()) throw std::runtime_error("resign reported a lost term");
  };
  cycle(0);
  const double writes = op_row(ctx, "LeaderLatch campaign+resign", cycle);
  latch.close();
  return writes;
}

double queue_cycle(Context& ctx) {
  etcd::recipes::DistributedQueue q(ctx.client, Context::key_prefix("capacity_queue_cycle") + "queue");
  const auto cycle = [&](int) {
    (void)q.enqueue(kValue).timeout(kCallBound).wait().value();
    if (q.dequeue().timeout(10s).wait().value() != kValue) throw std::runtime_error("dequeued another value");
  };
  cycle(0);  // starts the object's view (a read and a watch, once per object)
  const double writes = op_row(ctx, "queue enqueue+dequeue", cycle);
  q.close();
  return writes;
}

double priority_queue_cycle(Context& ctx) {
  etcd::recipes::DistributedPriorityQueue q(ctx.client, Context::key_prefix("capacity_priority_queue_cycle") + "queue");
  const auto cycle = [&](int) {
    (void)q.enqueue(kValue, 10).timeout(kCallBound).wait().value();
    if (q.dequeue().timeout(10s).wait().value() != kValue) throw std::runtime_error("dequeued another value");
  };
  cycle(0);
  const double writes = op_row(ctx, "priority queue enqueue+dequeue", cycle);
  q.close();
  return writes;
}

double workqueue_cycle(Context& ctx) {
  etcd::recipes::DistributedWorkQueue q(ctx.client, Context::key_prefix("capacity_workqueue_cycle") + "queue");
  const auto cycle = [&](int) {
    (void)q.enqueue(kValue).timeout(kCallBound).wait().value();
    const auto item = q.receive().timeout(10s).wait().value();
    if (!item.ack().timeout(kCallBound).wait().value()) throw std::runtime_error("the ack found its claim gone");
  };
  cycle(0);  // grants the consumer's lease and starts its view
  const double writes = op_row(ctx, "work queue enqueue+receive+ack", cycle);
  q.close();
  return writes;
}

double counter_add(Context& ctx) {
  etcd::recipes::DistributedAtomicLong counter(ctx.client, Context::key_prefix("capacity_counter_add") + "counter");
  const auto add = [&](int) { (void)counter.increment().timeout(kCallBound).wait().value(); };
  add(0);
  const double writes = op_row(ctx, "counter add (uncontended)", add);
  counter.close();
  return writes;
}

// Rounds of a count barrier of 4 parties (4 objects, as 4 processes would
// be), all waiting at once: per party.
double barrier_party(Context& ctx) {
  constexpr int kParties = 4;
  const std::string name = Context::key_prefix("capacity_barrier_party") + "rendezvous";
  std::vector<std::unique_ptr<etcd::recipes::DistributedBarrierWithCount>> parties;
  for (int i = 0; i < kParties; ++i) {
    parties.push_back(std::make_unique<etcd::recipes::DistributedBarrierWithCount>(ctx.client, name, kParties));
  }
  const auto round = [&](int) {
    std::vector<std::future<etcd::Result<void>>> waits;
    for (auto& p : parties) waits.push_back(std::async(std::launch::async, [&p] { return p->wait().timeout(kCallBound).wait(); }));
    for (auto& w : waits) {
      if (w.wait_for(30s) != std::future_status::ready) throw std::runtime_error("a party was not released in 30 s");
      w.get().value();
    }
  };
  round(0);  // the parties' leases and watches
  const int rounds = ops(ctx) / kParties;
  const double writes =
      op_row(ctx, "count barrier, 4 parties: per party", rounds, static_cast<double>(rounds) * kParties, round);
  for (auto& p : parties) p->close();
  return writes;
}

double transient_cycle(Context& ctx) {
  const std::string key = Context::key_prefix("capacity_transient_cycle") + "key";
  return op_row(ctx, "transient key: new object, create+release", [&](int) {
    etcd::recipes::TransientKeyValue t(ctx.client, key, kValue);
    t.create().timeout(kCallBound).wait().value();
    if (!t.release().timeout(kCallBound).wait().value()) throw std::runtime_error("the key was not ours at release");
  });
}

etcd::recipes::ServiceInstance instance(int n) {
  std::string id = "i";
  id += std::to_string(n);
  return {.name = "api", .id = std::move(id), .address = "10.0.0.7", .port = 8080, .payload = R"({"zone":"a"})"};
}

double register_cycle(Context& ctx) {
  const std::string base = Context::key_prefix("capacity_register_cycle") + "services";
  etcd::recipes::ServiceRegistry registry(ctx.client, etcd::recipes::ServiceRegistryOptions{.base_path = base});
  const auto cycle = [&](int i) {
    registry.register_instance(instance(i)).timeout(kCallBound).wait().value();
    if (!registry.unregister("api", instance(i).id).timeout(kCallBound).wait().value()) throw std::runtime_error("unregister: not ours");
  };
  cycle(-1);
  const double writes = op_row(ctx, "service register+unregister", cycle);
  registry.close();
  return writes;
}

// 8 instances cached; picks only read the provider's memory.
double provider_pick(Context& ctx) {
  const std::string base = Context::key_prefix("capacity_provider_pick") + "services";
  etcd::recipes::ServiceRegistry registry(ctx.client, etcd::recipes::ServiceRegistryOptions{.base_path = base});
  for (int i = 0; i < 8; ++i) registry.register_instance(instance(i)).timeout(kCallBound).wait().value();
  etcd::recipes::ServiceProvider provider(ctx.client, "api", etcd::recipes::ServiceProviderOptions{.base_path = base});
  provider.wait_initialized().timeout(10s).wait().value();
  const double writes = op_row(ctx, "provider pick (8 instances cached)", 10'000, 10'000, [&](int) {
    if (!provider.pick()) throw std::runtime_error("no instance to pick");
  });
  provider.close();
  registry.close();
  return writes;
}

// --- parked waiters --------------------------------------------------------------

// Each waiter is its own object (own session or lease), as one process
// per waiter would be: waiters of one lock name need distinct sessions.
double parked_mutex(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_parked_mutex") + "lock";
  DistributedMutex holder(ctx.client, name);
  holder.acquire().timeout(kCallBound).wait().value();
  const double watchers = parked_row(ctx, "parked mutex waiter (own session)", [&](int) {
    auto m = std::make_shared<DistributedMutex>(ctx.client, name);
    m->acquire().then(ignore<etcd::recipes::Hold>);
    return [m] { m->close(); };
  });
  holder.close();
  return watchers;
}

double parked_semaphore(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_parked_semaphore") + "sem";
  constexpr int kPermits = 2;
  std::vector<std::unique_ptr<etcd::recipes::DistributedSemaphore>> holders;
  std::vector<etcd::recipes::Hold> permits;
  for (int i = 0; i < kPermits; ++i) {
    holders.push_back(std::make_unique<etcd::recipes::DistributedSemaphore>(ctx.client, name, kPermits));
    permits.push_back(holders.back()->acquire().timeout(kCallBound).wait().value());
  }
  const double watchers = parked_row(ctx, "parked semaphore waiter (2 permits held)", [&](int) {
    auto s = std::make_shared<etcd::recipes::DistributedSemaphore>(ctx.client, name, kPermits);
    s->acquire().then(ignore<etcd::recipes::Hold>);
    return [s] { s->close(); };
  });
  permits.clear();
  for (auto& h : holders) h->close();
  return watchers;
}

double parked_candidate(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_parked_candidate") + "election";
  etcd::recipes::LeaderLatch leader(ctx.client, name, "leader");
  leader.start();
  leader.await_leadership().timeout(10s).wait().value();
  const double watchers = parked_row(ctx, "parked LeaderLatch candidate", [&](int) {
    auto l = std::make_shared<etcd::recipes::LeaderLatch>(ctx.client, name, "candidate");
    l->start();
    return [l] { l->close(); };
  });
  leader.close();
  return watchers;
}

double parked_queue_consumer(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_parked_queue_consumer") + "queue";
  const double watchers = parked_row(ctx, "parked queue consumer object (dequeue)", [&](int) {
    auto q = std::make_shared<etcd::recipes::DistributedQueue>(ctx.client, name);
    q->dequeue().then(ignore<std::string>);
    return [q] { q->close(); };
  });
  delete_prefix(ctx, name + "/");
  return watchers;
}

double parked_workqueue_consumer(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_parked_workqueue_consumer") + "queue";
  const double watchers = parked_row(ctx, "parked work-queue consumer object (receive)", [&](int) {
    auto q = std::make_shared<etcd::recipes::DistributedWorkQueue>(ctx.client, name);
    q->receive().then(ignore<etcd::recipes::WorkItem>);
    return [q] { q->close(); };
  });
  delete_prefix(ctx, name + "/");
  return watchers;
}

// A count barrier that never fills: every party stays parked.
double parked_barrier_party(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_parked_barrier_party") + "rendezvous";
  const double watchers = parked_row(ctx, "parked count-barrier party", [&](int) {
    auto b = std::make_shared<etcd::recipes::DistributedBarrierWithCount>(ctx.client, name, 1000);
    b->wait().then(ignore<void>);
    return [b] { b->close(); };
  });
  delete_prefix(ctx, name + "/");
  return watchers;
}

double parked_gate_waiter(Context& ctx) {
  const std::string name = Context::key_prefix("capacity_parked_gate_waiter") + "gate";
  etcd::recipes::DistributedBarrier setter(ctx.client, name);
  setter.set().timeout(kCallBound).wait().value();
  const double watchers = parked_row(ctx, "parked gate waiter (barrier set)", [&](int) {
    auto b = std::make_shared<etcd::recipes::DistributedBarrier>(ctx.client, name);
    b->wait().then(ignore<void>);
    return [b] { b->close(); };
  });
  (void)setter.remove().timeout(kCallBound).wait().value();
  setter.close();
  return watchers;
}

// A children cache of a path holding 10 keys: what each started cache
// costs (its first read, its watch), and what it keeps while it runs.
double cache(Context& ctx) {
  const std::string path = Context::key_prefix("capacity_cache") + "config";
  for (int i = 0; i < 10; ++i) ctx.client.put(path + "/k" + std::to_string(i), kValue).timeout(kCallBound).wait().value();
  const double watchers = parked_row(ctx, "PathChildrenCache of 10 keys, started", [&](int) {
    auto c = std::make_shared<etcd::recipes::PathChildrenCache>(ctx.client, path);
    c->start();
    c->wait_initialized().timeout(10s).wait().value();
    return [c] { c->close(); };
  });
  delete_prefix(ctx, path + "/");
  return watchers;
}

// etcd's live Go heap, from its own numbers: after a collection the Go
// runtime sets the next target (go_memstats_next_gc_bytes) to twice the
// heap that survived it (GOGC=100, etcd's default). Reads of `ballast`
// (a prefix of large values) make garbage until two collections happened,
// so the target reflects what is live now. A plain heap-in-use reading
// would count garbage not collected yet and vary by a factor of ten.
double live_heap_bytes(Context& ctx, const std::string& endpoint, const std::string& ballast) {
  const auto gcs = [&] {
    return sum_series(scrape_metrics(endpoint, std::chrono::seconds(5)), "go_gc_duration_seconds_count");
  };
  const double start = gcs();
  etcd::GetOptions all;
  all.prefix = true;
  for (const auto give_up = Clock::now() + 60s; gcs() < start + 2;) {
    if (Clock::now() > give_up) throw std::runtime_error("etcd did not collect its heap within 60 s");
    for (int i = 0; i < 20; ++i) (void)ctx.client.get(ballast, all).timeout(kCallBound).wait().value();
  }
  return sum_series(scrape_metrics(endpoint, std::chrono::seconds(5)), "go_memstats_next_gc_bytes") / 2;
}

// etcd's memory per watcher, which the parked rows multiply: 20,000 raw
// watches (one key each, on the client's one stream) and the growth of the
// live heap of the member serving them.
double watcher_heap_bytes(Context& ctx) {
  constexpr int kWatches = 20'000;
  if (ctx.client.options().endpoints.size() != 1) throw Skipped("one member only (the heap of the serving member)");
  const std::string endpoint = ctx.client.options().endpoints.front();
  const std::string prefix = Context::key_prefix("capacity_watcher_heap_bytes");
  const std::string ballast = prefix + "ballast/";
  for (int i = 0; i < 200; ++i) ctx.client.put(ballast + std::to_string(i), std::string(4096, 'b')).timeout(kCallBound).wait().value();
  const double watchers_before = settled(ctx).watchers;
  const double before = live_heap_bytes(ctx, endpoint, ballast);
  std::vector<etcd::Watcher> watches;
  watches.reserve(kWatches);
  for (int i = 0; i < kWatches; ++i) {
    watches.push_back(ctx.client.watch(prefix + std::to_string(i), {}, [](etcd::Result<etcd::WatchResponse>) {}));
  }
  wait_until([&] { return scrape(ctx).watchers >= watchers_before + kWatches; }, 60s,
             "20,000 watches were not all created");
  (void)settled(ctx);
  const double after = live_heap_bytes(ctx, endpoint, ballast);
  const double per = (after - before) / kWatches;
  watches.clear();
  delete_prefix(ctx, prefix);
  ctx.note(
      fmt("capacity_watcher_heap_bytes: etcd's live Go heap %.1f MiB before, %.1f MiB with %d more watchers: "
          "%.0f bytes per watcher",
          before / (1 << 20), after / (1 << 20), kWatches, per));
  return per;
}

// etcd's memory per parked mutex waiter (its key in the index, its lease
// attachment, its watcher): 5,000 waiters behind 50 held locks, measured
// like watcher_heap_bytes. Waiter j of every name shares session j (a
// name's contenders need distinct sessions), so 100 sessions serve them
// all, as in waiters_threads; one session per waiter would add a lease each.
double parked_mutex_heap_bytes(Context& ctx) {
  constexpr int kNames = 50;
  constexpr int kPerName = 100;
  constexpr int kWaiters = kNames * kPerName;
  if (ctx.client.options().endpoints.size() != 1) throw Skipped("one member only (the heap of the serving member)");
  const std::string endpoint = ctx.client.options().endpoints.front();
  const std::string prefix = Context::key_prefix("capacity_parked_mutex_heap_bytes");
  const std::string ballast = prefix + "ballast/";
  for (int i = 0; i < 200; ++i) ctx.client.put(ballast + std::to_string(i), std::string(4096, 'b')).timeout(kCallBound).wait().value();
  const auto name = [&](int n) { return prefix + "locks/" + std::to_string(n); };
  std::vector<std::shared_ptr<DistributedMutex>> holders;
  for (int n = 0; n < kNames; ++n) {
    holders.push_back(std::make_shared<DistributedMutex>(ctx.client, name(n)));
    holders.back()->acquire().timeout(kCallBound).wait().value();
  }
  std::vector<std::shared_ptr<etcd::Session>> sessions;
  for (int j = 0; j < kPerName; ++j) {
    sessions.push_back(etcd::Session::create(ctx.client));
    sessions.back()->start().timeout(kCallBound).wait().value();
  }
  (void)settled(ctx);
  const double before = live_heap_bytes(ctx, endpoint, ballast);
  const uint64_t watches_before = ctx.client.stats().watches_open;
  std::vector<std::shared_ptr<DistributedMutex>> waiters;
  // In batches of 1,000: an acquisition's internal RPCs run under the
  // client's default timeout, which thousands queued at once would exceed.
  for (int j = 0; j < kPerName; ++j) {
    etcd::recipes::RecipeOptions options;
    options.session = sessions[static_cast<std::size_t>(j)];
    for (int n = 0; n < kNames; ++n) {
      waiters.push_back(std::make_shared<DistributedMutex>(ctx.client, name(n), options));
      waiters.back()->acquire().then(ignore<etcd::recipes::Hold>);
    }
    if ((j + 1) % 20 == 0) {
      wait_until([&] { return ctx.client.stats().watches_open >= watches_before + waiters.size(); }, 120s,
                 "the waiters did not park");
    }
  }
  const auto parked = settled(ctx, 3);
  const double after = live_heap_bytes(ctx, endpoint, ballast);
  const double per = (after - before) / kWaiters;
  ctx.note(
      fmt("capacity_parked_mutex_heap_bytes: etcd's live Go heap %.1f MiB before, %.1f MiB with %d parked mutex "
          "waiters (%.0f watchers, %.0f keys in etcd): %.0f bytes per waiter",
          before / (1 << 20), after / (1 << 20), kWaiters, parked.watchers, parked.keys, per));
  for (auto& w : waiters) w->close();
  for (auto& h : holders) h->close();
  for (auto& session : sessions) (void)session->close().timeout(kCallBound).wait();
  waiters.clear();
  delete_prefix(ctx, prefix);
  return per;
}

Metric capacity(std::string name, int order, std::string unit, std::function<double(Context&)> run) {
  return {.name = std::move(name),
          .unit = std::move(unit),
          .kind = Kind::kCost,
          .base = "",
          .order = order,
          .needs_capacity = true,
          .run = std::move(run)};
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    capacity("capacity_idle", 2999, "writes/s", idle),
    capacity("capacity_mutex_cycle", 3000, "writes", mutex_cycle),
    capacity("capacity_mutex_first_cycle", 3001, "writes", mutex_first_cycle),
    capacity("capacity_mutex_handoff", 3002, "writes", mutex_handoff),
    capacity("capacity_semaphore_cycle", 3010, "writes", semaphore_cycle),
    capacity("capacity_semaphore_handoff", 3011, "writes", semaphore_handoff),
    capacity("capacity_rwlock_read_cycle", 3020, "writes", [](Context& ctx) { return rwlock_cycle(ctx, false); }),
    capacity("capacity_rwlock_write_cycle", 3021, "writes", [](Context& ctx) { return rwlock_cycle(ctx, true); }),
    capacity("capacity_latch_cycle", 3030, "writes", latch_cycle),
    capacity("capacity_queue_cycle", 3040, "writes", queue_cycle),
    capacity("capacity_priority_queue_cycle", 3041, "writes", priority_queue_cycle),
    capacity("capacity_workqueue_cycle", 3042, "writes", workqueue_cycle),
    capacity("capacity_counter_add", 3050, "writes", counter_add),
    capacity("capacity_barrier_party", 3060, "writes", barrier_party),
    capacity("capacity_transient_cycle", 3070, "writes", transient_cycle),
    capacity("capacity_register_cycle", 3080, "writes", register_cycle),
    capacity("capacity_provider_pick", 3081, "writes", provider_pick),
    capacity("capacity_parked_mutex", 3100, "watchers", parked_mutex),
    capacity("capacity_parked_semaphore", 3101, "watchers", parked_semaphore),
    capacity("capacity_parked_candidate", 3102, "watchers", parked_candidate),
    capacity("capacity_parked_queue_consumer", 3103, "watchers", parked_queue_consumer),
    capacity("capacity_parked_workqueue_consumer", 3104, "watchers", parked_workqueue_consumer),
    capacity("capacity_parked_barrier_party", 3105, "watchers", parked_barrier_party),
    capacity("capacity_parked_gate_waiter", 3106, "watchers", parked_gate_waiter),
    capacity("capacity_cache", 3107, "watchers", cache),
    capacity("capacity_watcher_heap_bytes", 3110, "bytes", watcher_heap_bytes),
    capacity("capacity_parked_mutex_heap_bytes", 3111, "bytes", parked_mutex_heap_bytes),
});

}  // namespace
}  // namespace bench::metrics_capacity
