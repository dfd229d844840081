// etcd-recipes-bench: the metric registry and the measuring helpers that
// metric files share.
//
// A metric lives in its own .cpp file and registers itself at static
// initialisation:
//
//   [[maybe_unused]] const bool kRegistered = bench::add_metrics({{
//       .name = "lock_cycle_seq", .unit = "cycles/s", .order = 400,
//       .run = [](bench::Context& ctx) { return bench::measure_sequential(ctx, [&] { ... }); },
//   }});
//
// A metric file keeps its code in a namespace of its own,
// bench::<file name> (the unity build compiles several files as one, so
// their helpers must not share names).
//
// Metrics run in ascending `order` (ties by name) against one etcd cluster
// and one Client. Numbers drift on shared machines, so every rate is also
// reported relative to a base rate of the same run (see README.md).
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/client.h"
#include "etcd/testing/etcd_cluster.h"

namespace bench {

using Clock = std::chrono::steady_clock;

// How a metric relates to its base rate.
enum class Kind {
  kRate,     // ops/s: ratio = value / base
  kLatency,  // ms: ratio = value / (1000 / base), i.e. in base-op round trips
  kCount,    // no ratio
  kCost,     // etcd requests per operation, counted on the server: two decimals, no ratio
};

struct Settings {
  int members = 1;
  bool quick = false;
  Clock::duration duration = std::chrono::seconds(5);  // timed window per metric
  Clock::duration warmup = std::chrono::seconds(1);    // before each timed window
  bool go_peer = false;
  bool capacity = false;              // also run the capacity_* metrics
  bool scale = false;                 // also run the production-scale metrics
  std::filesystem::path go_peer_src;  // empty: look in the usual places
  std::filesystem::path go_workdir;
  std::chrono::milliseconds election_timeout{1000};  // of the cluster the bench started
};

// Thrown by a metric that cannot run here (e.g. no Go toolchain): reported
// as skipped, not as a failure.
class Skipped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Context {
 public:
  // `etcd` is null when the bench runs against an existing cluster
  // (--endpoints): metrics that start, stop or kill members are skipped.
  Context(etcd::Client& c, const etcd::testing::EtcdCluster* etcd, const Settings& s)
      : client(c), settings(s), cluster_(etcd) {}

  etcd::Client& client;
  const Settings& settings;
  // The bench's own cluster; throws Skipped with --endpoints.
  const etcd::testing::EtcdCluster& cluster() const {
    if (cluster_ == nullptr) throw Skipped("needs the bench's own cluster (runs without --endpoints)");
    return *cluster_;
  }
  bool has_cluster() const { return cluster_ != nullptr; }
  // A new one-member cluster of the bench's etcd release and timing, ready
  // (it has a leader), for a metric that must not share its member (the
  // scale metrics); throws Skipped with --endpoints.
  std::unique_ptr<etcd::testing::EtcdCluster> private_member() const {
    const auto& bench_cluster = cluster();
    etcd::testing::EtcdClusterOptions options;
    options.members = 1;
    options.etcd_binary = bench_cluster.binary();
    options.heartbeat = bench_cluster.options().heartbeat;
    options.election_timeout = bench_cluster.options().election_timeout;
    auto member = etcd::testing::EtcdCluster::start(std::move(options));
    member->wait_for_leader(std::chrono::seconds(30));
    return member;
  }
  // The client's endpoints, comma-separated (for other clients, e.g. Go's).
  std::string endpoints_csv() const {
    std::string csv;
    for (const auto& ep : client.options().endpoints) csv += (csv.empty() ? "" : ",") + ep;
    return csv;
  }
  // Threads of this process (by name) before the Client was created.
  std::map<std::string, int> threads_before_client;

  // Every key a run writes is under run_prefix(), "bench/<run id>/", fresh
  // for each run: a run against an existing cluster never meets the keys
  // an earlier one (killed, say) left, and main() deletes the prefix when
  // the run ends. Child processes of the run (helper modes) inherit it.
  static const std::string& run_prefix();
  // Each metric writes under its own prefix so metrics cannot disturb each
  // other's watches or compares.
  static std::string key_prefix(std::string_view metric) { return run_prefix() + std::string(metric) + "/"; }

  // A line printed under the table (diagnostics that do not fit a number).
  void note(std::string text) { notes_.push_back(std::move(text)); }
  const std::vector<std::string>& notes() const { return notes_; }

  // Named numbers that belong with a metric's value (a capacity row's
  // columns): written into its JSON object as "detail".
  void set_detail(const std::string& metric, std::map<std::string, double> detail) {
    details_[metric] = std::move(detail);
  }
  const std::map<std::string, double>* detail(const std::string& metric) const {
    const auto it = details_.find(metric);
    return it == details_.end() ? nullptr : &it->second;
  }

