#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <fstream>
#include <future>
#include <sstream>
#include <tuple>
#include <utility>

#include "bench.h"
#include "etcd/txn.h"

namespace bench {
namespace {

// Function-local statics: metric files register during static
// initialisation, in an unspecified order relative to this file.
std::vector<Metric>& metric_registry() {
  static std::vector<Metric> registry;
  return registry;
}

std::vector<Comparison>& comparison_registry() {
  static std::vector<Comparison> registry;
  return registry;
}

std::vector<HelperMode>& helper_registry() {
  static std::vector<HelperMode> registry;
  return registry;
}

}  // namespace

const std::string& Context::run_prefix() {
  static const std::string prefix = [] {
    // Set by the run itself before any child starts, so children share it.
    constexpr const char* kVar = "ETCD_RECIPES_BENCH_RUN";
    if (const char* inherited = std::getenv(kVar); inherited != nullptr && *inherited != '\0') {
      return "bench/" + std::string(inherited) + "/";
    }
    std::random_device rd;
    char id[32];
    std::snprintf(id, sizeof id, "%x-%08x", static_cast<unsigned>(getpid()), static_cast<unsigned>(rd()));
    ::setenv(kVar, id, 1);
    return "bench/" + std::string(id) + "/";
  }();
  return prefix;
}

bool add_helper_mode(HelperMode mode) {
  helper_registry().push_back(std::move(mode));
  return true;
}

const HelperMode* find_helper_mode(std::string_view flag) {
  const auto& registry = helper_registry();
  const auto it = std::ranges::find(registry, flag, &HelperMode::flag);
  return it == registry.end() ? nullptr : &*it;
}

bool add_metrics(std::vector<Metric> metrics) {
  auto& registry = metric_registry();
  for (auto& m : metrics) registry.push_back(std::move(m));
  return true;
}

bool add_comparison(Comparison comparison) {
  comparison_registry().push_back(std::move(comparison));
  return true;
}

std::vector<Metric> metrics() {
  auto sorted = metric_registry();
  std::ranges::sort(
      sorted, [](const Metric& a, const Metric& b) { return std::tie(a.order, a.name) < std::tie(b.order, b.name); });
  return sorted;
}

const std::vector<Comparison>& comparisons() { return comparison_registry(); }

double measure_sequential(const Context& ctx, const std::function<void()>& op) {
  const auto run_for = [&](Clock::duration window) {
    const auto start = Clock::now();
    const auto end = start + window;
    uint64_t n = 0;
    for (; Clock::now() < end; ++n) op();
    return static_cast<double>(n) / std::chrono::duration<double>(Clock::now() - start).count();
  };
  run_for(ctx.settings.warmup);
  return run_for(ctx.settings.duration);
}

PairedRun measure_sequential_paired(Context& ctx, const std::function<void()>& op) {
  using Seconds = std::chrono::duration<double>;
  const std::string key = put_seq_key();
  const auto put = [&] { ctx.client.put(key, kValue).wait().value(); };
  // Runs `fn` back to back for `slice`; returns completions and the time
  // they took (the last one ends after the slice).
  const auto run_slice = [](const std::function<void()>& fn, Clock::duration slice) {
    const auto start = Clock::now();
    const auto end = start + slice;
    uint64_t n = 0;
    for (; Clock::now() < end; ++n) fn();
    return std::pair(n, Clock::now() - start);
  };

  run_slice(op, ctx.settings.warmup);
  PairedRun run;
  Clock::duration op_time{};
  Clock::duration put_time{};
  uint64_t puts = 0;
  while (op_time < ctx.settings.duration) {
    // The last slice is cut short so the op slices add up to the window.
    const auto slice = std::min<Clock::duration>(kPairedSlice, ctx.settings.duration - op_time);
    const uint64_t rpcs_before = ctx.client.stats().rpcs_started;
    const auto [ops, op_took] = run_slice(op, slice);
    run.op_rpcs += ctx.client.stats().rpcs_started - rpcs_before;
    run.ops += ops;
    op_time += op_took;
    // The put slice as long as the op slice really took, so both sides
    // cover the same stretch of time.
    const auto [n, put_took] = run_slice(put, op_took);
    puts += n;
    put_time += put_took;
  }
  run.rate = static_cast<double>(run.ops) / Seconds(op_time).count();
  run.base_rate = static_cast<double>(puts) / Seconds(put_time).count();
  ctx.set_paired_base(ctx.metric(), run.base_rate);
  return run;
}

double measure_cycle_paired(Context& ctx, const std::function<void()>& cycle) {
  cycle();
  const PairedRun run = measure_sequential_paired(ctx, cycle);
  char line[256];
  std::snprintf(line, sizeof line,
                "%s: %.2f RPCs per cycle (%llu cycles, session keep-alives included); paired put_seq %.0f puts/s",
                ctx.metric().c_str(), static_cast<double>(run.op_rpcs) / static_cast<double>(run.ops),
                static_cast<unsigned long long>(run.ops), run.base_rate);
  ctx.note(line);
  return run.rate;
}

void put_all(etcd::Client& client, int count, const std::function<std::pair<std::string, std::string>(int)>& kv,
             Clock::time_point deadline) {
  constexpr int kPerTxn = 100;  // below etcd's default --max-txn-ops (128)
  constexpr int kInFlight = 32;
  const int txns = (count + kPerTxn - 1) / kPerTxn;
  const auto batch = [&](int t) {
    etcd::Txn txn;
    for (int i = t * kPerTxn; i < std::min(count, (t + 1) * kPerTxn); ++i) {
      auto [key, value] = kv(i);
      txn.then(etcd::Op::put(std::move(key), std::move(value), etcd::PutOptions()));
    }
    return txn;
  };
  const auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };
  for (int first = 0; first < txns; first += kInFlight) {
    std::vector<std::pair<int, std::future<etcd::Result<etcd::TxnResponse>>>> inflight;
    for (int t = first; t < std::min(first + kInFlight, txns); ++t) {
      inflight.emplace_back(t, client.txn(batch(t)).timeout(left()).future());
    }
    for (auto& [t, f] : inflight) {
      if (f.get().ok()) continue;
      client.txn(batch(t)).timeout(std::min<std::chrono::milliseconds>(left(), kCallBound)).wait().value();
    }
    if (Clock::now() > deadline) throw std::runtime_error("the fill passed its deadline");
  }
}

double rss_mb(std::string_view field) {
  const std::string prefix = std::string(field) + ":";
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    // "VmRSS:   12345 kB"
    if (line.starts_with(prefix)) return std::stod(line.substr(prefix.size())) / 1024.0;
  }
  return 0;
}

std::map<std::string, int> thread_names() {
  std::map<std::string, int> counts;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    // A thread may exit between listing and reading; it still counted.
    ++counts[std::getline(comm, name) ? name : std::string("?")];
  }
  return counts;
}

int total(const std::map<std::string, int>& counts) {
  int n = 0;
  for (const auto& [name, count] : counts) n += count;
  return n;
}

std::string describe(const std::map<std::string, int>& counts) {
  std::ostringstream out;
  const char* sep = "";
  for (const auto& [name, count] : counts) {
    out << sep << name;
    if (count > 1) out << " x" << count;
    sep = ", ";
  }
  return out.str();
}

}  // namespace bench
