// Production-scale metrics (--scale): many sessions (one lease each, the
// default 10 s TTL) spread over 4 processes, kept for 60 s against one
// private etcd member. The figure is the number of sessions lost, which
// must be 0; the notes say what etcd received and spent meanwhile.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <ctime>
#include <functional>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "bench.h"
#include "etcd/recipes/service_registry.h"
#include "etcd/session.h"
#include "process.h"
#include "server_metrics.h"

namespace bench::metrics_scale {
namespace {

using Seconds = std::chrono::duration<double>;

constexpr auto kWorkerFlag = "--scale-sessions-worker";
constexpr int kProcesses = 4;
constexpr auto kTtl = std::chrono::seconds(10);
constexpr auto kHold = std::chrono::seconds(60);
// Sessions a worker starts at once (each start is one LeaseGrant).
constexpr int kStartWave = 250;
// How long a worker may take to start its sessions; how long it waits for
// the bench's signals (the end of the hold, then the go-ahead to close).
constexpr auto kStartBound = std::chrono::seconds(120);
constexpr auto kSignalBound = kStartBound + kHold + std::chrono::seconds(120);
// The bench tells its workers with kWorkerSignal (process.h): the hold is
// over (report), then: close.

// etcd-recipes-bench --scale-sessions-worker ENDPOINTS COUNT TTL_S: starts
// COUNT sessions and prints "ready"; keeps them until the bench signals the
// end of the hold, then prints "done LOST RESTARTS STREAMS MIN_MARGIN_MS";
// closes them at the bench's second signal, and exits. A session counts as
// lost when its loss is reported (on_lost, for any reason but its own
// close) or it is not alive at the end of the hold.
int sessions_worker(const std::vector<std::string>& args) {
  return run_worker(args, 3, kWorkerFlag, "ENDPOINTS COUNT TTL_S", [&] {
    etcd::Client client(worker_client_options(args[0]));
    const int count = std::stoi(args[1]);
    const auto ttl = std::chrono::seconds(std::stoi(args[2]));

    std::vector<std::shared_ptr<etcd::Session>> sessions;
    std::vector<etcd::Subscription> subs;
    auto lost = std::make_shared<std::atomic<int>>(0);
    sessions.reserve(static_cast<std::size_t>(count));
    Completions started;
    const auto start_deadline = Clock::now() + kStartBound;
    for (int i = 0; i < count; ++i) {
      auto session = etcd::Session::create(client, etcd::SessionOptions{.ttl = ttl});
      subs.push_back(session->on_lost([lost](const etcd::Status& why) {
        if (!why.is(etcd::Errc::kClosed)) lost->fetch_add(1);
      }));
      started.add(session->start().timeout(kCallBound));
      sessions.push_back(std::move(session));
      if ((i + 1) % kStartWave == 0 || i + 1 == count) started.wait_all(start_deadline, "session starts");
    }
    std::printf("ready %d\n", count);
    std::fflush(stdout);

    // The closest any session came to its expiry, sampled every 0.5 s.
    auto min_margin = Clock::duration::max();
    const auto deadline = Clock::now() + kSignalBound;
    if (!await_signal(deadline, [&] {
          const auto now = Clock::now();
          for (const auto& s : sessions) {
            if (s->alive()) min_margin = std::min(min_margin, s->safe_until() - now);
          }
        })) {
      throw std::runtime_error("the bench never ended the hold");
    }
    int not_alive = 0;
    for (const auto& s : sessions) not_alive += s->alive() ? 0 : 1;
    const auto stats = client.stats();
    std::printf("done %d %llu %llu %lld\n", std::max(lost->load(), not_alive),
                static_cast<unsigned long long>(stats.lease_stream_restarts),
                static_cast<unsigned long long>(stats.lease_streams),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(min_margin).count()));
    std::fflush(stdout);
    // Still kept while the bench reads etcd's counters: closing now would
    // count as revokes.
    (void)await_signal(deadline, [] {});
    Completions closed;
    for (const auto& s : sessions) closed.add(s->close().timeout(kCallBound));
    closed.wait_all(Clock::now() + kCallBound + std::chrono::seconds(5), "session closes");
    return 0;
  });
}

struct Scrape {
  double keepalives = 0;    // LeaseKeepAlive requests etcd received
  double cpu_seconds = 0;   // etcd's process CPU time
  double revoked = 0;       // leases etcd revoked (an expiry is a revoke)
  Clock::time_point at{};
};

Scrape scrape(const std::string& metrics_endpoint) {
  const auto samples = scrape_metrics(metrics_endpoint, std::chrono::seconds(10));
  Scrape s;
  s.keepalives = sum_series(samples, "grpc_server_msg_received_total", "grpc_method=\"LeaseKeepAlive\"");
  s.cpu_seconds = sum_series(samples, "process_cpu_seconds_total");
  s.revoked = sum_series(samples, "etcd_debugging_lease_revoked_total");
  s.at = Clock::now();
  return s;
}

// `total` sessions in kProcesses workers against a private member of the
// bench's etcd release, kept for kHold.
double sessions_lost(Context& ctx, int total) {
  auto cluster = ctx.private_member();  // Skipped with --endpoints
  const std::string metrics_endpoint = "127.0.0.1:" + std::to_string(cluster->metrics_port(0));

  const auto workers = start_workers(kProcesses, total, [&](int n) {
    return std::vector<std::string>{kWorkerFlag, cluster->endpoints_csv(), std::to_string(n), std::to_string(kTtl.count())};
  });
  const auto started_at = Clock::now();
  (void)expect_lines(workers, "ready", started_at + kStartBound + std::chrono::seconds(10));
  const double start_s = Seconds(Clock::now() - started_at).count();
  // Every worker holds its sessions over the same window.
  const Scrape before = scrape(metrics_endpoint);
  std::this_thread::sleep_for(kHold);
  const Scrape after = scrape(metrics_endpoint);
  signal_workers(workers);
  int lost = 0;
  unsigned long long restarts = 0, streams = 0;
  long long min_margin_ms = -1;
  const auto lines = expect_lines(workers, "done", Clock::now() + std::chrono::seconds(30));
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::istringstream in(line);
    int l = 0;
    unsigned long long r = 0, s = 0;
    long long m = 0;
    if (!(in >> l >> r >> s >> m)) {
      throw std::runtime_error("worker " + std::to_string(i) + " said 'done " + line + "'");
    }
    lost += l;
    restarts += r;
    streams += s;
    min_margin_ms = min_margin_ms < 0 ? m : std::min(min_margin_ms, m);
  }
  // Now they may close their sessions; they exit when done (bounded; then
  // they are killed), so the member is not killed in the middle of the
  // revokes.
  signal_workers(workers);
  const auto closed_deadline = Clock::now() + kCallBound + std::chrono::seconds(10);
  drain_workers(workers, closed_deadline);
  const double window_s = Seconds(after.at - before.at).count();
  const double keepalives_per_s = (after.keepalives - before.keepalives) / window_s;
  const double cpu_pct = 100.0 * (after.cpu_seconds - before.cpu_seconds) / window_s;
  const double revoked = after.revoked - before.revoked;
  const double needed_per_s = total * 3.0 / static_cast<double>(kTtl.count());
  const std::string name = ctx.metric();
  ctx.set_detail(name, {{"keepalives_per_s", keepalives_per_s},
                        {"keepalives_needed_per_s", needed_per_s},
                        {"etcd_cpu_pct", cpu_pct},
                        {"stream_restarts", static_cast<double>(restarts)},
                        {"lease_streams", static_cast<double>(streams)},
                        {"leases_revoked_by_etcd", revoked},
                        {"min_margin_ms", static_cast<double>(min_margin_ms)},
                        {"start_s", start_s}});
  ctx.note(fmt("%s: etcd %s, %d sessions (TTL %lld s) in %d processes for %.0f s: %d lost, %.0f revoked by etcd; "
               "etcd received %.0f keep-alives/s (%.0f needed at TTL/3), etcd CPU %.0f%%; %llu keep-alive streams, "
               "%llu stream restarts; closest margin %lld ms; started in %.1f s",
               name.c_str(), cluster->version().text.c_str(), total, static_cast<long long>(kTtl.count()),
               kProcesses, window_s, lost, revoked, keepalives_per_s, needed_per_s, cpu_pct, streams, restarts,
               min_margin_ms, start_s));
  // An expiry etcd saw is a loss whatever the workers believe.
  return std::max<double>(lost, revoked);
}