  // The metric being run (set by main() before each metric's `run`).
  const std::string& metric() const { return metric_; }
  void set_metric(std::string name) { metric_ = std::move(name); }

  // A base rate measured interleaved with a metric (see
  // measure_sequential_paired): that metric's ratio uses it instead of the
  // base metric's own run.
  void set_paired_base(const std::string& metric, double rate) { paired_bases_[metric] = rate; }
  std::optional<double> paired_base(const std::string& metric) const {
    const auto it = paired_bases_.find(metric);
    return it == paired_bases_.end() ? std::nullopt : std::optional(it->second);
  }

  // Runs `compute` once per run and caches its value (or its exception), so
  // several metrics can share one measurement (p50 and p99 of one sample
  // set; the three numbers of one Go peer run).
  template <class T>
  const T& memo(const std::string& key, const std::function<T()>& compute) {
    auto it = memo_.find(key);
    if (it == memo_.end()) {
      std::any slot;
      try {
        slot = compute();
      } catch (...) {
        slot = std::current_exception();
      }
      it = memo_.emplace(key, std::move(slot)).first;
    }
    if (const auto* error = std::any_cast<std::exception_ptr>(&it->second)) std::rethrow_exception(*error);
    return std::any_cast<const T&>(it->second);
  }

 private:
  std::string metric_;
  std::vector<std::string> notes_;
  std::map<std::string, double> paired_bases_;
  std::map<std::string, std::map<std::string, double>> details_;
  std::map<std::string, std::any> memo_;
  const etcd::testing::EtcdCluster* cluster_;
};

// The deadline of every call a metric waits on (a recipe's wait has none
// of its own): a call that never completes fails its metric, and the run
// goes on. Generous: a loaded 2-core machine answers far sooner.
inline constexpr auto kCallBound = std::chrono::seconds(30);

// printf into a std::string of whatever length the text needs (notes, errors).
template <class... Args>
std::string fmt(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), format, args...);
  out.resize(static_cast<size_t>(n));
  return out;
}

// Latencies in milliseconds, sorted.
struct Samples {
  std::vector<double> ms;

  double percentile(double p) const {
    // Nearest rank: the smallest sample with at least p% at or below it.
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(ms.size())));
    return ms.at(std::max<std::size_t>(rank, 1) - 1);
  }
};

struct Metric {
  std::string name;
  std::string unit;
  Kind kind = Kind::kRate;
  std::string base = "put_seq";  // empty: no ratio
  int order = 1000;
  bool needs_go_peer = false;  // only run with --go-peer
  // Only run with --capacity (or named in --only): their hundreds of
  // recipe objects and counter scrapes answer an operator's question, not a
  // regression's, and would lengthen every ordinary run.
  bool needs_capacity = false;
  // Only run with --scale (or named in --only): thousands of sessions in
  // child processes for a minute, each metric against a private member.
  bool needs_scale = false;
  std::function<double(Context&)> run;
};

// A production-scale metric (needs_scale, no ratio): its own private
// member, its own child processes; Kind::kCost prints two decimals.
inline Metric scale_metric(std::string name, std::string unit, Kind kind, int order,
                           std::function<double(Context&)> run) {
  return {.name = std::move(name),
          .unit = std::move(unit),
          .kind = kind,
          .base = "",
          .order = order,
          .needs_scale = true,
          .run = std::move(run)};
}

// A derived ratio numerator / denominator, e.g. put_seq_vs_go.
struct Comparison {
  std::string name;
  std::string numerator;
  std::string denominator;
};

// A hidden mode of the bench binary, for a metric that needs a process of
// its own (e.g. a consumer to SIGKILL): `etcd-recipes-bench FLAG ARGS...`
// runs `run(ARGS)` instead of the bench and exits with what it returns.
// Start it with ChildProcess (process.h) and self_path().
struct HelperMode {
  std::string flag;  // e.g. "--workqueue-worker"
  std::function<int(const std::vector<std::string>& args)> run;
};

bool add_helper_mode(HelperMode mode);
// Null if `flag` names no helper mode.
const HelperMode* find_helper_mode(std::string_view flag);

bool add_metrics(std::vector<Metric> metrics);
bool add_comparison(Comparison comparison);
// Sorted by (order, name).
std::vector<Metric> metrics();
const std::vector<Comparison>& comparisons();

// --- measuring helpers ---------------------------------------------------

