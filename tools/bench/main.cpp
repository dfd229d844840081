// etcd-recipes-bench: starts its own etcd (1 or 3 members), runs the
// registered metrics against it with one Client, prints a table and
// optionally writes JSON. See README.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "kotlin_peer.h"

namespace bench {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using Seconds = std::chrono::duration<double>;

struct Outcome {
  Metric metric;
  std::optional<double> value{};
  std::string skipped{};  // reason, if skipped
  std::string error{};    // message, if failed
  std::optional<double> ratio{};
  // The base rate measured interleaved with this metric, if any
  // (measure_sequential_paired); its ratio uses it instead of the base
  // metric's own run.
  std::optional<double> paired_base{};
};

struct RunInfo {
  Settings settings;
  std::chrono::milliseconds heartbeat{100};
  std::chrono::milliseconds election{1000};
  std::string etcd_version;
  std::string date;
  // --endpoints: an existing cluster, whose timing settings are unknown here.
  std::vector<std::string> endpoints;
};

// The last line of defence against a metric that never returns (a call
// without a deadline, a lost wake-up in the library): every call a metric
// waits on has a deadline (kCallBound), and a metric still running after
// `limit` ends the run — its name on stderr and exit status 3 — instead of
// hanging a CI job or an operator's terminal.
class Watchdog {
 public:
  explicit Watchdog(Seconds limit) : limit_(limit), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void begin(const std::string& metric) {
    std::lock_guard lock(mu_);
    metric_ = metric;
    started_ = Clock::now();
    cv_.notify_all();
  }
  void end() {
    std::lock_guard lock(mu_);
    metric_.clear();
    cv_.notify_all();
  }

 private:
  void watch() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (metric_.empty()) {
        cv_.wait(lock);
        continue;
      }
      const auto give_up = started_ + duration_cast<Clock::duration>(limit_);
      const std::string metric = metric_;
      if (cv_.wait_until(lock, give_up, [&] { return stop_ || metric_ != metric; })) continue;
      std::fprintf(stderr, "\netcd-recipes-bench: %s did not finish within %.0f s; stopping the run\n", metric.c_str(),
                   limit_.count());
      std::fflush(stderr);
      std::_Exit(3);
    }
  }

  const Seconds limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string metric_;
  Clock::time_point started_{};
  std::thread thread_;
};

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_value(const Outcome& o) {
  if (!o.value) return o.skipped.empty() ? "error" : "skipped";
  switch (o.metric.kind) {
    case Kind::kRate:
      return fixed(*o.value, *o.value >= 100 ? 0 : 2);
    case Kind::kLatency:
      return fixed(*o.value, 3);
    case Kind::kCount:
      return fixed(*o.value, 0);
    case Kind::kCost:
      return fixed(*o.value, 2);
  }
  return {};
}

// Selects the metrics to run: all (minus Go ones without --go-peer, capacity
// ones without --capacity and scale ones without --scale) or --only's (plus
// the capacity ones with --capacity and the scale ones with --scale), plus
// the base metrics their ratios need.
std::vector<Metric> select(const std::vector<std::string>& only, Settings& settings) {
  const auto all = metrics();
  const auto find = [&](const std::string& name) { return std::ranges::find(all, name, &Metric::name); };
  std::set<std::string> wanted;
  if (only.empty()) {
    for (const auto& m : all) {
      if ((!m.needs_go_peer || settings.go_peer) && (!m.needs_capacity || settings.capacity) &&
          (!m.needs_scale || settings.scale) && (!is_kotlin_peer_metric(m.name) || kotlin_peer_options().enabled)) {
        wanted.insert(m.name);
      }
    }
  } else {
    for (const auto& m : all) {
      if ((m.needs_capacity && settings.capacity) || (m.needs_scale && settings.scale)) wanted.insert(m.name);
    }
    for (const auto& name : only) {
      const auto it = find(name);
      if (it == all.end()) {
        std::string known;
        for (const auto& m : all) known += " " + m.name;
        throw CLI::ValidationError("--only", "unknown metric '" + name + "'; known:" + known);
      }
      if (it->needs_go_peer) settings.go_peer = true;
      if (is_kotlin_peer_metric(name)) {
        kotlin_peer_options().enabled = true;
        kotlin_peer_options().only.push_back(name);
      }
      wanted.insert(name);
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& name : std::set(wanted)) {
      const auto& base = find(name)->base;
      if (!base.empty() && find(base) != all.end()) grew |= wanted.insert(base).second;
    }
  }
  std::vector<Metric> selected;
  for (const auto& m : all) {
    if (wanted.contains(m.name)) selected.push_back(m);
  }
  return selected;
}

