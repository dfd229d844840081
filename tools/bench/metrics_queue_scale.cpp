// Queue consumers against a long backlog (--scale): how long a new
// consumer takes from its construction to its first item, and what it
// holds meanwhile, when the queue already holds hundreds of thousands of
// items; and whether consumers that start together each pay for the
// backlog. Each metric fills a private member of the bench's release with
// the library's own producers (groups of 100 items per Txn), once per run,
// and starts its consumers as processes of their own (their resident set
// is theirs alone).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bench.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/work_queue.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "process.h"
#include "server_metrics.h"

namespace bench::metrics_queue_scale {
namespace {

using Seconds = std::chrono::duration<double>;

constexpr auto kWorkerFlag = "--queue-backlog-worker";
// Items a fill writes per Txn (enqueue_all's group), and how many such
// calls it keeps in flight.
constexpr int kGroup = 100;
constexpr int kFillInFlight = 16;
constexpr auto kFillBound = std::chrono::minutes(10);
// A consumer's first item, however long the backlog: generous, a bound
// and not the bar.
constexpr auto kFirstBound = std::chrono::seconds(120);
// How long the work-queue consumers receive and ack for their rate, each
// with kReceivers receives in flight.
constexpr auto kRateWindow = std::chrono::seconds(10);
constexpr int kReceivers = 1;
constexpr int kWorkers = 8;

// This process's CPU time so far (user and system), in seconds.
double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// etcd-recipes-bench --queue-backlog-worker KIND NAME ENDPOINTS SECONDS:
// constructs a DistributedQueue (KIND "queue") or DistributedWorkQueue
// ("work") over NAME, takes one item (a work item is acked) and prints
// "first SECONDS_TO_FIRST RSS_MB PEAK_RSS_MB CLIENT_RSS_MB ANON_MB" (its
// resident set with the client connected, before the queue object; the
// anonymous part of its resident set). With
// SECONDS > 0 it waits for the bench's signal, then receives and acks for
// SECONDS, one item at a time (as a worker that processes each item before
// the next), and prints "done ACKS ELAPSED_S CPU_S" (CPU_S: its CPU time
// meanwhile). KIND "bare": only a gRPC channel and one Range of NAME (the
// floor of this executable's resident set), then the "first" line.
int backlog_worker(const std::vector<std::string>& args) {
  return run_worker(args, 4, kWorkerFlag, "KIND NAME ENDPOINTS SECONDS", [&] {
    const std::string& kind = args[0];
    const std::string& name = args[1];
    if (kind == "bare") {
      // The floor: this same executable with a bare gRPC C++ channel that
      // made one Range, and nothing of the library running.
      const double before = rss_mb();
      auto channel = grpc::CreateChannel(worker_client_options(args[2]).endpoints.front(),
                                         grpc::InsecureChannelCredentials());
      auto stub = etcdserverpb::KV::NewStub(channel);
      etcdserverpb::RangeRequest request;
      request.set_key(name);
      request.set_limit(1);
      etcdserverpb::RangeResponse response;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + kCallBound);
      const grpc::Status st = stub->Range(&context, request, &response);
      if (!st.ok()) throw std::runtime_error("bare gRPC Range: " + st.error_message());
      std::printf("first 0 %.1f %.1f %.1f %.1f\n", rss_mb(), rss_mb("VmHWM"), before, rss_mb("RssAnon"));
      std::fflush(stdout);
      return 0;
    }
    etcd::Client client(worker_client_options(args[2]));
    const auto seconds = std::chrono::seconds(std::stoi(args[3]));
    // The connection is up before the clock starts: what is measured is
    // the consumer's own start.
    (void)client.get(name).timeout(kCallBound).wait().value();
    const double base_mb = rss_mb();
    const auto started = Clock::now();
    if (kind == "queue") {
      etcd::recipes::DistributedQueue queue(client, name);
      (void)queue.dequeue().timeout(kFirstBound).wait().value();
      std::printf("first %.4f %.1f %.1f %.1f %.1f\n", Seconds(Clock::now() - started).count(), rss_mb(),
                  rss_mb("VmHWM"), base_mb, rss_mb("RssAnon"));
      std::fflush(stdout);
      return 0;
    }
    if (kind != "work") throw std::runtime_error("KIND is queue or work, not " + kind);
    etcd::recipes::DistributedWorkQueue queue(client, name);
    const auto first = queue.receive().timeout(kFirstBound).wait().value();
    const double first_s = Seconds(Clock::now() - started).count();
    (void)first.ack().timeout(kCallBound).wait().value();
    std::printf("first %.4f %.1f %.1f %.1f %.1f\n", first_s, rss_mb(), rss_mb("VmHWM"), base_mb, rss_mb("RssAnon"));
    std::fflush(stdout);
    if (seconds.count() == 0) return 0;
    if (!await_signal(Clock::now() + kFirstBound * 2, [] {})) throw std::runtime_error("the bench never said go");
    std::atomic<int64_t> acks{0};
    std::atomic<bool> failed{false};
    const double cpu_before = cpu_seconds();
    const auto from = Clock::now();
    const auto until = from + seconds;
    std::vector<std::thread> receivers;
    for (int i = 0; i < kReceivers; ++i) {
      receivers.emplace_back([&] {
        try {
          while (Clock::now() < until) {
            const auto item = queue.receive_for(std::chrono::seconds(2));
            if (!item) continue;
            if (item->ack().timeout(kCallBound).wait().value()) acks.fetch_add(1);
          }
        } catch (const std::exception& e) {
          if (!failed.exchange(true)) std::fprintf(stderr, "queue-backlog-worker: %s\n", e.what());
        }
      });
    }
    for (auto& t : receivers) t.join();
    if (failed.load()) throw std::runtime_error("a receive or an ack failed");
    std::printf("done %lld %.3f %.3f\n", static_cast<long long>(acks.load()), Seconds(Clock::now() - from).count(),
                cpu_seconds() - cpu_before);
    std::fflush(stdout);
    return 0;
  });
}

// A private member whose queue NAME holds `items` items (DistributedQueue
// or DistributedWorkQueue keys, as `Q` writes them). Kept for the run, so
// the metrics that read one backlog share its fill.
struct Backlog {
  std::shared_ptr<etcd::testing::EtcdCluster> member;
  std::string name;
  int items = 0;
  double fill_s = 0;
};

template <class Q>
Backlog fill(Context& ctx, const std::string& name, int items) {
  Backlog backlog{.member = ctx.private_member(), .name = name, .items = items};
  etcd::Client client(worker_client_options(backlog.member->endpoints_csv()));
  // Several producers, as a backlog builds up: each object's group commit
  // sends its own Txns.
  std::vector<std::unique_ptr<Q>> producers;
  for (int i = 0; i < kFillInFlight; ++i) producers.push_back(std::make_unique<Q>(client, name));
  const std::vector<std::string> group(kGroup, std::string(32, 'v'));
  const auto started = Clock::now();
  const auto deadline = started + kFillBound;
  Completions written;
  for (int sent = 0; sent < items; sent += kGroup) {
    written.add(producers[static_cast<size_t>(sent / kGroup) % producers.size()]->enqueue_all(group).timeout(kCallBound));
    if ((sent / kGroup + 1) % kFillInFlight == 0) written.wait_all(deadline, "the fill's enqueues");
  }
  written.wait_all(deadline, "the fill's enqueues");
  backlog.fill_s = Seconds(Clock::now() - started).count();
  const int64_t held = producers.front()->size().timeout(kCallBound).wait().value();
  if (held != items) throw std::runtime_error(fmt("the fill left %lld items, not %d", static_cast<long long>(held), items));
  return backlog;
}

// The machine's CPU time so far (all cores, /proc/stat), busy and total,
// in clock ticks: what the consumers, the bench and etcd share.
struct MachineCpu {
  double busy = 0;
  double total = 0;
};
MachineCpu machine_cpu() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  const double busy = user + nice + system + irq + softirq + steal;
  return {busy, busy + idle + iowait};
}

