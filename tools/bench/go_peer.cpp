// --go-peer: etcd's own Go client (clientv3) measured against the same
// cluster in the same run, as a reference for what a mature client gets out
// of this machine right now.
//
// go-peer/main.go is built at run time, offline, in GOPATH mode against
// Debian's golang-etcd-server-dev sources. The work dir (and with it Go's
// build cache) persists across runs, so only the first run pays for a full
// build.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench.h"
#include "process.h"

namespace bench {
namespace {

namespace fs = std::filesystem;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

const fs::path kGoCode = "/usr/share/gocode";

fs::path find_go_peer_source(const Settings& settings) {
  std::vector<fs::path> candidates;
  if (!settings.go_peer_src.empty()) candidates.push_back(settings.go_peer_src);
#ifdef ETCD_BENCH_GO_PEER_SRC
  candidates.emplace_back(ETCD_BENCH_GO_PEER_SRC);
#endif
  std::error_code ec;
  if (const auto exe = fs::read_symlink("/proc/self/exe", ec); !ec) {
    candidates.push_back(exe.parent_path().parent_path() / "share/etcd-recipes/bench/go-peer");
  }
  for (const auto& dir : candidates) {
    if (fs::exists(dir / "main.go", ec)) return fs::absolute(dir);
  }
  throw Skipped("go-peer/main.go not found (pass --go-peer-src DIR)");
}

fs::path default_workdir() {
  return fs::temp_directory_path() / ("etcd-recipes-bench-go-" + std::to_string(::getuid()));
}

// GOPATH mode wants the package at $GOPATH/src/<import path>; a symlink
// keeps the single copy of the source in the repository.
fs::path link_into_gopath(const fs::path& source, const fs::path& gopath) {
  const fs::path link = gopath / "src/etcdbench";
  fs::create_directories(link.parent_path());
  std::error_code ec;
  if (fs::read_symlink(link, ec) == source) return link;
  // Replace via rename so a concurrent run never sees a missing link.
  const fs::path tmp = link.parent_path() / (".etcdbench." + std::to_string(::getpid()));
  fs::remove(tmp, ec);
  fs::create_directory_symlink(source, tmp);
  fs::rename(tmp, link);
  return link;
}

std::string millis_flag(Clock::duration d) { return std::to_string(duration_cast<milliseconds>(d).count()) + "ms"; }

// Builds the Go peer once per run; returns the binary and its environment.
struct GoPeer {
  fs::path binary;
};

GoPeer build_go_peer(Context& ctx) {
  const auto go = find_on_path("go");
  if (!go) throw Skipped("`go` not found on PATH; install golang-go and golang-etcd-server-dev");
  if (!fs::exists(kGoCode / "src/go.etcd.io/etcd/clientv3")) {
    throw Skipped("etcd's Go client sources are missing; install golang-etcd-server-dev");
  }
  const fs::path source = find_go_peer_source(ctx.settings);
  const fs::path workdir = ctx.settings.go_workdir.empty() ? default_workdir() : ctx.settings.go_workdir;
  const fs::path gopath = workdir / "gopath";
  link_into_gopath(source, gopath);
  const fs::path binary = workdir / "etcdbench";

  const std::map<std::string, std::string> env = {
      {"GO111MODULE", "off"},
      {"GOPROXY", "off"},
      {"GOFLAGS", ""},
      {"GOPATH", gopath.string() + ":" + kGoCode.string()},
      {"GOCACHE", (workdir / "cache").string()},
  };
  const auto build_start = Clock::now();
  const auto build =
      run_process({go->string(), "build", "-o", binary.string(), "etcdbench"}, env, std::chrono::minutes(5));
  if (build.timed_out || build.exit_code != 0) {
    throw std::runtime_error("building the Go peer failed:\n" + tail(build.err));
  }
  char built[64];
  std::snprintf(built, sizeof built, "%.1f", std::chrono::duration<double>(Clock::now() - build_start).count());
  ctx.note("go peer: " + source.string() + " built in " + built + " s (cache: " + workdir.string() + ")");
  return GoPeer{binary};
}

GoResults run_go(const fs::path& binary, std::vector<std::string> args, milliseconds bound) {
  args.insert(args.begin(), binary.string());
  const auto run = run_process(args, {}, bound);
  if (run.timed_out || run.exit_code != 0) {
    throw std::runtime_error("the Go peer failed" + std::string(run.timed_out ? " (timed out)" : "") + ":\n" +
                             tail(run.err));
  }
  return nlohmann::json::parse(run.out).get<GoResults>();
}

const fs::path& go_peer_binary(Context& ctx) {
  return ctx.memo<GoPeer>("go-peer-build", [&] { return build_go_peer(ctx); }).binary;
}

GoResults run_go_peer(Context& ctx) {
  const fs::path& binary = go_peer_binary(ctx);
  const auto& s = ctx.settings;
  const auto bound = duration_cast<milliseconds>(3 * (s.duration + s.warmup) + std::chrono::seconds(60));
  return run_go(
      binary,
      {"-endpoints", ctx.endpoints_csv(), "-duration", millis_flag(s.duration), "-warmup", millis_flag(s.warmup)},
      bound);
}

double go_metric(Context& ctx, const std::string& name) {
  const auto& results = ctx.memo<GoResults>("go-peer", [&] { return run_go_peer(ctx); });
  const auto it = results.find(name);
  if (it == results.end()) throw std::runtime_error("the Go peer did not report " + name);
  return it->second;
}

Metric go(std::string name, std::string unit, std::string base, int order) {
  return {.name = name,
          .unit = std::move(unit),
          .base = std::move(base),
          .order = order,
          .needs_go_peer = true,
          .run = [name](Context& ctx) { return go_metric(ctx, name); }};
}

// Right after put_seq (order 100): both see the cluster in the same state.
[[maybe_unused]] const bool kRegistered = add_metrics({
    go("go_put_seq", "puts/s", "put_seq", 110),
    go("go_put_pipelined", "puts/s", "put_pipelined", 111),
    go("go_mutex_cycle_seq", "cycles/s", "put_seq", 112),
    go("go_mutex_cycle_many", "cycles/s", "put_pipelined", 113),
    go("go_elect_cycle_seq", "cycles/s", "put_seq", 114),
    go("go_queue_cycle_seq", "cycles/s", "put_seq", 115),
});
[[maybe_unused]] const bool kComparisons =
    add_comparison({"put_seq_vs_go", "put_seq", "go_put_seq"}) &&
    add_comparison({"put_pipelined_vs_go", "put_pipelined", "go_put_pipelined"}) &&
    add_comparison({"lock_cycle_seq_vs_go", "lock_cycle_seq", "go_mutex_cycle_seq"}) &&
    add_comparison({"lock_cycle_many_vs_go", "lock_cycle_many", "go_mutex_cycle_many"});

}  // namespace

GoResults run_go_peer_failover(Context& ctx, const std::vector<std::string>& endpoints, Clock::duration d) {
  const fs::path& binary = go_peer_binary(ctx);
  std::string csv;
  for (const auto& e : endpoints) csv += (csv.empty() ? "" : ",") + e;
  return run_go(binary, {"-mode", "failover", "-endpoints", csv, "-duration", millis_flag(d)},
                duration_cast<milliseconds>(d + std::chrono::seconds(60)));
}

}  // namespace bench
