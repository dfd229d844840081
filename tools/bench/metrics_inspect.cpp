// inspect_s_500k (--scale): `etcd-recipes inspect` of a prefix holding a
// 500,000-item queue (the producer's key layout, eight producers
// interleaved so key order is not creation order) and a lock with 1,000
// waiters, in a private member. The value is the command's wall time, as
// its user sees it; its output must stay short (the summary, not the keys)
// and state the exact depth.

#include <cstdio>
#include <string>
#include <vector>

#include "bench.h"
#include "process.h"

namespace bench::metrics_inspect {
namespace {

constexpr int kItems = 500'000;
constexpr int kProducers = 8;
constexpr int kWaiters = 1000;
constexpr size_t kMaxLines = 100;
using Seconds = std::chrono::duration<double>;

// The CLI beside this bench: installed in the same bin directory, or in
// the build tree's tools/etcd-recipes/.
std::filesystem::path cli_path() {
  const auto dir = self_path().parent_path();
  for (const auto& p : {dir / "etcd-recipes", dir.parent_path() / "etcd-recipes" / "etcd-recipes"}) {
    if (std::filesystem::is_regular_file(p)) return p;
  }
  throw Skipped("the etcd-recipes CLI is not beside the bench");
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

double inspect_500k(Context& ctx) {
  const auto cli = cli_path();
  auto member = ctx.private_member();
  etcd::ClientOptions options;
  options.endpoints = member->endpoints();
  etcd::Client client(std::move(options));
  const std::string base = "scale/inspect";
  const std::string queue = base + "/q";

  const auto fill_started = Clock::now();
  const auto fill_deadline = Clock::now() + std::chrono::minutes(5);
  put_all(client, kItems, [&](int i) {
    const int producer = i % kProducers;
    const int seq = i / kProducers + 1;
    return std::pair{queue + "/items/" + hex16(0xa000 + producer) + "-" + hex16(static_cast<uint64_t>(seq)),
                     fmt("item %07d of the backlog", i)};
  }, fill_deadline);
  Completions puts;
  for (int p = 0; p < kProducers; ++p) {
    puts.add(client.put(queue + "/producers/" + hex16(0xa000 + p), std::to_string(kItems / kProducers)).timeout(kCallBound));
  }
  // The lock's waiters: etcd's Go layout, NAME/<lease in hex> on that lease.
  std::vector<int64_t> leases;
  for (int i = 0; i < kWaiters; ++i) {
    leases.push_back(client.lease_grant(std::chrono::seconds(600)).timeout(kCallBound).wait().value().id);
  }
  for (int64_t lease : leases) {
    char name[32];
    std::snprintf(name, sizeof name, "%llx", static_cast<unsigned long long>(lease));
    puts.add(client.put(base + "/lock/" + name, "waiter", etcd::PutOptions{.lease = lease}).timeout(kCallBound));
  }
  puts.wait_all(fill_deadline, "fill");
  const double fill_s = Seconds(Clock::now() - fill_started).count();

  const auto started = Clock::now();
  const auto r = run_process({cli.string(), "--endpoints", member->endpoints_csv(), "--timeout", "30s", "inspect", base},
                             {}, std::chrono::minutes(2));
  const double seconds = Seconds(Clock::now() - started).count();
  if (r.exit_code != 0) {
    throw std::runtime_error("inspect exited " + std::to_string(r.exit_code) + ": " + r.err.substr(0, 400));
  }
  size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  ctx.note(fmt("%s: etcd %s, %d queue items and %d lock waiters (filled in %.1f s): inspect took %.2f s, printed "
               "%zu lines, %zu bytes",
               ctx.metric().c_str(), member->version().text.c_str(), kItems, kWaiters, fill_s, seconds, lines,
               r.out.size()));
  ctx.set_detail(ctx.metric(), {{"lines", static_cast<double>(lines)}, {"bytes", static_cast<double>(r.out.size())}});
  if (lines > kMaxLines) throw std::runtime_error(fmt("inspect printed %zu lines (at most %zu)", lines, kMaxLines));
  if (r.out.find(std::to_string(kItems) + " items") == std::string::npos ||
      r.out.find(std::to_string(kWaiters - 1) + " waiting") == std::string::npos) {
    throw std::runtime_error("inspect did not state the depth and the waiters: " + r.out.substr(0, 600));
  }
  return seconds;
}

[[maybe_unused]] const bool kRegistered =
    add_metrics({scale_metric("inspect_s_500k", "s", Kind::kCost, 4100, inspect_500k)});

}  // namespace
}  // namespace bench::metrics_inspect