struct First {
  double seconds = 0;
  double rss_mb = 0;
  double peak_mb = 0;
  double client_mb = 0;  // before the queue object
  double anon_mb = 0;    // RssAnon, after the first item
};

First parse_first(const std::string& line, int index) {
  std::istringstream in(line);
  First f;
  if (!(in >> f.seconds >> f.rss_mb >> f.peak_mb >> f.client_mb >> f.anon_mb)) {
    throw std::runtime_error(fmt("worker %d said 'first %s'", index, line.c_str()));
  }
  return f;
}

std::unique_ptr<ChildProcess> start_worker(const std::string& kind, const Backlog& backlog, std::chrono::seconds window) {
  return std::make_unique<ChildProcess>(std::vector<std::string>{self_path().string(), kWorkerFlag, kind, backlog.name,
                                                                 backlog.member->endpoints_csv(),
                                                                 std::to_string(window.count())});
}

// --- queue_first_item_s_500k, queue_consumer_rss_mb_500k, and the work
// queue's ------------------------------------------------------------------

constexpr int kLongBacklog = 500'000;

// A new consumer of KIND ("queue", "work") on a backlog of kLongBacklog.
template <class Q>
const First& first_on_long_backlog(Context& ctx, const std::string& kind) {
  return ctx.memo<First>("first_500k_" + kind, [&ctx, kind] {
    const Backlog backlog = fill<Q>(ctx, "bench/backlog-" + kind, kLongBacklog);
    auto worker = start_worker(kind, backlog, std::chrono::seconds(0));
    const First f = parse_first(expect_line(*worker, "first", Clock::now() + kFirstBound + std::chrono::seconds(10), 0), 0);
    auto bare_worker = start_worker("bare", backlog, std::chrono::seconds(0));
    const First bare = parse_first(expect_line(*bare_worker, "first", Clock::now() + kCallBound, 0), 0);
    ctx.set_detail(ctx.metric(), {{"rss_mb", f.rss_mb},
                                  {"peak_rss_mb", f.peak_mb},
                                  {"client_rss_mb", f.client_mb},
                                  {"bare_grpc_rss_mb", bare.peak_mb},
                                  {"fill_s", backlog.fill_s}});
    ctx.note(fmt("%s: etcd %s, a %s of %d items (filled in %.1f s by %d producers, %d items per Txn): a new "
                 "consumer process took its first item %.3f s after its construction; resident set %.1f MB "
                 "then, peak %.1f MB, of which %.1f MB before the queue object (the client, connected); %.1f MB of it "
                 "anonymous (the rest: mapped files, the libraries' code); the same executable with a bare gRPC C++ "
                 "channel that made one Range: %.1f MB",
                 ctx.metric().c_str(), backlog.member->version().text.c_str(),
                 kind == "queue" ? "DistributedQueue" : "DistributedWorkQueue", kLongBacklog, backlog.fill_s,
                 kFillInFlight, kGroup, f.seconds, f.rss_mb, f.peak_mb, f.client_mb, f.anon_mb, bare.peak_mb));
    return f;
  });
}

