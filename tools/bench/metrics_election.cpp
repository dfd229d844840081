// Election metrics (issue 8): LeaderLatch's uncontended campaign + resign,
// and a contended turnover between 8 candidates (latency, and watch
// wake-ups per leadership change). Only LeaderLatch's public API is used
// (start, await_leadership, resign, close).
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/metrics.h"

namespace bench {
namespace {

using etcd::recipes::LeaderLatch;
using etcd::recipes::RecipeOptions;
using Millis = std::chrono::duration<double, std::milli>;

std::string fmt(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// --- elect_cycle_seq -----------------------------------------------------------

// Campaign until leading, then resign: uncontended, one at a time.
double elect_cycle_seq(Context& ctx) {
  LeaderLatch latch(ctx.client, Context::key_prefix("elect_cycle_seq") + "election", "bench");
  const double rate = measure_cycle_paired(ctx, [&] {
    latch.start();
    latch.await_leadership().wait().value();
    if (!latch.resign().wait().value()) throw std::runtime_error("elect_cycle_seq: resign reported a lost term");
  });
  latch.close();
  return rate;
}

// --- elect_handoff_* / elect_wakeups_per_turnover ---------------------------------

constexpr int kCandidates = 8;

struct Turnovers {
  std::vector<double> ms;  // sorted
  double wakeups_per_turnover = 0;

  double percentile(double p) const {
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(ms.size())));
    return ms.at(std::max<std::size_t>(rank, 1) - 1);
  }
};

// 8 latches on one election. Whoever leads resigns at once and, once its
// resign completed, joins again at the back, so 7 stay queued. A sample is
// the leader's resign() call → the next leader's await_leadership()
// completion.
class TurnoverRun : public std::enable_shared_from_this<TurnoverRun> {
 public:
  TurnoverRun(std::vector<std::shared_ptr<LeaderLatch>> latches,
              std::shared_ptr<etcd::recipes::PrometheusMetrics> metrics, etcd::recipes::Labels labels, int warmup,
              Clock::duration window, std::size_t max_samples)
      : latches_(std::move(latches)),
        metrics_(std::move(metrics)),
        labels_(std::move(labels)),
        warmup_(warmup),
        window_(window),
        max_samples_(max_samples) {}

  void start() {
    for (std::size_t i = 0; i < latches_.size(); ++i) contend(i);
  }

  std::vector<double> finish(Clock::time_point give_up, double& wakeups_per_turnover) {
    std::unique_lock lock(mu_);
    const bool done = cv_.wait_until(lock, give_up, [&] { return stopping_; });
    lock.unlock();
    for (auto& l : latches_) l->close();
    lock.lock();
    cv_.wait_until(lock, Clock::now() + std::chrono::seconds(10), [&] { return outstanding_ == 0; });
    if (!done) throw std::runtime_error(fmt("election turnover: only %zu samples in time", samples_.size()));
    if (error_) throw etcd::Error(*error_);
    if (measured_ == 0) throw std::runtime_error("election turnover: no turnovers measured");
    wakeups_per_turnover = (wakeups_end_ - wakeups_start_) / static_cast<double>(measured_);
    return samples_;
  }

