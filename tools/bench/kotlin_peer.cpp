// --kotlin-peer: the Kotlin library etcd-recipes is modelled on
// (com.pambrose:etcd-recipes-core 0.12.0, on jetcd) measured with the
// bench's workloads against the same cluster in the same run.
//
// tools/peers/kotlin is a Maven project; it is built here into a work dir
// (offline once ~/.m2 has its dependencies; online the first time), and only
// rebuilt when its sources are newer than the jar. One run of the jar
// reports every kt_* metric as one JSON object (see its README.md).
#include "kotlin_peer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench.h"
#include "process.h"

namespace bench {

KotlinPeerOptions& kotlin_peer_options() {
  static KotlinPeerOptions options;
  return options;
}

namespace {

namespace fs = std::filesystem;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

// Run-time bound of one peer run (its own --deadline-s is a little shorter):
// the 1,000 parked waiters alone take a minute or two on 2 cores.
constexpr auto kRunBound = std::chrono::minutes(15);

fs::path find_source(const KotlinPeerOptions& options) {
  const fs::path built_in = ETCD_BENCH_KOTLIN_PEER_SRC;  // set by tools/bench/CMakeLists.txt
  if (auto dir = find_peer_source(options.src, built_in, "share/etcd-recipes/peers/kotlin",
                                  {"pom.xml", "src/main/kotlin"})) {
    return *dir;
  }
  throw Skipped("tools/peers/kotlin/pom.xml not found (pass --kotlin-peer-src DIR)");
}

fs::path default_kotlin_workdir() {
  return fs::temp_directory_path() / ("etcd-recipes-bench-kotlin-" + std::to_string(::getuid()));
}

// The newest modification time among pom.xml and the sources.
fs::file_time_type newest_source(const fs::path& source) {
  auto newest = fs::last_write_time(source / "pom.xml");
  for (const auto& e : fs::recursive_directory_iterator(source / "src")) {
    if (e.is_regular_file()) newest = std::max(newest, e.last_write_time());
  }
  return newest;
}

// Maven's line saying which dependency did not resolve; empty if none did not.
std::string unresolved(const std::string& output) {
  for (const char* what : {"Could not resolve dependencies", "Could not find artifact", "could not be resolved"}) {
    const auto at = output.find(what);
    if (at == std::string::npos) continue;
    const auto end = output.find('\n', at);
    return output.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return {};
}

}  // namespace

KotlinPeer build_kotlin_peer(const std::function<void(const std::string&)>& note) {
  const auto java = find_on_path("java");
  const auto mvn = find_on_path("mvn");
  if (!java || !mvn) throw Skipped("`java` or `mvn` not found on PATH; install a JDK 17+ and Maven");
  const auto& options = kotlin_peer_options();
  const fs::path source = find_source(options);
  const fs::path workdir = options.workdir.empty() ? default_kotlin_workdir() : options.workdir;
  fs::create_directories(workdir);
  const fs::path jar = workdir / "target/kotlin-peer.jar";
  // ETCD_RECIPES_KT_VERSION measures another build of the library (e.g. one
  // installed in ~/.m2 from its sources); the jar is rebuilt when it changes.
  const char* version = std::getenv("ETCD_RECIPES_KT_VERSION");
  const std::string version_tag = version != nullptr ? version : "";
  const fs::path stamp = workdir / "version";
  std::string built_for;
  if (FILE* f = std::fopen(stamp.c_str(), "r")) {
    char buf[256] = {};
    built_for.assign(buf, std::fread(buf, 1, sizeof buf - 1, f));
    std::fclose(f);
  }
  std::error_code ec;
  if (fs::exists(jar, ec) && fs::last_write_time(jar) >= newest_source(source) && built_for == version_tag) {
    note("kotlin peer: " + jar.string() + " (cached; built from " + source.string() + ")");
    return {*java, jar};
  }

  std::vector<std::string> argv = {mvn->string(), "-q", "-B", "-Dstyle.color=never", "-f", (source / "pom.xml").string(),
                                    "-Dkotlin-peer.build-dir=" + (workdir / "target").string()};
  if (!version_tag.empty()) argv.push_back("-Detcd-recipes.version=" + version_tag);
  argv.emplace_back("package");
  const auto start = Clock::now();
  // Offline first (the normal case once ~/.m2 is warm), then online.
  auto offline = argv;
  offline.insert(offline.begin() + 4, "-o");
  auto result = run_process(offline, {}, std::chrono::minutes(10));
  if (result.timed_out || result.exit_code != 0) result = run_process(argv, {}, std::chrono::minutes(10));
  if (result.timed_out || result.exit_code != 0) {
    const std::string output = result.out + result.err;
    if (const auto line = unresolved(output); !line.empty()) {
      throw Skipped("the Kotlin peer's dependencies (com.pambrose:etcd-recipes-core:" +
                    (version_tag.empty() ? std::string("0.12.0") : version_tag) +
                    " and its own) do not resolve from the Maven repositories this machine reaches: " + line);
    }
    throw std::runtime_error("building the Kotlin peer failed:\n" + tail(output));
  }
  if (FILE* f = std::fopen(stamp.c_str(), "w")) {
    std::fwrite(version_tag.data(), 1, version_tag.size(), f);
    std::fclose(f);
  }
  char took[64];
  std::snprintf(took, sizeof took, "%.1f", std::chrono::duration<double>(Clock::now() - start).count());
  note("kotlin peer: " + source.string() + " built in " + took + " s (into " + workdir.string() + ")" +
           (version_tag.empty() ? "" : ", etcd-recipes-core " + version_tag));
  return {*java, jar};
}

namespace {

struct KotlinResults {
  std::map<std::string, double> values;
  std::map<std::string, std::string> errors;
};

KotlinResults run_peer(Context& ctx) {
  const auto& peer = ctx.memo<KotlinPeer>("kotlin-peer-build", [&] {
    return build_kotlin_peer([&](const std::string& line) { ctx.note(line); });
  });
  const auto& s = ctx.settings;
  std::string endpoints;
  for (const auto& ep : ctx.client.options().endpoints) {
    endpoints += (endpoints.empty() ? "" : ",") + (ep.find("://") == std::string::npos ? "http://" + ep : ep);
  }
  // Under the bench's own bench/ prefix, fresh per run.
  const std::string prefix = Context::key_prefix("kotlin_peer") + std::to_string(::getpid()) + "-" +
                             std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::vector<std::string> argv = {
      peer.java.string(),
      "-jar",
      peer.jar.string(),
      "--endpoints",
      endpoints,
      "--prefix",
      prefix,
      "--duration-ms",
      std::to_string(duration_cast<milliseconds>(s.duration).count()),
      "--warmup-ms",
      std::to_string(duration_cast<milliseconds>(s.warmup).count()),
      "--deadline-s",
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kRunBound).count() - 30),
  };
  if (s.quick) argv.emplace_back("--quick");
  if (auto only = kotlin_peer_options().only; !only.empty()) {
    // Plus the bases of their ratios (see kKotlinMetrics).
    only.emplace_back("kt_put_seq");
    if (std::ranges::find(only, "kt_counter_add_16c") != only.end()) only.emplace_back("kt_counter_add_seq");
    std::string csv;
    for (const auto& m : only) csv += (csv.empty() ? "" : ",") + m;
    argv.insert(argv.end(), {"--only", csv});
  }
  const auto run = run_process(argv, {}, duration_cast<milliseconds>(kRunBound));
  nlohmann::json out;
  try {
    out = nlohmann::json::parse(run.out);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("the Kotlin peer failed" + std::string(run.timed_out ? " (timed out)" : "") +
                             " (exit " + std::to_string(run.exit_code) + "):\n" + tail(run.err));
  }
  KotlinResults results;
  for (const auto& [key, value] : out.items()) {
    if (value.is_number()) results.values[key] = value.get<double>();
  }
  if (out.contains("_errors")) {
    for (const auto& [key, value] : out["_errors"].items()) results.errors[key] = value.get<std::string>();
  }
  if (out.contains("_notes")) {
    for (const auto& note : out["_notes"]) ctx.note("kotlin peer: " + note.get<std::string>());
  }
  if (run.exit_code != 0 && results.errors.empty()) {
    throw std::runtime_error("the Kotlin peer exited " + std::to_string(run.exit_code) + ":\n" + tail(run.err));
  }
  return results;
}

double kt_metric(Context& ctx, const std::string& name) {
  if (!kotlin_peer_options().enabled) throw Skipped("needs --kotlin-peer");
  const auto& results = ctx.memo<KotlinResults>("kotlin-peer", [&] { return run_peer(ctx); });
  if (const auto e = results.errors.find(name); e != results.errors.end()) {
    throw std::runtime_error("the Kotlin peer: " + e->second);
  }
  const auto it = results.values.find(name);
  if (it == results.values.end()) throw std::runtime_error("the Kotlin peer did not report " + name);
  return it->second;
}

Metric kt(std::string name, std::string unit, Kind kind, std::string base, int order) {
  return {.name = name,
          .unit = std::move(unit),
          .kind = kind,
          .base = std::move(base),
          .order = order,
          .run = [name](Context& ctx) { return kt_metric(ctx, name); }};
}

// Right after put_seq and the Go peer (order 100-115): the same cluster state.
// Rates are normalised by the peer's own put rate through jetcd (kt_put_seq),
// which is itself shown against put_seq.
[[maybe_unused]] const bool kKotlinMetrics = add_metrics({
    kt("kt_put_seq", "puts/s", Kind::kRate, "put_seq", 120),
    kt("kt_lock_cycle_seq", "cycles/s", Kind::kRate, "kt_put_seq", 121),
    kt("kt_rwlock_read_cycle_seq", "cycles/s", Kind::kRate, "kt_put_seq", 122),
    kt("kt_semaphore_cycle_seq", "cycles/s", Kind::kRate, "kt_put_seq", 123),
    kt("kt_elect_cycle_seq", "cycles/s", Kind::kRate, "kt_put_seq", 124),
    kt("kt_selector_cycle_seq", "cycles/s", Kind::kRate, "kt_put_seq", 125),
    kt("kt_elect_handoff_p50_ms", "ms", Kind::kLatency, "kt_put_seq", 126),
    kt("kt_elect_handoff_p99_ms", "ms", Kind::kLatency, "kt_put_seq", 127),
    kt("kt_queue_cycle_seq", "cycles/s", Kind::kRate, "kt_put_seq", 128),
    kt("kt_priority_queue_cycle_seq", "cycles/s", Kind::kRate, "kt_put_seq", 129),
    kt("kt_workqueue_cycle_seq", "cycles/s", Kind::kRate, "kt_put_seq", 130),
    kt("kt_workqueue_throughput_8c", "items/s", Kind::kRate, "kt_put_seq", 131),
    kt("kt_counter_add_seq", "adds/s", Kind::kRate, "kt_put_seq", 132),
    kt("kt_counter_add_16c", "adds/s", Kind::kRate, "kt_counter_add_seq", 133),
    kt("kt_barrier_count_p50_ms", "ms", Kind::kLatency, "kt_put_seq", 134),
    kt("kt_cache_propagation_p50_ms", "ms", Kind::kLatency, "kt_put_seq", 135),
    kt("kt_cache_propagation_p99_ms", "ms", Kind::kLatency, "kt_put_seq", 136),
    kt("kt_discovery_register_seq", "registrations/s", Kind::kRate, "kt_put_seq", 137),
    kt("kt_provider_pick_ns", "ns", Kind::kLatency, "", 138),
    kt("kt_idle_threads", "threads", Kind::kCount, "", 139),
    kt("kt_idle_rss_mb", "MB", Kind::kCount, "", 140),
    kt("kt_waiters_threads", "threads", Kind::kCount, "", 141),
    kt("kt_waiters_rss_mb", "MB", Kind::kCount, "", 142),
});

// C++ over Kotlin (latencies: below 1 is better for C++).
[[maybe_unused]] const bool kKotlinComparisons = [] {
  for (const char* m : {"put_seq", "lock_cycle_seq", "rwlock_read_cycle_seq", "semaphore_cycle_seq", "elect_cycle_seq",
                        "elect_handoff_p50_ms", "queue_cycle_seq", "workqueue_cycle_seq", "workqueue_throughput_8c",
                        "counter_add_seq", "counter_add_16c", "barrier_count_p50_ms", "cache_propagation_p50_ms",
                        "discovery_register_seq", "provider_pick_ns"}) {
    add_comparison({std::string(m) + "_vs_kt", m, std::string("kt_") + m});
  }
  return true;
}();

}  // namespace
}  // namespace bench