Outcome run_one(Context& ctx, const Metric& metric) {
  Outcome o{.metric = metric};
  ctx.set_metric(metric.name);
  try {
    o.value = metric.run(ctx);
    o.paired_base = ctx.paired_base(metric.name);
  } catch (const Skipped& e) {
    o.skipped = e.what();
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

const Outcome* find_outcome(const std::vector<Outcome>& outcomes, const std::string& name) {
  const auto it = std::ranges::find(outcomes, name, [](const Outcome& o) { return o.metric.name; });
  return it == outcomes.end() || !it->value ? nullptr : &*it;
}

void compute_ratios(std::vector<Outcome>& outcomes) {
  for (auto& o : outcomes) {
    std::optional<double> base = o.paired_base;
    if (!base && !o.metric.base.empty()) {
      if (const Outcome* b = find_outcome(outcomes, o.metric.base)) base = b->value;
    }
    if (!o.value || !base || *base <= 0) continue;
    switch (o.metric.kind) {
      case Kind::kRate:
        o.ratio = *o.value / *base;
        break;
      case Kind::kLatency:
        o.ratio = *o.value / (1000.0 / *base);
        break;
      case Kind::kCount:
      case Kind::kCost:
        break;
    }
  }
}

struct Derived {
  std::string name;
  double value;
};

// What a ratio is relative to: the base metric, or the base rate measured
// interleaved with the metric (always put_seq's puts).
std::string ratio_to(const Outcome& o) { return o.paired_base ? "put_seq (paired)" : o.metric.base; }

std::vector<Derived> compute_comparisons(const std::vector<Outcome>& outcomes) {
  std::vector<Derived> out;
  for (const auto& c : comparisons()) {
    const Outcome* num = find_outcome(outcomes, c.numerator);
    const Outcome* den = find_outcome(outcomes, c.denominator);
    if (num != nullptr && den != nullptr && *den->value > 0) out.push_back({c.name, *num->value / *den->value});
  }
  return out;
}

void print_table(const RunInfo& info, const std::vector<Outcome>& outcomes, const std::vector<Derived>& derived,
                 const std::vector<std::string>& notes) {
  const auto& s = info.settings;
  if (info.endpoints.empty()) {
    std::printf(
        "\netcd %s, %d member(s), heartbeat %lld ms, election %lld ms, %.1f s per metric (+%.1f s warm-up)%s\n\n",
        info.etcd_version.c_str(), s.members, static_cast<long long>(info.heartbeat.count()),
        static_cast<long long>(info.election.count()), Seconds(s.duration).count(), Seconds(s.warmup).count(),
        s.quick ? ", quick" : "");
  } else {
    std::printf("\netcd %s, existing cluster of %d member(s) at %s, %.1f s per metric (+%.1f s warm-up)%s\n\n",
                info.etcd_version.c_str(), s.members, info.endpoints.front().c_str(), Seconds(s.duration).count(),
                Seconds(s.warmup).count(), s.quick ? ", quick" : "");
  }
  std::printf("%-24s %12s  %-9s %8s  %s\n", "metric", "value", "unit", "ratio", "ratio to");
  std::printf("%s\n", std::string(72, '-').c_str());
  for (const auto& o : outcomes) {
    const std::string ratio = o.ratio ? fixed(*o.ratio, 2) : "-";
    const std::string to = o.ratio ? ratio_to(o) + (o.metric.kind == Kind::kLatency ? " latency" : "") : "";
    std::printf("%-24s %12s  %-9s %8s  %s\n", o.metric.name.c_str(), format_value(o).c_str(), o.metric.unit.c_str(),
                ratio.c_str(), to.c_str());
  }
  for (const auto& d : derived) {
    std::printf("%-24s %12s  %-9s\n", d.name.c_str(), fixed(d.value, 2).c_str(), "ratio");
  }
  bool header = false;
  for (const auto& o : outcomes) {
    if (o.value) continue;
    if (!std::exchange(header, true)) std::printf("\n");
    std::printf("%s %s: %s\n", o.metric.name.c_str(), o.skipped.empty() ? "FAILED" : "skipped",
                (o.skipped.empty() ? o.error : o.skipped).c_str());
  }
  if (!notes.empty()) std::printf("\n");
  for (const auto& n : notes) std::printf("%s\n", n.c_str());
  std::fflush(stdout);
}

nlohmann::json to_json(const RunInfo& info, const Context& ctx, const std::vector<Outcome>& outcomes,
                       const std::vector<Derived>& derived, const std::vector<std::string>& notes) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& o : outcomes) {
    nlohmann::json m = {{"value", nullptr}, {"unit", o.metric.unit}};
    if (o.value && o.metric.kind == Kind::kCount) {
      m["value"] = static_cast<int64_t>(*o.value);
    } else if (o.value) {
      m["value"] = *o.value;
    }
    if (o.ratio) {
      m["ratio"] = *o.ratio;
      m["ratio_to"] = ratio_to(o);
    }
    if (o.paired_base) m["paired_base"] = *o.paired_base;
    if (!o.skipped.empty()) m["skipped"] = o.skipped;
    if (!o.error.empty()) m["error"] = o.error;
    if (const auto* detail = ctx.detail(o.metric.name)) m["detail"] = *detail;
    out[o.metric.name] = std::move(m);
  }
  for (const auto& d : derived) out[d.name] = {{"value", d.value}, {"unit", "ratio"}};
  const auto& s = info.settings;
  out["_meta"] = {
      {"members", s.members},
      {"etcd_version", info.etcd_version},
      {"date", info.date},
      {"quick", s.quick},
      {"duration_per_metric_s", Seconds(s.duration).count()},
      {"warmup_s", Seconds(s.warmup).count()},
      {"heartbeat_ms", info.endpoints.empty() ? nlohmann::json(info.heartbeat.count()) : nlohmann::json()},
      {"election_ms", info.endpoints.empty() ? nlohmann::json(info.election.count()) : nlohmann::json()},
      {"endpoints", info.endpoints},
      {"go_peer", s.go_peer},
      {"kotlin_peer", kotlin_peer_options().enabled},
      {"capacity", s.capacity},
      {"scale", s.scale},
      {"notes", notes},
  };
  return out;
}

