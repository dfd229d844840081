#include "dashboard_feed.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <utility>

#include "summary_reader.h"

namespace etcd_cli {
namespace {

using Clock = std::chrono::steady_clock;
namespace in = etcd::recipes::inspect;
namespace db = etcd_cli::dashboard;

// The lease TTLs a page shows are read again this often, for at most
// this many recipes per prefix.
constexpr int64_t kTtlRefreshSeconds = 5;
constexpr size_t kTtlRecipes = 50;

// Leases asked after a read of one scope (a whole prefix: kMaxLeases):
// the holders', claims', instances' and transient keys' in the recipes'
// order, so the first shown have theirs.
constexpr size_t kLeasesPerScope = 50;

bool overlap(const std::string& a, const std::string& b) { return key_within(a, b) || key_within(b, a); }

std::string sse(const std::string& event, const nlohmann::json& data) {
  return "event: " + event + "\ndata: " + dump_json(data) + "\n\n";
}

std::vector<etcd::KeyValue> leased_keys(const in::Report& report) {
  std::vector<etcd::KeyValue> out;
  for (const auto& r : report.recipes) {
    size_t shown = 0;
    for (const auto& e : r.entries) {
      if (++shown > db::kEntriesPerRecipe) break;
      if (!db::shows_ttl(e)) continue;
      etcd::KeyValue kv;
      kv.lease = db::shown_lease(e);
      out.push_back(std::move(kv));
    }
  }
  return out;
}

}  // namespace

// --- DashboardSubscriber -------------------------------------------------------------

bool DashboardSubscriber::take(std::string& out, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, wait, [&] { return !pending_.empty() || dropped_; });
  if (dropped_) return false;
  out += pending_;
  pending_.clear();
  return true;
}

void DashboardSubscriber::push(const std::string& message) {
  std::lock_guard lock(mu_);
  if (dropped_) return;
  if (pending_.size() + message.size() > DashboardFeed::kMaxPendingBytes) {
    dropped_ = true;
    pending_.clear();
  } else {
    pending_ += message;
  }
  cv_.notify_all();
}

void DashboardSubscriber::drop() {
  std::lock_guard lock(mu_);
  dropped_ = true;
  cv_.notify_all();
}

// --- DashboardFeed -------------------------------------------------------------------

struct DashboardFeed::Prefix {
  Prefix(std::string prefix, std::string base)
      : model(prefix, base), what(cat("dashboard ", prefix.empty() ? "\"\"" : prefix)) {}

  db::PrefixModel model;  // under the feed's mu_
  const std::string what;
  double full_seconds = 0;    // the last read of the whole prefix (for /metrics), under mu_
  int64_t full_requests = 0;  // and its requests

  // Which scopes to read, under sched_mu.
  std::mutex sched_mu;
  std::condition_variable cv;
  std::set<std::string> dirty;
  std::set<std::string> running;
  std::map<std::string, Clock::time_point> not_before;
  std::map<std::string, std::chrono::milliseconds> backoff;
  bool rewatch = true;  // the next read of the whole prefix starts a watch
  etcd::Watcher watcher;
};

DashboardFeed::DashboardFeed(Context& ctx, std::vector<std::string> prefixes, bool actions)
    : ctx_(ctx), prefixes_(std::move(prefixes)), actions_(actions) {
  for (const auto& prefix : prefixes_) list_.push_back(std::make_unique<Prefix>(prefix, prefix_base(prefix)));
}

DashboardFeed::~DashboardFeed() { stop(); }

int64_t DashboardFeed::now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void DashboardFeed::start() {
  // The first read of each prefix, here: the page has a state when the
  // server starts answering.
  for (auto& p : list_) {
    try {
      read_scope(*p, p->model.base());
    } catch (const std::exception&) {
      // Said on stderr and shown on the page; a worker tries again.
      std::lock_guard lock(p->sched_mu);
      p->dirty.insert(p->model.base());
      p->not_before[p->model.base()] = Clock::now() + std::chrono::seconds(1);
      p->backoff[p->model.base()] = std::chrono::seconds(1);
    }
  }
  for (auto& p : list_) {
    for (int i = 0; i < kWorkers; ++i) threads_.emplace_back([this, &p = *p] { worker(p); });
  }
  threads_.emplace_back([this] { sampler(); });
}

