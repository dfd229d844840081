#include <algorithm>
#include <fstream>
#include <sstream>
#include <tuple>

#include "bench.h"

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

}  // namespace

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