const First& queue_first(Context& ctx) { return first_on_long_backlog<etcd::recipes::DistributedQueue>(ctx, "queue"); }
const First& workqueue_first(Context& ctx) {
  return first_on_long_backlog<etcd::recipes::DistributedWorkQueue>(ctx, "work");
}

// --- workqueue_first_item_s_8c_100k --------------------------------------------

constexpr int kWorkBacklog = 100'000;

// One consumer process receives and acks for kRateWindow (its rate alone),
// then kWorkers processes start at once against what is left: the slowest
// one's construction → first item, and their acks per second together.
double workqueue_many_first(Context& ctx) {
  const Backlog backlog = fill<etcd::recipes::DistributedWorkQueue>(ctx, "bench/workqueue-backlog", kWorkBacklog);
  const auto run = [&](int n) {
    std::vector<std::unique_ptr<ChildProcess>> workers;
    for (int i = 0; i < n; ++i) workers.push_back(start_worker("work", backlog, kRateWindow));
    std::vector<First> firsts;
    const auto first_lines = expect_lines(workers, "first", Clock::now() + kFirstBound + std::chrono::seconds(10));
    for (size_t i = 0; i < first_lines.size(); ++i) firsts.push_back(parse_first(first_lines[i], static_cast<int>(i)));
    const std::string metrics_endpoint = "127.0.0.1:" + std::to_string(backlog.member->metrics_port(0));
    const double etcd_cpu_before = etcd_cpu_seconds(metrics_endpoint);
    const MachineCpu machine_before = machine_cpu();
    const auto window_from = Clock::now();
    signal_workers(workers);
    int64_t acks = 0;
    double elapsed = 0, consumers_cpu = 0;
    const auto done_lines = expect_lines(workers, "done", Clock::now() + kRateWindow + kCallBound + std::chrono::seconds(10));
    for (size_t i = 0; i < done_lines.size(); ++i) {
      std::istringstream in(done_lines[i]);
      long long a = 0;
      double s = 0, cpu = 0;
      if (!(in >> a >> s >> cpu)) throw std::runtime_error(fmt("worker %zu's 'done' line did not parse", i));
      acks += a;
      consumers_cpu += cpu;
      elapsed = std::max(elapsed, s);
    }
    const double window_s = Seconds(Clock::now() - window_from).count();
    const double etcd_cpu_after = etcd_cpu_seconds(metrics_endpoint);
    const MachineCpu machine_after = machine_cpu();
    struct Run {
      double slowest_first_s = 0;
      double peak_mb = 0;
      double client_mb = 0;
      double acks_per_s = 0;
      double etcd_cpu_pct = 0;     // of one core
      double machine_busy_pct = 0;  // of all cores
      double consumer_cpu_ms_per_ack = 0;  // the consumers' together
      double etcd_cpu_ms_per_ack = 0;
    } r;
    r.etcd_cpu_pct = 100.0 * (etcd_cpu_after - etcd_cpu_before) / window_s;
    r.machine_busy_pct =
        100.0 * (machine_after.busy - machine_before.busy) / std::max(1.0, machine_after.total - machine_before.total);
    for (const auto& f : firsts) {
      r.slowest_first_s = std::max(r.slowest_first_s, f.seconds);
      r.peak_mb = std::max(r.peak_mb, f.peak_mb);
      r.client_mb = std::max(r.client_mb, f.client_mb);
    }
    r.acks_per_s = static_cast<double>(acks) / elapsed;
    r.consumer_cpu_ms_per_ack = 1000.0 * consumers_cpu / std::max<double>(1, static_cast<double>(acks));
    r.etcd_cpu_ms_per_ack = 1000.0 * (etcd_cpu_after - etcd_cpu_before) / std::max<double>(1, static_cast<double>(acks));
    return r;
  };
  const auto one = run(1);
  const auto many = run(kWorkers);
  ctx.set_detail(ctx.metric(), {{"first_item_s_1c", one.slowest_first_s},
                                {"acks_per_s_1c", one.acks_per_s},
                                {"acks_per_s_8c", many.acks_per_s},
                                {"acks_8c_vs_1c", many.acks_per_s / one.acks_per_s},
                                {"peak_rss_mb_per_consumer", std::max(one.peak_mb, many.peak_mb)},
                                {"etcd_cpu_pct_1c", one.etcd_cpu_pct},
                                {"etcd_cpu_pct_8c", many.etcd_cpu_pct},
                                {"machine_busy_pct_1c", one.machine_busy_pct},
                                {"machine_busy_pct_8c", many.machine_busy_pct},
                                {"consumer_cpu_ms_per_ack_1c", one.consumer_cpu_ms_per_ack},
                                {"consumer_cpu_ms_per_ack_8c", many.consumer_cpu_ms_per_ack},
                                {"etcd_cpu_ms_per_ack_1c", one.etcd_cpu_ms_per_ack},
                                {"etcd_cpu_ms_per_ack_8c", many.etcd_cpu_ms_per_ack}});
  ctx.note(fmt("workqueue_first_item_s_8c_100k: etcd %s, a DistributedWorkQueue of %d items (filled in %.1f s): "
               "one consumer process: first item %.3f s, %.0f acks/s (%d receives in flight); then %d processes "
               "at once: the slowest's first item %.3f s, %.0f acks/s together (%.2fx one); peak resident set "
               "per consumer %.1f MB (%.1f MB before the queue object); etcd CPU %.0f%% / %.0f%% of a core, the "
               "machine %.0f%% / %.0f%% busy; CPU per ack: the consumers %.2f / %.2f ms, etcd %.2f / %.2f ms "
               "(one / %d consumers)",
               backlog.member->version().text.c_str(), kWorkBacklog, backlog.fill_s, one.slowest_first_s,
               one.acks_per_s, kReceivers, kWorkers, many.slowest_first_s, many.acks_per_s,
               many.acks_per_s / one.acks_per_s, std::max(one.peak_mb, many.peak_mb),
               std::max(one.client_mb, many.client_mb), one.etcd_cpu_pct, many.etcd_cpu_pct, one.machine_busy_pct,
               many.machine_busy_pct, one.consumer_cpu_ms_per_ack, many.consumer_cpu_ms_per_ack,
               one.etcd_cpu_ms_per_ack, many.etcd_cpu_ms_per_ack, kWorkers));
  return many.slowest_first_s;
}

[[maybe_unused]] const bool kRegistered =
    add_metrics({
        scale_metric("queue_first_item_s_500k", "s", Kind::kCost, 4040, [](Context& ctx) { return queue_first(ctx).seconds; }),
        scale_metric("queue_consumer_rss_mb_500k", "MB", Kind::kCost, 4041, [](Context& ctx) { return queue_first(ctx).peak_mb; }),
        scale_metric("workqueue_first_item_s_500k", "s", Kind::kCost, 4042, [](Context& ctx) { return workqueue_first(ctx).seconds; }),
        scale_metric("workqueue_consumer_rss_mb_500k", "MB", Kind::kCost, 4043, [](Context& ctx) { return workqueue_first(ctx).peak_mb; }),
        scale_metric("workqueue_first_item_s_8c_100k", "s", Kind::kCost, 4044, workqueue_many_first),
    }) &&
    add_helper_mode({.flag = kWorkerFlag, .run = backlog_worker});

}  // namespace
}  // namespace bench::metrics_queue_scale