void DashboardFeed::stop() {
  if (stopping_.exchange(true)) return;
  for (auto& p : list_) {
    std::lock_guard lock(p->sched_mu);
    p->cv.notify_all();
  }
  {
    std::lock_guard lock(mu_);
    sampler_cv_.notify_all();
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  for (auto& p : list_) {
    etcd::Watcher w;
    {
      std::lock_guard lock(p->sched_mu);
      w = std::move(p->watcher);
    }
    w.cancel();
  }
  // A handler call already running when cancel() returned may still be
  // on its way out: wait for it (it only takes locks briefly).
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (handlers_.load() != 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::lock_guard lock(mu_);
  for (const auto& sub : subscribers_) sub->drop();
  subscribers_.clear();
}

std::shared_ptr<DashboardSubscriber> DashboardFeed::subscribe() {
  auto sub = std::make_shared<DashboardSubscriber>();
  const int64_t now = now_ms();
  std::lock_guard lock(mu_);
  if (stopping_) {
    sub->drop();
    return sub;
  }
  sub->push(sse("hello", {{"prefixes", prefixes_},
                          {"actions", actions_},
                          {"now", now},
                          {"version", ETCD_RECIPES_VERSION},
                          {"history_seconds", 600},
                          {"step_ms", 1000}}));
  sub->push(sse("history", series_.history_json(now)));
  for (const auto& p : list_) sub->push(sse("state", p->model.state_json(now)));
  subscribers_.insert(sub);
  return sub;
}

void DashboardFeed::unsubscribe(const std::shared_ptr<DashboardSubscriber>& sub) {
  std::lock_guard lock(mu_);
  subscribers_.erase(sub);
}

size_t DashboardFeed::subscribers() const {
  std::lock_guard lock(mu_);
  return subscribers_.size();
}

void DashboardFeed::broadcast(const std::string& event, const nlohmann::json& data) {
  // Under mu_.
  const std::string message = sse(event, data);
  for (auto it = subscribers_.begin(); it != subscribers_.end();) {
    (*it)->push(message);
    std::lock_guard sub_lock((*it)->mu_);
    it = (*it)->dropped_ ? subscribers_.erase(it) : std::next(it);
  }
}

std::vector<metrics::PrefixScrape> DashboardFeed::scrapes() const {
  std::vector<metrics::PrefixScrape> out;
  std::lock_guard lock(mu_);
  for (const auto& p : list_) {
    metrics::PrefixScrape s;
    s.prefix = p->model.prefix();
    if (p->model.loaded() && p->model.error().empty()) {
      s.report = p->model.report();
    } else {
      s.error = p->model.error().empty() ? "not read yet" : p->model.error();
    }
    s.seconds = p->full_seconds;
    s.requests = p->full_requests;
    out.push_back(std::move(s));
  }
  return out;
}

void DashboardFeed::read_scope(Prefix& p, const std::string& scope) {
  const auto started = Clock::now();
  std::string error;
  try {
    Snapshot s = read_summary(ctx_, scope, p.what);
    const bool whole = scope == p.model.base();
    in::Report report = in::build_report(std::move(s.kvs), s.revision, s.totals);
    const auto leases =
        read_leases(ctx_, leased_keys(report), p.what, whole ? kMaxLeases : kLeasesPerScope);
    const std::optional<std::string> wider = db::wider_scope(scope, report);
    bool start_watch = false;
    {
      std::lock_guard lock(mu_);
      clock_.observe(s.revision, now_ms(), false);
      const bool had_error = !p.model.error().empty();
      p.model.set_error("");
      const db::Delta delta = p.model.apply(scope, report, leases, clock_, s.stopped_at);
      if (whole) {
        p.full_seconds = std::chrono::duration<double>(Clock::now() - started).count();
        p.full_requests = s.requests;
      }
      if (!delta.empty() || had_error) broadcast("update", p.model.update_json(delta, now_ms()));
    }
    {
      std::lock_guard lock(p.sched_mu);
      if (wider && key_within(*wider, p.model.base())) {
        p.dirty.insert(*wider);
        p.cv.notify_all();
      }
      if (whole && p.rewatch) {
        p.rewatch = false;
        start_watch = true;
      }
    }
    if (start_watch) watch(p, s.revision + 1);
    return;
  } catch (const Failure& f) {
    error = f.explained();
  } catch (const etcd::Error& e) {
    error = cat(p.what, ": ", explain(e.status()));
  }
  std::cerr << cat(kProgram, ": ", error, "\n") << std::flush;
  {
    std::lock_guard lock(mu_);
    const bool same = p.model.error() == error;
    p.model.set_error(error);
    if (!same) broadcast("update", p.model.update_json({}, now_ms()));
  }
  throw std::runtime_error(error);
}

void DashboardFeed::watch(Prefix& p, int64_t from_revision) {
  const std::string& base = p.model.base();
  etcd::WatchOptions options;
  std::string key;
  if (base.empty()) {
    key = std::string(etcd::kFromKey);
    options.range_end = std::string(etcd::kFromKey);
  } else {
    key = base;
    options.range_end = etcd::prefix_range_end(base + "/");
  }
  options.start_revision = from_revision;
  etcd::Watcher w = ctx_.client().watch(key, options, [this, &p](etcd::Result<etcd::WatchResponse> r) {
    ++handlers_;
    struct Leave {
      std::atomic<int>& n;
      ~Leave() { --n; }
    } leave{handlers_};
    if (stopping_) return;
    if (!r.ok()) {
      // The watch ended (compacted while cut off, no permission any more):
      // read the whole prefix again, and watch from there.
      std::cerr << cat(kProgram, ": ", p.what, ": the watch ended (", explain(r.status()),
                       "); reading the prefix again\n")
                << std::flush;
      std::lock_guard lock(p.sched_mu);
      p.rewatch = true;
      p.dirty.insert(p.model.base());
      p.cv.notify_all();
      return;
    }
    std::vector<std::string> keys;
    std::vector<int64_t> revisions;
    for (const auto& e : r->events) {
      if (!key_within(e.kv.key, p.model.base())) continue;  // the range also spans base-x, base.x, ...
      keys.push_back(e.kv.key);
      revisions.push_back(e.kv.mod_revision);
    }
    if (!keys.empty()) on_events(p, keys, revisions);
  });
  std::lock_guard lock(p.sched_mu);
  p.watcher = std::move(w);
}

void DashboardFeed::on_events(Prefix& p, const std::vector<std::string>& keys, const std::vector<int64_t>& revisions) {
  const int64_t now = now_ms();
  std::set<std::string> scopes;
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      clock_.observe(revisions[i], now, true);
      scopes.insert(p.model.scope_for(keys[i]));
    }
  }
  std::lock_guard lock(p.sched_mu);
  p.dirty.insert(scopes.begin(), scopes.end());
  p.cv.notify_all();
}