// Runs `op` back to back for the warm-up, then for the timed window;
// returns completions per second of the timed window. `op` reports failure
// by throwing (e.g. `.wait().value()`).
double measure_sequential(const Context& ctx, const std::function<void()>& op);

// What measure_sequential_paired measured.
struct PairedRun {
  double rate = 0;       // `op` completions per second of the `op` slices
  double base_rate = 0;  // puts per second of the interleaved put slices
  uint64_t ops = 0;      // `op` completions in the `op` slices
  uint64_t op_rpcs = 0;  // RPCs the client started during the `op` slices
};

// Like measure_sequential, but the timed window is cut into slices of
// kPairedSlice that alternate with slices of put_seq's puts (same key, same
// value), until the `op` slices add up to the timed window. Rates drift
// during a run (etcd's db grows, the machine is shared); interleaving gives
// `op` a base rate measured at the same time. Records that put rate as the
// current metric's paired base (Context::set_paired_base), which its ratio
// then uses.
PairedRun measure_sequential_paired(Context& ctx, const std::function<void()>& op);

// A recipe's uncontended cycle (e.g. acquire + release), one at a time:
// runs `cycle` once first, so the session grant of the recipe's first
// acquisition stays out of the measurement, then measure_sequential_paired.
// Notes RPCs per cycle and the paired put rate; returns cycles per second.
double measure_cycle_paired(Context& ctx, const std::function<void()>& cycle);

// Thread names of this process (from /proc/self/task/*/comm) → count.
std::map<std::string, int> thread_names();
int total(const std::map<std::string, int>& counts);
std::string describe(const std::map<std::string, int>& counts);
// A helper mode's client: its endpoints, as the bench passes them
// (comma-separated).
inline etcd::ClientOptions worker_client_options(const std::string& endpoints_csv) {
  etcd::ClientOptions options;
  std::string::size_type from = 0;
  while (from <= endpoints_csv.size()) {
    const auto comma = std::min(endpoints_csv.find(',', from), endpoints_csv.size());
    if (comma > from) options.endpoints.push_back(endpoints_csv.substr(from, comma - from));
    from = comma + 1;
  }
  return options;
}

// Writes `count` keys, `kv(i)` = {key, value}, in Txns of 100 puts with 32
// in flight (the fills of the load and scale metrics). A Txn that fails is
// sent again once (puts are safe to repeat); throws if that fails too or
// the fill passes `deadline`.
void put_all(etcd::Client& client, int count, const std::function<std::pair<std::string, std::string>(int)>& kv,
             Clock::time_point deadline);

// This process's resident set (VmRSS of /proc/self/status), in MB; or
// another field of it in kB, e.g. VmHWM (the peak resident set).
double rss_mb(std::string_view field = "VmRSS");

namespace detail {

// Keeps `depth` calls in flight: each completion that lands inside the
// window issues the next call from the completion callback.
template <class T>
class Pipeline : public std::enable_shared_from_this<Pipeline<T>> {
 public:
  Pipeline(std::function<etcd::Call<T>()> make_call, Clock::time_point end)
      : make_call_(std::move(make_call)), end_(end) {}

  void start(int depth) {
    {
      std::lock_guard lock(mu_);
      in_flight_ = depth;
    }
    for (int i = 0; i < depth; ++i) issue();
  }

  // Returns the number of completions inside the window.
  uint64_t wait(Clock::time_point give_up) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, give_up, [&] { return in_flight_ == 0; })) {
      throw std::runtime_error("pipelined calls did not drain in time");
    }
    if (error_) throw etcd::Error(*error_);
    return completed_;
  }

 private:
  void issue() {
    make_call_().then([self = this->shared_from_this()](etcd::Result<T> r) { self->on_done(std::move(r)); });
  }

  void on_done(etcd::Result<T> result) {
    const auto now = Clock::now();
    {
      std::lock_guard lock(mu_);
      if (!result.ok() && !error_) error_ = result.status();
      if (result.ok() && now < end_) ++completed_;
      if (error_ || now >= end_) {
        if (--in_flight_ == 0) cv_.notify_all();
        return;
      }
    }
    issue();
  }

  std::function<etcd::Call<T>()> make_call_;
  const Clock::time_point end_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;
  uint64_t completed_ = 0;
  std::optional<etcd::Status> error_;
};

template <class T>
double run_pipeline(const std::function<etcd::Call<T>()>& make_call, int depth, Clock::duration window,
                    Clock::duration drain_bound) {
  const auto start = Clock::now();
  auto pipeline = std::make_shared<Pipeline<T>>(make_call, start + window);
  pipeline->start(depth);
  const uint64_t completed = pipeline->wait(start + window + drain_bound);
  return static_cast<double>(completed) / std::chrono::duration<double>(window).count();
}

}  // namespace detail

