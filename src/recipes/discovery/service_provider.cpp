// ServiceProvider: the design is in include/etcd/recipes/service_provider.h.
//
// The candidates are a vector rebuilt only when something they depend on
// changed: the cache's revision, an ejection, a rejoin time passing. A
// pick() in between is a lock, two comparisons, the strategy and a copy.
#include "etcd/recipes/service_provider.h"

#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <random>

#include "../core/calls.h"
#include "../core/recipe_core.h"

namespace etcd::recipes {

namespace {

using SteadyClock = std::chrono::steady_clock;

std::size_t random_index(std::size_t n) {
  thread_local std::minstd_rand engine{std::random_device{}()};
  return std::uniform_int_distribution<std::size_t>(0, n - 1)(engine);
}

class RandomStrategy final : public ProviderStrategy {
 public:
  std::optional<std::size_t> pick(std::span<const ServiceInstance> candidates) override {
    return random_index(candidates.size());
  }
};

class RoundRobinStrategy final : public ProviderStrategy {
 public:
  std::optional<std::size_t> pick(std::span<const ServiceInstance> candidates) override {
    return next_.fetch_add(1, std::memory_order_relaxed) % candidates.size();
  }

 private:
  std::atomic<std::size_t> next_{0};
};

class StickyStrategy final : public ProviderStrategy {
 public:
  std::optional<std::size_t> pick(std::span<const ServiceInstance> candidates) override {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].id == id_) return i;
    }
    const std::size_t i = random_index(candidates.size());
    id_ = candidates[i].id;
    return i;
  }

 private:
  std::mutex mu_;
  std::string id_;
};

Status check_provider_options(const std::string& service, const ServiceProviderOptions& o) {
  if (Status st = validate_segment("service name", service); !st.ok()) return st;
  if (o.errors_before_ejection < 1) {
    return InvalidArgument("errors_before_ejection must be at least 1 (got " +
                           std::to_string(o.errors_before_ejection) + ")");
  }
  if (o.ejection_time < std::chrono::milliseconds(1)) {
    return InvalidArgument("ejection_time must be at least 1 ms (got " + std::to_string(o.ejection_time.count()) +
                           " ms)");
  }
  return Status();
}

}  // namespace

std::shared_ptr<ProviderStrategy> random_strategy() { return std::make_shared<RandomStrategy>(); }
std::shared_ptr<ProviderStrategy> round_robin_strategy() { return std::make_shared<RoundRobinStrategy>(); }
std::shared_ptr<ProviderStrategy> sticky_strategy() { return std::make_shared<StickyStrategy>(); }

namespace detail {

class ProviderState : public std::enable_shared_from_this<ProviderState> {
 public:
  ProviderState(Client client, std::string service, ServiceProviderOptions options)
      : core(std::make_shared<RecipeCore>(client, "ServiceProvider", options.base_path + "/" + service, options.recipe,
                                          check_provider_options(service, options))),
        cache(std::make_shared<ServiceCache>(
            std::move(client), service,
            ServiceCacheOptions{.base_path = options.base_path,
                                .start_mode = PathChildrenCacheOptions::StartMode::kNormal,
                                .recipe = options.recipe})),
        strategy_(options.strategy ? std::move(options.strategy) : round_robin_strategy()),
        errors_before_ejection_(options.errors_before_ejection),
        ejection_time_(options.ejection_time),
        labels_{{"service", service}} {}

  void install() {
    std::weak_ptr<RecipeCore> weak_core = core;
    core->set_start_action([c = cache] { start_cache(*c); });
    core->set_close_action([c = cache] { c->close(); });
    cache_errors_ = cache->on_error([weak_core](const Status& why) {
      if (auto c = weak_core.lock()) c->record_error(why);
    });
    cache_state_ = cache->on_state_change([weak_core](ConnectionState s) {
      if (auto c = weak_core.lock()) c->set_state(s);
    });
  }

  static void start_cache(ServiceCache& c) {
    try {
      c.start();
    } catch (const Error&) {
      // Closed meanwhile, or the same bad input the provider reports.
    }
  }

  Call<void> wait_initialized() {
    if (Status st = core->usable(); !st.ok()) return core->ready<void>(st);
    start_cache(*cache);
    return cache->wait_initialized();
  }

  std::optional<ServiceInstance> pick() {
    if (core->closed() || !core->input().ok() || !cache->initialized()) return std::nullopt;
    const int64_t revision = cache->revision();
    std::lock_guard lock(mu_);
    refresh_locked(revision);
    if (candidates_.empty()) return std::nullopt;
    const auto i = strategy_->pick(candidates_);
    if (!i || *i >= candidates_.size()) return std::nullopt;
    return candidates_[*i];
  }

  Call<ServiceInstance> get_instance() {
    return core->call<ServiceInstance>(
        [self = shared_from_this()](CallOptions options, Callback<ServiceInstance> done) {
          if (Status st = self->core->usable(); !st.ok()) return done(st);
          start_cache(*self->cache);
          CallAccess::start_inherited(self->cache->wait_initialized(), options, [self, done](Result<void> r) {
            if (!r.ok()) return done(std::move(r).status());
            if (auto picked = self->pick()) return done(std::move(*picked));
            done(self->none_status());
          });
        });
  }

