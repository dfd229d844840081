// Service discovery: a registry registers and unregisters instances of one
// service (fresh ids), while a ServiceProvider on another client picks
// instances as fast as it can.
//
// Checker: no pick of an instance the provider's cache saw removed — a
// pick() that starts after the cache reported an instance's removal (and
// before it reported it added again: a registration heals after a loss)
// never returns that instance.
#include <map>
#include <mutex>
#include <set>

#include "etcd/recipes/service_provider.h"
#include "etcd/recipes/service_registry.h"
#include "workload.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;

constexpr const char* kBase = "/chaos/services";
constexpr const char* kService = "api";

class DiscoveryWorkload : public Workload {
 public:
  std::string name() const override { return "discovery"; }

  void setup(Context& ctx) override {
    auto r = ctx.admin->del(std::string(kBase) + "/", etcd::DeleteOptions{.prefix = true}).timeout(10s).wait();
    if (!r.ok()) throw etcd::Error(std::move(r).status());
  }

  void start(Context& ctx) override {
    History& h = *ctx.history;
    etcd::recipes::ServiceProviderOptions po;
    po.base_path = kBase;
    provider_.emplace(ctx.clients[0], kService, po);
    sub_ = provider_->cache().on_event([this, &h](const etcd::recipes::ServiceCache::Event& e) {
      using T = etcd::recipes::ServiceCache::Event::Type;
      if (e.type != T::kAdded && e.type != T::kRemoved) return;
      const std::string id = e.name;
      h.add("discovery.cache", "info", e.type == T::kAdded ? "added" : "removed", id);
      std::lock_guard lk(mu_);
      auto& s = seen_[id];
      s.removed = e.type == T::kRemoved;
      s.changed = ++events_;
      ++counts_[e.type == T::kAdded ? "cache-added" : "cache-removed"];
    });
    provider_->start();
    threads_.spawn([this, &ctx](std::stop_token stop) { registrar(ctx, stop); });
    threads_.spawn([this, &ctx](std::stop_token stop) { picker(ctx, stop); });
  }

  void stop() override {
    threads_.stop();
    sub_.reset();
    if (provider_) provider_->close();
  }

  std::vector<Violation> check(Context&) override {
    std::lock_guard lk(mu_);
    return found_;
  }

  std::map<std::string, int64_t> counts() const override {
    std::lock_guard lk(mu_);
    return counts_;
  }

 private:
  struct Seen {
    bool removed = false;
    int64_t changed = 0;  // events_ when the cache last reported it
  };

  void registrar(Context& ctx, std::stop_token stop) {
    std::mt19937_64 rng(ctx.seed * 7411);
    History& h = *ctx.history;
    etcd::recipes::ServiceRegistryOptions ro;
    ro.base_path = kBase;
    ro.recipe.session_ttl = 2s;
    etcd::recipes::ServiceRegistry registry(ctx.clients[2], ro);
    std::vector<std::string> live;
    for (int n = 0; !stop.stop_requested(); ++n) {
      if (live.size() < 2 || (live.size() < 5 && std::uniform_int_distribution<int>(0, 1)(rng) == 0)) {
        etcd::recipes::ServiceInstance inst;
        inst.name = kService;
        inst.id = "i" + std::to_string(n);
        inst.address = "10.0.0." + std::to_string(n % 250 + 1);
        inst.port = 8080;
        auto r = registry.register_instance(inst).timeout(3s).wait();
        h.add("discovery.registry", r.ok() ? "ok" : "fail", "register", inst.id + (r.ok() ? "" : " " + r.status().to_string()));
        if (r.ok()) live.push_back(inst.id);
        std::lock_guard lk(mu_);
        ++counts_[r.ok() ? "registered" : "register-failed"];
      } else {
        const size_t i = std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
        const std::string id = live[i];
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        auto r = registry.unregister(kService, id).timeout(3s).wait();
        h.add("discovery.registry", r.ok() ? "ok" : "fail", "unregister", id + (r.ok() ? "" : " " + r.status().to_string()));
        std::lock_guard lk(mu_);
        ++counts_[r.ok() ? "unregistered" : "unregister-failed"];
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 120)(rng)));
    }
    registry.close();
  }

  void picker(Context& ctx, std::stop_token stop) {
    History& h = *ctx.history;
    while (!stop.stop_requested()) {
      int64_t before;
      {
        std::lock_guard lk(mu_);
        before = events_;
      }
      auto pick = provider_->pick();
      std::unique_lock lk(mu_);
      ++counts_[pick ? "picks" : "picks-none"];
      if (!pick) {
        lk.unlock();
        std::this_thread::sleep_for(2ms);
        continue;
      }
      // Reported removed before this pick started, and not added since.
      auto it = seen_.find(pick->id);
      if (it != seen_.end() && it->second.removed && it->second.changed <= before) {
        found_.push_back({"discovery",
                          "pick() returned " + pick->id + " after the provider's cache had reported it removed",
                          h.add("discovery.picker", "ok", "pick", pick->id)});
      }
      lk.unlock();
      std::this_thread::sleep_for(2ms);
    }
  }

  std::optional<etcd::recipes::ServiceProvider> provider_;
  etcd::Subscription sub_;
  mutable std::mutex mu_;
  std::map<std::string, Seen> seen_;
  int64_t events_ = 0;
  std::map<std::string, int64_t> counts_;
  std::vector<Violation> found_;
  Threads threads_;  // last: joined first
};

}  // namespace

std::unique_ptr<Workload> make_discovery_workload() { return std::make_unique<DiscoveryWorkload>(); }

}  // namespace chaos
