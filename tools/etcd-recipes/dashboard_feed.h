// The dashboard's live state: each PREFIX read once in full (a bounded
// summary), then one watch per prefix; each change re-reads only the
// scope it names (dashboard_model.h) and the pages subscribed get the
// delta. Pages subscribe and receive text/event-stream messages.
//
//   DashboardFeed feed(ctx, prefixes);   // reads nothing yet
//   feed.start();                        // the workers, the watches, the sampler
//   auto sub = feed.subscribe();         // hello, history, a state per prefix, then updates
//   ... sub->take(...) ...
//   feed.stop();                         // joins every thread; subscribers end
//
// Threads: `kWorkers` readers per prefix (a slow scope, a 500k-item queue,
// does not hold back a lock's change beside it; scopes that overlap are
// never read at once, so a later read never loses to an earlier one), one
// sampler (a sample of the charted numbers each second), and the client's
// own. Watch handlers only mark scopes to read. A scope is read again at
// most once per the time its last read took (at most half of etcd's time
// on one scope however fast it changes) and a failed read is retried after
// 1 s, doubling up to 10 s; the page shows the failure meanwhile.
// A watch that ends (compaction while cut off, permission revoked) leads
// to a full re-read and a new watch from its revision. While a page is
// open, the recipes that show lease TTLs (holders, work in flight,
// instances; at most 50 per prefix) are re-read every 5 s, so the TTLs
// shown stay current; with no page open nothing is read between changes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common.h"
#include "dashboard_model.h"
#include "metrics_text.h"

namespace etcd_cli {

// One page's stream of messages ("event: NAME\ndata: JSON\n\n" each).
class DashboardSubscriber {
 public:
  // Waits up to `wait` for messages; appends them to `out`. False once the
  // subscriber was dropped (it fell too far behind, or the feed stopped).
  bool take(std::string& out, std::chrono::milliseconds wait);

 private:
  friend class DashboardFeed;
  void push(const std::string& message);
  void drop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool dropped_ = false;
};

class DashboardFeed {
 public:
  static constexpr int kWorkers = 3;
  // A page whose unsent messages exceed this is dropped; its browser
  // reconnects and starts again from a state message.
  static constexpr size_t kMaxPendingBytes = 8u << 20;

  DashboardFeed(Context& ctx, std::vector<std::string> prefixes, bool actions);
  ~DashboardFeed();
  DashboardFeed(const DashboardFeed&) = delete;
  DashboardFeed& operator=(const DashboardFeed&) = delete;

  void start();
  void stop();

  // A new page: its first messages are hello, history and one state per
  // prefix, then every update, in order.
  std::shared_ptr<DashboardSubscriber> subscribe();
  void unsubscribe(const std::shared_ptr<DashboardSubscriber>& sub);
  size_t subscribers() const;

  // What the exporter would serve, from what is held (no etcd reads).
  std::vector<metrics::PrefixScrape> scrapes() const;

  const std::vector<std::string>& prefixes() const noexcept { return prefixes_; }

 private:
  struct Prefix;
  static int64_t now_ms();

  void worker(Prefix& p);
  void sampler();
  void watch(Prefix& p, int64_t from_revision);
  void on_events(Prefix& p, const std::vector<std::string>& keys, const std::vector<int64_t>& revisions);
  void read_scope(Prefix& p, const std::string& scope);
  void broadcast(const std::string& event, const nlohmann::json& data);

  Context& ctx_;
  std::vector<std::string> prefixes_;
  bool actions_;
  std::vector<std::unique_ptr<Prefix>> list_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> handlers_{0};  // watch handler calls in progress
  std::vector<std::thread> threads_;

  // The model, the clock, the series and the subscribers: one mutex, so a
  // subscriber's first state and the updates after it never miss a change.
  mutable std::mutex mu_;
  std::condition_variable sampler_cv_;
  dashboard::RevisionClock clock_;
  dashboard::Series series_;
  std::set<std::shared_ptr<DashboardSubscriber>> subscribers_;
};

}  // namespace etcd_cli