// --- registrations_idle_etcd_cpu_5000 ------------------------------------------------

constexpr auto kRegistrationsFlag = "--scale-registrations-worker";
constexpr auto kRegistrationHold = std::chrono::seconds(20);

// etcd-recipes-bench --scale-registrations-worker ENDPOINTS COUNT OWN: one
// ServiceRegistry registers COUNT instances (OWN 1: a lease each) and
// prints "ready"; at the bench's signal prints "done LOST"; at the second
// closes the registry and exits.
int registrations_worker(const std::vector<std::string>& args) {
  return run_worker(args, 3, kRegistrationsFlag, "ENDPOINTS COUNT OWN", [&] {
    etcd::Client client(worker_client_options(args[0]));
    const int count = std::stoi(args[1]);
    etcd::recipes::ServiceRegistryOptions options;
    options.base_path = Context::key_prefix("registrations") + "services";
    options.recipe.session_ttl = kTtl;
    options.recipe.own_presence_lease = args[2] == "1";
    etcd::recipes::ServiceRegistry registry(client, options);
    auto lost = std::make_shared<std::atomic<int>>(0);
    auto sub = registry.on_lost([lost](const etcd::recipes::ServiceInstance&, const etcd::Status&) { lost->fetch_add(1); });
    Completions registered;
    const auto deadline = Clock::now() + kStartBound;
    for (int i = 0; i < count; ++i) {
      etcd::recipes::ServiceInstance instance;
      instance.name = "api";
      instance.id = fmt("%d-%d", static_cast<int>(::getpid()), i);
      instance.address = "10.0.0.1";
      instance.port = static_cast<uint16_t>(1024 + i % 60000);
      registered.add(registry.register_instance(std::move(instance)).timeout(kCallBound));
      if ((i + 1) % kStartWave == 0 || i + 1 == count) registered.wait_all(deadline, "registrations");
    }
    std::printf("ready %d\n", count);
    std::fflush(stdout);
    const auto signal_deadline = Clock::now() + kSignalBound;
    if (!await_signal(signal_deadline, [] {})) throw std::runtime_error("the bench never ended the hold");
    std::printf("done %d\n", lost->load());
    std::fflush(stdout);
    (void)await_signal(signal_deadline, [] {});
    registry.close();
      return 0;
  });
}

