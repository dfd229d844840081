// --go-peer: etcd's own Go client (go.etcd.io/etcd/client/v3) measured
// against the same cluster in the same run, as a reference for what a mature
// client gets out of this machine right now.
//
// go-peer/main.go is built at run time in module mode, against the client
// release of the server's minor as pinned in tools/etcd-releases/versions.txt
// (a 3.4 server, which has no client/v3 module, gets the oldest pinned
// client; ETCD_RECIPES_GO_CLIENT=x.y.z overrides). The go.mod is written into
// a work dir per client release, `go mod tidy` produces its go.sum (offline
// when the module cache has everything), and Go's module and build caches
// persist across runs, so only the first run per release downloads and builds.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bench.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "process.h"

namespace bench {
namespace {

namespace fs = std::filesystem;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

fs::path find_go_peer_source(const Settings& settings) {
#ifdef ETCD_BENCH_GO_PEER_SRC
  const fs::path built_in = ETCD_BENCH_GO_PEER_SRC;
#else
  const fs::path built_in;
#endif
  if (auto dir = find_peer_source(settings.go_peer_src, built_in, "share/etcd-recipes/bench/go-peer", {"main.go"})) {
    return *dir;
  }
  throw Skipped("go-peer/main.go not found (pass --go-peer-src DIR)");
}

fs::path default_go_workdir() {
  return fs::temp_directory_path() / ("etcd-recipes-bench-go-" + std::to_string(::getuid()));
}

std::string millis_flag(Clock::duration d) { return std::to_string(duration_cast<milliseconds>(d).count()) + "ms"; }

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `text` to `p` unless it holds it already; true if it wrote.
bool write_if_changed(const fs::path& p, const std::string& text) {
  std::error_code ec;
  if (fs::exists(p, ec) && read_text(p) == text) return false;
  const fs::path tmp = p.string() + "." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, p);
  return true;
}

// "3.6.16" -> "3.6"
std::string minor_of(const std::string& version) {
  const auto first = version.find('.');
  if (first == std::string::npos) return version;
  return version.substr(0, version.find('.', first + 1));
}

// The client/v3 release for a server release, from the pin file: the pinned
// "go" release of the same minor, else the oldest pinned one for an older
// server (3.4), else the newest (a server newer than every pin).
std::string go_client_for(const fs::path& pins, const std::string& server) {
  std::ifstream in(pins);
  if (!in) throw Skipped("the etcd release pins are missing: " + pins.string());
  std::vector<std::pair<std::string, std::string>> go;  // (minor, version), in file order
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string minor, version, source, extra;
    if (line.empty() || line[0] == '#' || !(fields >> minor >> version >> source) || (fields >> extra)) continue;
    if (source == "go") go.emplace_back(minor, version);
  }
  if (go.empty()) throw std::runtime_error(pins.string() + " pins no Go release");
  const std::string want = minor_of(server);
  for (const auto& [minor, version] : go) {
    if (minor == want) return version;
  }
  auto number = [](const std::string& minor) {
    const auto dot = minor.find('.');
    return std::pair(std::atoi(minor.c_str()), dot == std::string::npos ? 0 : std::atoi(minor.c_str() + dot + 1));
  };
  if (!server.empty() && number(want) > number(go.back().first)) return go.back().second;
  return go.front().second;
}

// versions.txt beside the source (an installed copy) or in the source tree.
fs::path find_pins(const fs::path& source) {
  for (const fs::path& p : {source / "versions.txt", source.parent_path().parent_path() / "etcd-releases/versions.txt"}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return p;
  }
  throw Skipped("tools/etcd-releases/versions.txt not found next to " + source.string());
}

std::string server_version(Context& ctx) {
  if (ctx.has_cluster()) return ctx.cluster().version().text;
  auto status = ctx.client.status().wait();
  return status.ok() ? status->version : std::string();
}

// Builds the Go peer once per run; returns the binary and its environment.
struct GoPeer {
  fs::path binary;
};

