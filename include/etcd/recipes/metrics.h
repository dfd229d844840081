// A metrics interface with no dependencies, and a Prometheus text exporter.
//
// Recipes report counters and observations (seconds) by name with a small
// set of labels; implement Metrics to forward them to your own system, or
// use PrometheusMetrics and serve render() from your /metrics endpoint.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace etcd::recipes {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  virtual ~Metrics() = default;
  // A counter increases by `delta`.
  virtual void add(std::string_view name, const Labels& labels, double delta) = 0;
  // One observation (durations in seconds) for a summary.
  virtual void observe(std::string_view name, const Labels& labels, double value) = 0;
  // A gauge is set to `value`.
  virtual void set(std::string_view name, const Labels& labels, double value) = 0;
};

// Discards everything (the default).
class NullMetrics final : public Metrics {
 public:
  void add(std::string_view, const Labels&, double) override {}
  void observe(std::string_view, const Labels&, double) override {}
  void set(std::string_view, const Labels&, double) override {}
};

// Aggregates in memory and renders the Prometheus text format: counters as
// `name_total`-style counters, observations as summaries (_count, _sum and
// _max), gauges as gauges. Thread-safe.
class PrometheusMetrics final : public Metrics {
 public:
  void add(std::string_view name, const Labels& labels, double delta) override;
  void observe(std::string_view name, const Labels& labels, double value) override;
  void set(std::string_view name, const Labels& labels, double value) override;

  std::string render() const;
  // For tests and dashboards: a counter's or gauge's current value, or an
  // observation series' count.
  double value(std::string_view name) const { return value(name, Labels{}); }
  double value(std::string_view name, const Labels& labels) const;

 private:
  struct Series {
    char kind = 'c';   // c counter, s summary, g gauge
    double value = 0;  // counter / gauge value, summary sum
    double count = 0;
    double max = 0;
  };
  static std::string key(const Labels& labels);
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, Series>, std::less<>> series_;
};

}  // namespace etcd::recipes