// Which member the client used matters with 3 members: a follower
// forwards every write to the leader (one more hop).
void note_endpoint(Context& ctx) {
  const std::string endpoint = ctx.client.current_endpoint();
  std::string role = "unknown role";
  if (ctx.has_cluster()) {
    const auto leader = ctx.cluster().leader();
    if (leader) role = ctx.cluster().endpoint(*leader) == endpoint ? "the leader" : "a follower";
  }
  ctx.note("client endpoint: " + endpoint + " (" + role + ")");
}

int run(int argc, char** argv) {
  CLI::App app{
      "etcd-recipes-bench: client and recipe throughput/latency against a private etcd (or an existing one with "
      "--endpoints)"};
  RunInfo info;
  Settings& s = info.settings;
  std::optional<double> duration_s;
  std::string json_path;
  std::vector<std::string> only;
  int heartbeat_ms = 100;
  int election_ms = 1000;
  bool list = false;
  app.add_option("--members", s.members, "etcd members to start (1 or 3)")
      ->check(CLI::IsMember({1, 3}))
      ->capture_default_str();
  app.add_flag("--quick", s.quick, "short windows (2 s per metric): the whole run stays under a minute");
  app.add_option("--duration-per-metric", duration_s, "timed window per metric in seconds (default 5, quick 2)")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "also write the results as JSON to this path");
  app.add_option("--only", only, "run only these metrics (and the base metrics of their ratios)")->delimiter(',');
  app.add_flag("--go-peer", s.go_peer, "also measure etcd's Go client (clientv3) side by side");
  app.add_flag("--capacity", s.capacity,
               "also run the capacity_* metrics: etcd writes, reads, watchers and keys per recipe operation and per "
               "parked waiter, counted from etcd's /metrics (slow; see docs/capacity.md)");
  app.add_flag("--scale", s.scale,
               "production-scale metrics, slow; each in its own private etcd member (sessions_lost_2500, "
               "sessions_lost_10k: sessions in 4 child processes kept for 60 s; counter_add_per_s_a1, "
               "counter_add_per_s_a64, counter_give_ups_a64: adders in 1 and 8 child processes; queue_first_item_s_500k "
               "and the other queue backlog metrics: consumers in child processes; see tools/bench/README.md)");
  app.add_option("--go-peer-src", s.go_peer_src, "directory holding go-peer/main.go")->check(CLI::ExistingDirectory);
  app.add_option("--go-workdir", s.go_workdir, "where the Go peer is built (default: a per-user temp dir)");
  app.add_flag("--kotlin-peer", kotlin_peer_options().enabled,
               "also measure the Kotlin library (com.pambrose:etcd-recipes-core, tools/peers/kotlin; needs java and "
               "mvn) side by side, as kt_*");
  app.add_option("--kotlin-peer-src", kotlin_peer_options().src, "directory holding the Kotlin peer's pom.xml")
      ->check(CLI::ExistingDirectory);
  app.add_option("--kotlin-workdir", kotlin_peer_options().workdir,
                 "where the Kotlin peer is built (default: a per-user temp dir)");
  bool kotlin_peer_jar = false;
  app.add_flag("--kotlin-peer-jar", kotlin_peer_jar,
               "build the Kotlin peer if needed, print its jar's path and exit (77, the reason on stderr, when it "
               "cannot be built here); for tests that run it beside this library");
  app.add_option("--heartbeat", heartbeat_ms, "etcd --heartbeat-interval in ms")->capture_default_str();
  app.add_option("--election", election_ms, "etcd --election-timeout in ms")->capture_default_str();
  app.add_flag("--list", list, "list the metrics and exit");
  double metric_limit_s = 300;
  app.add_option("--metric-limit", metric_limit_s,
                 "seconds a metric may run before the run is stopped as hung (exit status 3)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  std::string etcd_binary;
  auto* etcd_option = app.add_option("--etcd", etcd_binary,
                 "the etcd binary the bench starts (default: $ETCD_RECIPES_ETCD, else etcd on PATH); ./dev.sh etcd "
                 "VERSION prints one per supported release")
      ->check(CLI::ExistingFile);
  std::string endpoints_csv;
  auto* endpoints_option = app.add_option("--endpoints", endpoints_csv,
                 "run against this existing cluster (comma-separated host:port) instead of starting one; metrics that "
                 "start, stop or kill members are skipped (and say so)");
  endpoints_option->excludes(etcd_option);
  CLI11_PARSE(app, argc, argv);

  if (kotlin_peer_jar) {
    try {
      const auto peer = build_kotlin_peer([](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
      std::printf("%s\n", peer.jar.c_str());
      return 0;
    } catch (const Skipped& e) {
      std::fprintf(stderr, "skipped: %s\n", e.what());
      return 77;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  }
  if (list) {
    for (const auto& m : metrics()) {
      std::printf("%-24s %-9s%s\n", m.name.c_str(), m.unit.c_str(),
                  m.needs_go_peer                    ? " (--go-peer)"
                  : is_kotlin_peer_metric(m.name) ? " (--kotlin-peer)"
                  : m.needs_capacity              ? " (--capacity)"
                  : m.needs_scale                 ? " (--scale)"
                                                  : "");
    }
    return 0;
  }
  const auto window = Seconds(duration_s.value_or(s.quick ? 2.0 : 5.0));
  s.duration = duration_cast<Clock::duration>(window);
  // Long enough to open connections and fill caches; short enough that
  // --quick stays under a minute.
  s.warmup = std::clamp<Clock::duration>(s.duration / 5, milliseconds(200), std::chrono::seconds(1));
  info.heartbeat = milliseconds(heartbeat_ms);
  info.election = milliseconds(election_ms);
  s.election_timeout = info.election;

  std::vector<Metric> selected;
  try {
    selected = select(only, s);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }

  for (std::string_view rest = endpoints_csv; !rest.empty();) {
    const auto comma = rest.find(',');
    std::string ep(rest.substr(0, comma));
    for (std::string_view scheme : {"http://", "https://"}) {
      if (ep.starts_with(scheme)) ep.erase(0, scheme.size());
    }
    if (!ep.empty()) info.endpoints.push_back(ep);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  (void)Context::run_prefix();  // fixed now, before any child process starts
  std::unique_ptr<etcd::testing::EtcdCluster> cluster;
  if (info.endpoints.empty()) {
    std::fprintf(stderr, "starting %d etcd member(s)...\n", s.members);
    etcd::testing::EtcdClusterOptions cluster_options;
    cluster_options.members = s.members;
    cluster_options.etcd_binary = etcd_binary;
    cluster_options.heartbeat = info.heartbeat;
    cluster_options.election_timeout = info.election;
    cluster = etcd::testing::EtcdCluster::start(std::move(cluster_options));
    cluster->wait_for_leader(std::chrono::seconds(30));
  }

  const auto threads_before_client = thread_names();
  etcd::ClientOptions client_options;
  client_options.endpoints = cluster ? cluster->endpoints() : info.endpoints;
  etcd::Client client(std::move(client_options));
  Context ctx(client, cluster.get(), s);
  if (!cluster) {
    // Writes go under bench/ only; the members are counted for the report.
    auto members = client.member_list().wait();
    if (!members.ok()) {
      std::fprintf(stderr, "etcd-recipes-bench: %s: %s\n", endpoints_csv.c_str(), members.status().to_string().c_str());
      return 1;
    }
    s.members = static_cast<int>(members->members.size());
  }
  ctx.threads_before_client = threads_before_client;
  info.date = utc_now();
  if (auto status = client.status().wait(); status.ok()) {
    info.etcd_version = status->version;
  } else {
    std::fprintf(stderr, "etcd status failed: %s\n", status.status().to_string().c_str());
    return 1;
  }

  std::vector<Outcome> outcomes;
  {
    Watchdog watchdog{Seconds(metric_limit_s)};
    for (std::size_t i = 0; i < selected.size(); ++i) {
      const auto& metric = selected[i];
      std::fprintf(stderr, "[%zu/%zu] %s ...", i + 1, selected.size(), metric.name.c_str());
      const auto started = Clock::now();
      watchdog.begin(metric.name);
      outcomes.push_back(run_one(ctx, metric));
      watchdog.end();
      std::fprintf(stderr, " %s %s (%.1f s)\n", format_value(outcomes.back()).c_str(), metric.unit.c_str(),
                   Seconds(Clock::now() - started).count());
    }
  }
  note_endpoint(ctx);
  // Leave the cluster as the run found it: everything it wrote is under
  // the run's prefix (keys on leases the metrics ended go with them).
  if (auto cleaned = client.del(Context::run_prefix(), etcd::DeleteOptions{.prefix = true}).timeout(kCallBound).wait();
      !cleaned.ok()) {
    std::fprintf(stderr, "etcd-recipes-bench: could not delete %s: %s\n", Context::run_prefix().c_str(),
                 cleaned.status().to_string().c_str());
  }
  client.close();

  compute_ratios(outcomes);
  const auto derived = compute_comparisons(outcomes);
  print_table(info, outcomes, derived, ctx.notes());
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << to_json(info, ctx, outcomes, derived, ctx.notes()).dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  const bool failed = std::ranges::any_of(outcomes, [](const Outcome& o) { return !o.error.empty(); });
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  try {
    // A helper mode is not an option of the bench (--help does not list
    // it): only the bench starts it, as a child.
    if (argc >= 2) {
      if (const bench::HelperMode* mode = bench::find_helper_mode(argv[1])) {
        return mode->run(std::vector<std::string>(argv + 2, argv + argc));
      }
    }
    return bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "etcd-recipes-bench: %s\n", e.what());
    return 1;
  }
}