GoPeer build_go_peer(Context& ctx) {
  const auto go = find_on_path("go");
  if (!go) throw Skipped("`go` not found on PATH (Go 1.21 or newer; it builds etcd's Go client from its module)");
  const fs::path source = find_go_peer_source(ctx.settings);
  const std::string server = server_version(ctx);
  const char* forced = std::getenv("ETCD_RECIPES_GO_CLIENT");
  const std::string client = forced && *forced ? std::string(forced) : go_client_for(find_pins(source), server);
  const fs::path base = ctx.settings.go_workdir.empty() ? default_go_workdir() : ctx.settings.go_workdir;
  const fs::path workdir = base / ("client-" + client);
  fs::create_directories(workdir);

  const std::string gomod = "module etcd-recipes/etcdbench\n\ngo 1.21\n\nrequire go.etcd.io/etcd/client/v3 v" + client +
                            "\n";
  // go.mod and go.sum are produced here; `go mod tidy` rewrites go.mod, so
  // the template is kept beside it to tell whether the pin changed.
  if (write_if_changed(workdir / "go.mod.in", gomod) || !fs::exists(workdir / "go.sum")) {
    write_if_changed(workdir / "go.mod", gomod);
    std::error_code ec;
    fs::remove(workdir / "go.sum", ec);
  }
  write_if_changed(workdir / "main.go", read_text(source / "main.go"));
  const fs::path binary = workdir / "etcdbench";

  std::map<std::string, std::string> env = {
      {"GO111MODULE", "on"},
      {"GOFLAGS", "-mod=mod"},
      {"GOWORK", "off"},
  };
  // Go's own build cache, shared with `./dev.sh etcd` (the client's
  // dependencies are the server's); a cache in the work dir only where Go
  // has no default one.
  const char* home = std::getenv("HOME");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* gocache = std::getenv("GOCACHE");
  if (!(gocache && *gocache) && !(home && *home) && !(xdg && *xdg)) env["GOCACHE"] = (base / "cache").string();
  const auto build_start = Clock::now();
  auto go_run = [&](std::vector<std::string> args, const std::map<std::string, std::string>& extra) {
    args.insert(args.begin(), {go->string(), "-C", workdir.string()});
    auto e = env;
    for (const auto& [k, v] : extra) e[k] = v;
    return run_process(args, e, std::chrono::minutes(10));
  };
  if (!fs::exists(workdir / "go.sum")) {
    // Offline first: the module cache may hold everything already.
    if (const auto offline = go_run({"mod", "tidy"}, {{"GOPROXY", "off"}}); offline.exit_code != 0) {
      const auto tidy = go_run({"mod", "tidy"}, {});
      if (tidy.timed_out || tidy.exit_code != 0) {
        throw std::runtime_error("go mod tidy for the Go peer (client v" + client + ") failed:\n" + tail(tidy.err));
      }
    }
  }
  const auto build = go_run({"build", "-o", binary.string(), "."}, {});
  if (build.timed_out || build.exit_code != 0) {
    throw std::runtime_error("building the Go peer failed:\n" + tail(build.err));
  }
  char built[64];
  std::snprintf(built, sizeof built, "%.1f", std::chrono::duration<double>(Clock::now() - build_start).count());
  ctx.note("go peer: go.etcd.io/etcd/client/v3 v" + client + " (server " + (server.empty() ? "?" : server) +
           "), built in " + built + " s (" + workdir.string() + ")");
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

// put_seq against go_put_seq in alternating short windows (a round: ours,
// a bare gRPC C++ stub's, then Go's in a fresh peer process with its own
// warm-up), the median of the per-round ratios: the load of the moment moves
// the three sides of a round alike, where two long windows minutes apart
// can differ by a factor. The bare stub (a synchronous KV.Put on a channel
// of its own, no library code) splits the gap into what our client adds and
// what gRPC C++ itself costs against Go's transport; the notes give both.
double put_seq_vs_go_paired(Context& ctx) {
  const fs::path& binary = go_peer_binary(ctx);
  const int rounds = ctx.settings.quick ? 5 : 11;
  const auto window = std::chrono::milliseconds(ctx.settings.quick ? 300 : 500);
  const auto warmup = std::chrono::milliseconds(100);
  const std::string key = put_seq_key();
  const auto rate_for = [](Clock::duration d, const std::function<void()>& op) {
    const auto start = Clock::now();
    uint64_t n = 0;
    for (; Clock::now() < start + d; ++n) op();
    return static_cast<double>(n) / std::chrono::duration<double>(Clock::now() - start).count();
  };
  const auto ours = [&] { ctx.client.put(key, kValue).wait().value(); };
  auto channel = grpc::CreateChannel(ctx.client.options().endpoints.front(), grpc::InsecureChannelCredentials());
  auto stub = etcdserverpb::KV::NewStub(channel);
  etcdserverpb::PutRequest request;
  request.set_key(Context::key_prefix("put_seq_raw") + "k");
  request.set_value(kValue);
  const auto raw = [&] {
    grpc::ClientContext call;
    call.set_deadline(std::chrono::system_clock::now() + kCallBound);
    etcdserverpb::PutResponse response;
    if (const auto st = stub->Put(&call, request, &response); !st.ok()) {
      throw std::runtime_error("bare gRPC put: " + st.error_message());
    }
  };
  std::vector<double> vs_go, vs_raw, raw_vs_go;
  std::string detail;
  for (int i = 0; i < rounds; ++i) {
    rate_for(warmup, ours);
    const double a = rate_for(window, ours);
    rate_for(warmup, raw);
    const double b = rate_for(window, raw);
    const auto go = run_go(binary,
                           {"-mode", "put", "-endpoints", ctx.endpoints_csv(), "-duration", millis_flag(window),
                            "-warmup", millis_flag(warmup)},
                           std::chrono::seconds(60));
    const double c = go.at("go_put_seq");
    vs_go.push_back(a / c);
    vs_raw.push_back(a / b);
    raw_vs_go.push_back(b / c);
    char round[96];
    std::snprintf(round, sizeof round, "%s%.0f/%.0f/%.0f", detail.empty() ? "" : ", ", a, b, c);
    detail += round;
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  char summary[160];
  std::snprintf(summary, sizeof summary, "median ours / bare gRPC C++ %.2f, bare gRPC C++ / Go %.2f", median(vs_raw),
                median(raw_vs_go));
  ctx.note("put_seq_vs_go_paired: " + std::to_string(rounds) + " rounds of " +
           std::to_string(duration_cast<milliseconds>(window).count()) + " ms; " + summary +
           "; puts/s ours/bare/Go: " + detail);
  return median(vs_go);
}

// Right after put_seq (order 100): both see the cluster in the same state.
[[maybe_unused]] const bool kGoMetrics = add_metrics({
    go("go_put_seq", "puts/s", "put_seq", 110),
    go("go_put_pipelined", "puts/s", "put_pipelined", 111),
    go("go_mutex_cycle_seq", "cycles/s", "put_seq", 112),
    go("go_mutex_cycle_many", "cycles/s", "put_pipelined", 113),
    go("go_elect_cycle_seq", "cycles/s", "put_seq", 114),
    go("go_queue_cycle_seq", "cycles/s", "put_seq", 115),
    {.name = "put_seq_vs_go_paired",
     .unit = "ratio",
     .kind = Kind::kCost,  // two decimals, no ratio
     .base = "",
     .order = 116,
     .needs_go_peer = true,
     .run = put_seq_vs_go_paired},
});
[[maybe_unused]] const bool kGoComparisons =
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