// Like measure_sequential, but with `depth` calls in flight from one client
// via `.then` callbacks (refilled on completion).
template <class T>
double measure_pipelined(const Context& ctx, int depth, const std::function<etcd::Call<T>()>& make_call) {
  // A call may legitimately take up to the client's default timeout.
  const auto drain = ctx.client.options().default_timeout + std::chrono::seconds(5);
  detail::run_pipeline(make_call, depth, ctx.settings.warmup, drain);
  return detail::run_pipeline(make_call, depth, ctx.settings.duration, drain);
}

// Shared by the C++ and Go workloads (go-peer/main.go uses the same sizes).
inline constexpr int kPipelineDepth = 64;
inline constexpr std::size_t kValueSize = 32;
inline const std::string kValue(kValueSize, 'v');

// put_seq's key; measure_sequential_paired's puts use it too.
inline std::string put_seq_key() { return Context::key_prefix("put_seq") + "k"; }

// One slice of measure_sequential_paired: long enough for many operations
// per slice, short enough that both sides see the same drift.
inline constexpr auto kPairedSlice = std::chrono::milliseconds(250);

// --go-peer: runs etcd's Go client in its failover mode (go-peer/main.go,
// func failover) for `d` against `endpoints`: sequential puts; returns
// gap_ms (the longest gap between two successful puts), gap_start_unix (when
// it began, system clock, seconds) and failed_puts. Throws Skipped without
// a Go toolchain.
using GoResults = std::map<std::string, double>;
GoResults run_go_peer_failover(Context& ctx, const std::vector<std::string>& endpoints, Clock::duration d);

// The calls a throughput metric keeps in flight (the queue metrics):
// counted, the first failure kept (it stops the run), drained at the end.
class CallsInFlight {
 public:
  void begin() {
    std::lock_guard lock(mu_);
    ++in_flight_;
  }
  void end() {
    std::lock_guard lock(mu_);
    if (--in_flight_ == 0) cv_.notify_all();
  }
  void fail(const etcd::Status& st) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = st;
    stopping_ = true;
  }
  void stop() { stopping_ = true; }
  bool stopping() const { return stopping_; }
  // Waits until nothing is in flight (at most 30 s: then throws, naming
  // `metric`), then throws the first failure if there was one.
  void drain(const std::string& metric) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(30), [&] { return in_flight_ == 0; })) {
      throw std::runtime_error(metric + ": calls did not drain");
    }
    if (error_) throw etcd::Error(*error_);
  }

 private:
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;
  std::optional<etcd::Status> error_;
};

// Calls consumed with .then(), whose completions (and when each came) a
// metric waits for with a deadline — never a thread per call that would
// have to be joined if a call never completed. Outlives nothing it waits
// on: each completion holds the shared state.
class Completions {
 public:
  template <class T>
  void add(etcd::Call<T> call) {
    {
      std::lock_guard lock(state_->mu);
      ++state_->expected;
    }
    std::move(call).then([state = state_](etcd::Result<T> r) {
      std::lock_guard lock(state->mu);
      if (!r.ok() && !state->error) state->error = r.status();
      state->last = std::max(state->last, Clock::now());
      ++state->done;
      state->cv.notify_all();
    });
  }
  // Waits until every call added completed (throws naming `what` if one
  // has not by `deadline`, or the first failure); returns when the last
  // one did. Clears the set for the next round.
  Clock::time_point wait_all(Clock::time_point deadline, const std::string& what) {
    std::unique_lock lock(state_->mu);
    if (!state_->cv.wait_until(lock, deadline, [&] { return state_->done == state_->expected; })) {
      throw std::runtime_error(what + ": " + std::to_string(state_->expected - state_->done) + " of " +
                               std::to_string(state_->expected) + " calls had not completed by the deadline");
    }
    if (state_->error) throw etcd::Error(*state_->error);
    const auto last = state_->last;
    state_->expected = state_->done = 0;
    state_->last = {};
    return last;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    int expected = 0;
    int done = 0;
    Clock::time_point last{};
    std::optional<etcd::Status> error;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Producers parked while the backlog is too long, resumed all at once.
template <class P>
class ParkedProducers {
 public:
  void park(P* p) {
    std::lock_guard lock(mu_);
    parked_.push_back(p);
  }
  std::vector<P*> take_all() {
    std::vector<P*> out;
    std::lock_guard lock(mu_);
    out.swap(parked_);
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<P*> parked_;
};

}  // namespace bench