  std::vector<ServiceInstance> all_instances() const { return cache->instances(); }

  std::vector<ServiceInstance> candidates() {
    if (!cache->initialized()) return {};
    const int64_t revision = cache->revision();
    std::lock_guard lock(mu_);
    refresh_locked(revision);
    return candidates_;
  }

  void note_error(const ServiceInstance& instance) {
    const auto now = SteadyClock::now();
    std::lock_guard lock(mu_);
    auto& e = ejections_[instance.id];
    if (e.until > now) return;  // already out: its errors were counted
    if (++e.errors < errors_before_ejection_) return;
    e.errors = 0;
    e.until = now + ejection_time_;
    next_rejoin_ = std::min(next_rejoin_, e.until);
    rebuild_locked(now);
    core->metrics().add("etcd_recipes_provider_ejections_total", labels_, 1);
  }

  std::shared_ptr<RecipeCore> core;
  std::shared_ptr<ServiceCache> cache;

 private:
  struct Ejection {
    int errors = 0;
    SteadyClock::time_point until{};  // left out until then
  };

  void refresh_locked(int64_t revision) {
    bool rebuild = false;
    if (revision != built_revision_) {
      all_ = cache->instances();
      built_revision_ = revision;
      rebuild = true;
    }
    SteadyClock::time_point now{};
    if (next_rejoin_ != SteadyClock::time_point::max()) {
      now = SteadyClock::now();
      if (now >= next_rejoin_) rebuild = true;
    }
    if (rebuild) rebuild_locked(now == SteadyClock::time_point{} ? SteadyClock::now() : now);
  }

  void rebuild_locked(SteadyClock::time_point now) {
    next_rejoin_ = SteadyClock::time_point::max();
    for (auto it = ejections_.begin(); it != ejections_.end();) {
      auto& e = it->second;
      if (e.until != SteadyClock::time_point{} && e.until <= now) {
        it = ejections_.erase(it);  // rejoins with its count reset
        continue;
      }
      if (e.until > now) next_rejoin_ = std::min(next_rejoin_, e.until);
      ++it;
    }
    candidates_.clear();
    for (const auto& i : all_) {
      if (!i.enabled) continue;
      auto e = ejections_.find(i.id);
      if (e != ejections_.end() && e->second.until > now) continue;
      candidates_.push_back(i);
    }
  }

  Status none_status() {
    std::size_t registered = 0, disabled = 0, ejected = 0;
    {
      std::lock_guard lock(mu_);
      const auto now = SteadyClock::now();
      registered = all_.size();
      for (const auto& i : all_) {
        if (!i.enabled) {
          ++disabled;
        } else if (auto e = ejections_.find(i.id); e != ejections_.end() && e->second.until > now) {
          ++ejected;
        }
      }
    }
    return core->named(Status(StatusCode::kNotFound, "no instance to pick (" + std::to_string(registered) +
                                                         " registered, " + std::to_string(ejected) + " ejected, " +
                                                         std::to_string(disabled) + " disabled)"));
  }

  const std::shared_ptr<ProviderStrategy> strategy_;
  const int errors_before_ejection_;
  const SteadyClock::duration ejection_time_;
  const Labels labels_;
  Subscription cache_errors_;
  Subscription cache_state_;

  std::mutex mu_;
  int64_t built_revision_ = -1;
  std::vector<ServiceInstance> all_;
  std::vector<ServiceInstance> candidates_;
  std::map<std::string, Ejection, std::less<>> ejections_;
  SteadyClock::time_point next_rejoin_ = SteadyClock::time_point::max();
};

}  // namespace detail

ServiceProvider::ServiceProvider(Client client, std::string service)
    : ServiceProvider(std::move(client), std::move(service), ServiceProviderOptions()) {}

ServiceProvider::ServiceProvider(Client client, std::string service, ServiceProviderOptions options)
    : state_(std::make_shared<detail::ProviderState>(std::move(client), std::move(service), std::move(options))) {
  state_->install();
  bind_recipe(state_->core);
}

std::string ServiceProvider::service() const { return state_->cache->service(); }
Call<void> ServiceProvider::wait_initialized() { return state_->wait_initialized(); }
std::optional<ServiceInstance> ServiceProvider::pick() { return state_->pick(); }
Call<ServiceInstance> ServiceProvider::get_instance() { return state_->get_instance(); }
std::vector<ServiceInstance> ServiceProvider::all_instances() const { return state_->all_instances(); }
std::vector<ServiceInstance> ServiceProvider::candidates() { return state_->candidates(); }
void ServiceProvider::note_error(const ServiceInstance& instance) { state_->note_error(instance); }
ServiceCache& ServiceProvider::cache() { return *state_->cache; }

}  // namespace etcd::recipes