void DashboardFeed::worker(Prefix& p) {
  std::unique_lock lock(p.sched_mu);
  for (;;) {
    std::optional<std::string> picked;  // "" is a scope too: every key
    for (;;) {
      if (stopping_) return;
      const auto now = Clock::now();
      std::optional<Clock::time_point> next;
      for (const auto& s : p.dirty) {
        if (std::any_of(p.running.begin(), p.running.end(), [&](const std::string& r) { return overlap(r, s); })) {
          continue;
        }
        auto nb = p.not_before.find(s);
        if (nb == p.not_before.end() || nb->second <= now) {
          picked = s;
          break;
        }
        if (!next || nb->second < *next) next = nb->second;
      }
      if (picked) break;
      if (next) {
        p.cv.wait_until(lock, *next);
      } else {
        p.cv.wait(lock);
      }
    }
    const std::string scope = *picked;
    p.dirty.erase(scope);
    p.not_before.erase(scope);
    p.running.insert(scope);
    lock.unlock();
    const auto started = Clock::now();
    bool ok = true;
    try {
      read_scope(p, scope);
    } catch (const std::exception&) {
      ok = false;
    }
    const auto took = Clock::now() - started;
    lock.lock();
    p.running.erase(scope);
    if (ok) {
      p.backoff.erase(scope);
      p.not_before[scope] = Clock::now() + took;
    } else {
      auto& b = p.backoff[scope];
      b = b.count() == 0 ? std::chrono::milliseconds(1000) : std::min(b * 2, std::chrono::milliseconds(10'000));
      p.not_before[scope] = Clock::now() + b;
      p.dirty.insert(scope);
    }
    if (p.not_before.size() > 10'000) {
      const auto now = Clock::now();
      std::erase_if(p.not_before, [&](const auto& kv) { return kv.second <= now && p.dirty.count(kv.first) == 0; });
    }
    p.cv.notify_all();
  }
}

void DashboardFeed::sampler() {
  std::unique_lock lock(mu_);
  auto next = Clock::now();
  int64_t ticks = 0;
  while (!stopping_) {
    next += std::chrono::seconds(1);
    sampler_cv_.wait_until(lock, next, [&] { return stopping_.load(); });
    if (stopping_) return;
    std::map<std::string, std::map<std::string, int64_t>> values;
    for (const auto& p : list_) values.merge(p->model.metrics());
    const int64_t now = now_ms();
    series_.sample(now, values);
    nlohmann::json v = nlohmann::json::object();
    for (const auto& [id, m] : values) v[id] = m;
    broadcast("sample", {{"t", now}, {"values", std::move(v)}});
    // While a page is open, the TTLs it shows are read again every few
    // seconds (their recipes' scopes, at most kTtlRecipes per prefix).
    if (++ticks % kTtlRefreshSeconds != 0 || subscribers_.empty()) continue;
    std::vector<std::pair<Prefix*, std::vector<std::string>>> stale;
    for (const auto& p : list_) stale.emplace_back(p.get(), p->model.with_ttls(kTtlRecipes));
    lock.unlock();
    for (auto& [p, names] : stale) {
      std::lock_guard sched(p->sched_mu);
      p->dirty.insert(names.begin(), names.end());
      p->cv.notify_all();
    }
    lock.lock();
  }
}

}  // namespace etcd_cli
