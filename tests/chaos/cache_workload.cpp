// The cache: a writer changes ten children of a path (puts and deletes,
// through the proxies) while a PathChildrenCache on another client follows
// them.
//
// Checker:
//   * once the writer stopped and the cache caught up with etcd's revision,
//     the cache's state equals etcd's (keys, values, mod revisions);
//   * its event stream replays to it: applying every event (added, updated,
//     removed, the differences of a resync included) to an empty map gives
//     exactly the cache's final state;
//   * events never go back in revision.
#include <map>
#include <mutex>

#include "etcd/recipes/path_children_cache.h"
#include "workload.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;
using Cache = etcd::recipes::PathChildrenCache;
using CacheEvent = Cache::Event;

class CacheWorkload : public Workload {
 public:
  std::string name() const override { return "cache"; }

  void setup(Context& ctx) override {
    clear_prefix(ctx, "/chaos/cache/");
  }

  void start(Context& ctx) override {
    History& h = *ctx.history;
    cache_.emplace(ctx.clients[1], kPath);
    sub_ = cache_->on_event([this, &h](const CacheEvent& e) {
      std::lock_guard lk(mu_);
      ++counts_["events"];
      if (e.revision < last_revision_) {
        found_.push_back({"cache",
                          "event at revision " + std::to_string(e.revision) + " after revision " +
                              std::to_string(last_revision_),
                          h.add("cache.listener", "info", "event", e.name)});
      }
      last_revision_ = std::max(last_revision_, e.revision);
      switch (e.type) {
        case CacheEvent::Type::kAdded:
        case CacheEvent::Type::kUpdated:
          replay_[e.name] = {*e.current->value, e.current->mod_revision};
          break;
        case CacheEvent::Type::kRemoved:
          replay_.erase(e.name);
          break;
        case CacheEvent::Type::kReset:
          ++counts_["resyncs"];
          h.add("cache.listener", "info", "reset", e.cause.to_string());
          break;
        default:
          break;
      }
    });
    cache_->start();
    threads_.spawn([this, &ctx](std::stop_token stop) { writer(ctx, stop); });
  }

  void stop() override {
    threads_.stop();
  }

  void settle(Context& ctx) override {
    // A last write in the path: once the cache has it, it has everything
    // before it.
    auto last = ctx.admin->put(std::string(kPath) + "/end", "end").timeout(20s).wait();
    if (!last.ok()) return;
    auto r = ctx.admin->get(std::string(kPath) + "/", etcd::GetOptions{.prefix = true}).timeout(20s).wait();
    if (!r.ok()) return;
    etcd_state_.clear();
    for (const auto& kv : r->kvs) etcd_state_[kv.key.substr(std::string(kPath).size() + 1)] = {kv.value, kv.mod_revision};
    etcd_revision_ = last->header.revision;
    const auto until = Clock::now() + 30s;
    while (Clock::now() < until && cache_->revision() < etcd_revision_) std::this_thread::sleep_for(20ms);
  }

  std::vector<Violation> check(Context& ctx) override {
    History& h = *ctx.history;
    std::vector<Violation> out;
    const auto snap = cache_->snapshot();
    std::map<std::string, std::pair<std::string, int64_t>> cached;
    for (const auto& n : snap.nodes) cached[n.name] = {*n.value, n.mod_revision};
    sub_.reset();
    cache_->close();
    std::lock_guard lk(mu_);
    out.insert(out.end(), found_.begin(), found_.end());
    if (snap.revision < etcd_revision_) {
      out.push_back({"cache",
                     "the cache stayed at revision " + std::to_string(snap.revision) + ", etcd is at " +
                         std::to_string(etcd_revision_) + " (its last write, 30 s after the faults)",
                     -1});
    } else if (cached != etcd_state_) {
      out.push_back({"cache", "the cache's final state (" + std::to_string(cached.size()) +
                                  " children) differs from etcd's (" + std::to_string(etcd_state_.size()) + ")",
                     h.add("cache.check", "info", "compare", describe(cached) + " vs etcd " + describe(etcd_state_))});
    }
    if (replay_ != cached) {
      out.push_back({"cache", "replaying the cache's events gives " + std::to_string(replay_.size()) +
                                  " children, not its final state (" + std::to_string(cached.size()) + ")",
                     h.add("cache.check", "info", "replay", describe(replay_) + " vs cache " + describe(cached))});
    }
    return out;
  }

  std::map<std::string, int64_t> counts() const override {
    std::lock_guard lk(mu_);
    return counts_;
  }

 private:
  static constexpr const char* kPath = "/chaos/cache/dir";
  using State = std::map<std::string, std::pair<std::string, int64_t>>;

  static std::string describe(const State& s) {
    std::string out = "{";
    for (const auto& [k, v] : s) out += " " + k + "=" + v.first + "@" + std::to_string(v.second);
    return out + " }";
  }

  void writer(Context& ctx, std::stop_token stop) {
    std::mt19937_64 rng(ctx.seed * 4241);
    etcd::Client client = ctx.clients[2];
    History& h = *ctx.history;
    for (int n = 0; !stop.stop_requested(); ++n) {
      const std::string key = std::string(kPath) + "/k" + std::to_string(std::uniform_int_distribution<int>(0, 9)(rng));
      const bool del = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
      bool ok;
      if (del) {
        ok = client.del(key).timeout(3s).wait().ok();
      } else {
        ok = client.put(key, std::to_string(n)).timeout(3s).wait().ok();
      }
      std::lock_guard lk(mu_);
      ++counts_[ok ? "writes-ok" : "writes-unknown"];
      if (!ok) h.add("cache.writer", "info", del ? "delete" : "put", key + " unknown");
      if (n % 8 == 7) std::this_thread::sleep_for(30ms);
    }
  }

  std::optional<Cache> cache_;
  etcd::Subscription sub_;
  mutable std::mutex mu_;
  State replay_;
  State etcd_state_;
  int64_t etcd_revision_ = 0;
  int64_t last_revision_ = 0;
  std::map<std::string, int64_t> counts_;
  std::vector<Violation> found_;
  Threads threads_;  // last: joined first
};

}  // namespace

std::unique_ptr<Workload> make_cache_workload() { return std::make_unique<CacheWorkload>(); }

}  // namespace chaos