// `total` registrations in kProcesses workers, idle for kRegistrationHold:
// etcd's CPU (% of a core) over the hold.
double registrations_idle_cpu(Context& ctx, int total, bool own) {
  auto cluster = ctx.private_member();
  const std::string metrics_endpoint = "127.0.0.1:" + std::to_string(cluster->metrics_port(0));
  const auto workers = start_workers(kProcesses, total, [&](int n) {
    return std::vector<std::string>{kRegistrationsFlag, cluster->endpoints_csv(), std::to_string(n), own ? "1" : "0"};
  });
  (void)expect_lines(workers, "ready", Clock::now() + kStartBound + std::chrono::seconds(10));
  // Settle: the registrations' own writes are done; what follows is idle.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const Scrape before = scrape(metrics_endpoint);
  std::this_thread::sleep_for(kRegistrationHold);
  const Scrape after = scrape(metrics_endpoint);
  signal_workers(workers);
  int lost = 0;
  for (const auto& line : expect_lines(workers, "done", Clock::now() + std::chrono::seconds(30))) lost += std::stoi(line);
  signal_workers(workers);
  const auto closed_deadline = Clock::now() + std::chrono::seconds(30);
  drain_workers(workers, closed_deadline);
  const double window_s = Seconds(after.at - before.at).count();
  const double cpu_pct = 100.0 * (after.cpu_seconds - before.cpu_seconds) / window_s;
  const double keepalives_per_s = (after.keepalives - before.keepalives) / window_s;
  ctx.set_detail(ctx.metric(), {{"keepalives_per_s", keepalives_per_s}, {"lost", static_cast<double>(lost)}});
  ctx.note(fmt("%s: etcd %s, %d registrations in %d processes (%s), idle for %.0f s: etcd CPU %.2f%% of a core, "
               "%.1f keep-alives/s received, %d lost",
               ctx.metric().c_str(), cluster->version().text.c_str(), total, kProcesses,
               own ? "a lease each" : "one shared lease per process", window_s, cpu_pct, keepalives_per_s, lost));
  if (lost > 0) throw std::runtime_error(fmt("%d registrations were lost while idle", lost));
  return cpu_pct;
}

Metric registrations(std::string name, int order, int total, bool own) {
  return scale_metric(std::move(name), "% core", Kind::kCost, order,
                      [total, own](Context& ctx) { return registrations_idle_cpu(ctx, total, own); });
}

Metric scale(std::string name, int order, int total) {
  return scale_metric(std::move(name), "sessions", Kind::kCount, order,
                      [total](Context& ctx) { return sessions_lost(ctx, total); });
}

[[maybe_unused]] const bool kRegistered = add_metrics({
                                              scale("sessions_lost_2500", 4000, 2500),
                                              scale("sessions_lost_10k", 4001, 10000),
                                              registrations("registrations_idle_etcd_cpu_5000", 4020, 5000, false),
                                              registrations("registrations_idle_etcd_cpu_5000_own", 4021, 5000, true),
                                          }) &&
                                          add_helper_mode({.flag = kWorkerFlag, .run = sessions_worker}) &&
                                          add_helper_mode({.flag = kRegistrationsFlag, .run = registrations_worker});

}  // namespace
}  // namespace bench::metrics_scale