 private:
  void contend(std::size_t i) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      ++outstanding_;
    }
    latches_[i]->start();
    auto self = shared_from_this();
    latches_[i]->await_leadership().then([self, i](etcd::Result<void> r) {
      self->on_leading(i, std::move(r));
      std::lock_guard lock(self->mu_);
      if (--self->outstanding_ == 0) self->cv_.notify_all();
    });
  }

  void on_leading(std::size_t i, etcd::Result<void> r) {
    const auto now = Clock::now();
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;  // closed: waiting latches end with kClosed
      if (!r.ok()) return fail(r.status());
      if (resigned_at_) {
        if (++turnovers_ == warmup_) {
          wakeups_start_ = metrics_->value("etcd_recipes_election_wakeups_total", labels_);
          measure_end_ = now + window_;
        } else if (turnovers_ > warmup_) {
          samples_.push_back(Millis(now - *resigned_at_).count());
          ++measured_;
        }
      }
      if (turnovers_ > warmup_ && (now >= measure_end_ || samples_.size() >= max_samples_)) {
        wakeups_end_ = metrics_->value("etcd_recipes_election_wakeups_total", labels_);
        stopping_ = true;
        cv_.notify_all();
        return;
      }
      resigned_at_ = Clock::now();
    }
    auto self = shared_from_this();
    latches_[i]->resign().then([self, i](etcd::Result<bool> resigned) {
      if (!resigned.ok() || !*resigned) {
        std::lock_guard lock(self->mu_);
        if (!self->stopping_) {
          self->fail(resigned.ok() ? etcd::Status(etcd::StatusCode::kAborted, "a resign reported a lost term")
                                   : resigned.status());
        }
        return;
      }
      self->contend(i);  // join again, behind the others
    });
  }

  // Under mu_.
  void fail(etcd::Status why) {
    if (!error_) error_ = std::move(why);
    stopping_ = true;
    cv_.notify_all();
  }

  std::vector<std::shared_ptr<LeaderLatch>> latches_;
  std::shared_ptr<etcd::recipes::PrometheusMetrics> metrics_;
  const etcd::recipes::Labels labels_;
  const int warmup_;
  const Clock::duration window_;
  const std::size_t max_samples_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int outstanding_ = 0;
  int turnovers_ = 0;
  int measured_ = 0;
  Clock::time_point measure_end_ = Clock::time_point::max();
  std::optional<Clock::time_point> resigned_at_;
  std::vector<double> samples_;
  double wakeups_start_ = 0;
  double wakeups_end_ = 0;
  std::optional<etcd::Status> error_;
};

Turnovers measure_turnovers(Context& ctx) {
  const std::string name = Context::key_prefix("elect_handoff") + "election";
  auto metrics = std::make_shared<etcd::recipes::PrometheusMetrics>();
  RecipeOptions options;
  options.metrics = metrics;
  std::vector<std::shared_ptr<LeaderLatch>> latches;
  for (int i = 0; i < kCandidates; ++i) {
    latches.push_back(std::make_shared<LeaderLatch>(ctx.client, name, "candidate-" + std::to_string(i), options));
  }
  const int warmup = ctx.settings.quick ? 20 : 50;
  auto run = std::make_shared<TurnoverRun>(latches, metrics, etcd::recipes::Labels{{"election", name}}, warmup,
                                           ctx.settings.duration, 5000);
  run->start();
  Turnovers t;
  t.ms = run->finish(Clock::now() + ctx.settings.duration + std::chrono::seconds(60), t.wakeups_per_turnover);
  std::ranges::sort(t.ms);
  const auto slow = std::count_if(t.ms.begin(), t.ms.end(), [](double v) { return v > 40.0; });
  ctx.note(
      fmt("election turnover: %d candidates, %zu samples, min %.3f p90 %.3f max %.3f ms, %lld over 40 ms, "
          "%.2f wake-ups per turnover",
          kCandidates, t.ms.size(), t.ms.front(), t.percentile(90), t.ms.back(), static_cast<long long>(slow),
          t.wakeups_per_turnover));
  return t;
}

const Turnovers& turnovers(Context& ctx) {
  return ctx.memo<Turnovers>("elect_handoff", [&] { return measure_turnovers(ctx); });
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "elect_cycle_seq", .unit = "cycles/s", .order = 450, .run = elect_cycle_seq},
    {.name = "elect_handoff_p50_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 460,
     .run = [](Context& ctx) { return turnovers(ctx).percentile(50); }},
    {.name = "elect_handoff_p99_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 461,
     .run = [](Context& ctx) { return turnovers(ctx).percentile(99); }},
    {.name = "elect_wakeups_per_turnover",
     .unit = "events",
     .base = "",
     .order = 462,
     .run = [](Context& ctx) { return turnovers(ctx).wakeups_per_turnover; }},
});
[[maybe_unused]] const bool kComparisons =
    add_comparison({"elect_cycle_seq_vs_go", "elect_cycle_seq", "go_elect_cycle_seq"});

}  // namespace
}  // namespace bench
