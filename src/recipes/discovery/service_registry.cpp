// ServiceRegistry: the design is in include/etcd/recipes/service_registry.h.
//
// A registry is a facade over transient keys: each registration is a
// TypedTransientKeyValue<ServiceInstance>, which already owns a presence
// lease, creates only where the key is absent, writes guarded by the key's
// create revision and heals only where free. The registry keeps them by key,
// forwards their losses, restorations and errors, and closes them with
// itself.
#include "etcd/recipes/service_registry.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "../core/calls.h"
#include "../core/own_presence.h"
#include "../core/recipe_core.h"
#include "../core/wall_clock.h"
#include "client/listener_set.h"
#include "etcd/recipes/transient.h"

namespace etcd::recipes {
namespace detail {

namespace {

using RegisteredKey = TypedTransientKeyValue<ServiceInstance, ServiceInstanceCodec>;

}  // namespace

struct RegistryEntry {
  std::shared_ptr<RegisteredKey> key;
  bool lost = false;
  std::vector<Subscription> subscriptions;
};

// What close() needs, apart from the core: the close action owns it, and it
// owns nothing that leads back to the core.
struct RegistryEntries {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<RegistryEntry>> by_key;
  bool closed = false;

  void close_all() {
    std::map<std::string, std::shared_ptr<RegistryEntry>> all;
    {
      std::lock_guard lock(mu);
      closed = true;
      all.swap(by_key);
    }
    for (auto& [key, reg] : all) {
      reg->subscriptions.clear();
      reg->key->close();  // deletes the key if it is ours and revokes its lease, without waiting
    }
  }
};

class RegistryState : public std::enable_shared_from_this<RegistryState> {
 public:
  RegistryState(Client client, ServiceRegistryOptions options)
      : core(OwnPresence::make_core(std::move(client), "ServiceRegistry", options.base_path, options.recipe, Status())),
        child_options(std::move(options.recipe)),
        registrations(std::make_shared<RegistryEntries>()) {
    child_options.session = nullptr;
    child_options.session_factory = nullptr;
  }

  std::string key_of(const ServiceInstance& i) const { return core->name() + "/" + i.name + "/" + i.id; }

  Call<void> register_instance(ServiceInstance instance) {
    auto arg = std::make_shared<ServiceInstance>(std::move(instance));
    return core->call<void>([self = shared_from_this(), arg](CallOptions options, Callback<void> done) {
      auto link = self->core->link();
      if (Status st = self->core->usable(link); !st.ok()) return done(st);
      if (Status st = validate_instance(*arg); !st.ok()) return done(self->core->named(st));
      if (arg->registration_time_ms == 0) arg->registration_time_ms = wall_clock_ms();
      const std::string key = self->key_of(*arg);
      auto reg = std::make_shared<RegistryEntry>();
      reg->key = std::make_shared<RegisteredKey>(link->client(), key, *arg, self->child_options);
      self->follow(reg);  // before anyone else can see it
      {
        std::unique_lock lock(self->registrations->mu);
        Status refused;
        if (self->registrations->closed) {
          refused = self->core->closed_status();
        } else if (self->registrations->by_key.contains(key)) {
          refused = self->core->named(
              Status(StatusCode::kAlreadyExists, key + " is registered by this registry already (use update())"));
        } else {
          self->registrations->by_key.emplace(key, reg);
        }
        if (!refused.ok()) {
          lock.unlock();
          reg->subscriptions.clear();
          return done(refused);
        }
      }
      CallAccess::start_inherited(reg->key->create(), options, [self, key, reg, done](Result<void> r) {
        if (r.ok()) return done(r);
        // Nothing stays behind a failed registration: closing the key
        // deletes it if the creation got through after all.
        self->forget(key, reg);
        done(std::move(r).status());
      });
    });
  }

  Call<void> update(ServiceInstance instance) {
    auto arg = std::make_shared<ServiceInstance>(std::move(instance));
    return core->call<void>([self = shared_from_this(), arg](CallOptions options, Callback<void> done) {
      if (Status st = self->core->usable(); !st.ok()) return done(st);
      if (Status st = validate_instance(*arg); !st.ok()) return done(self->core->named(st));
      auto reg = self->find(self->key_of(*arg));
      if (!reg) {
        return done(self->core->named(Status(
            StatusCode::kNotFound, "update: " + arg->name + "/" + arg->id + " is not registered by this registry")));
      }
      if (arg->registration_time_ms == 0) arg->registration_time_ms = reg->key->value().registration_time_ms;
      CallAccess::start_inherited(reg->key->set_value(*arg), options, std::move(done));
    });
  }

  Call<bool> unregister(std::string service, std::string id) {
    return core->call<bool>([self = shared_from_this(), service = std::move(service), id = std::move(id)](
                                CallOptions options, Callback<bool> done) {
      if (Status st = self->core->usable(); !st.ok()) return done(st);
      if (Status st = validate_segment("service name", service); !st.ok()) return done(self->core->named(st));
      if (Status st = validate_segment("instance id", id); !st.ok()) return done(self->core->named(st));
      const std::string key = self->core->name() + "/" + service + "/" + id;
      std::shared_ptr<RegistryEntry> reg;
      {
        std::lock_guard lock(self->registrations->mu);
        auto it = self->registrations->by_key.find(key);
        if (it == self->registrations->by_key.end()) return done(false);
        reg = std::move(it->second);
        self->registrations->by_key.erase(it);
      }
      reg->subscriptions.clear();
      self->update_state();
      CallAccess::start_inherited(reg->key->release(), options, std::move(done));
    });
  }

  std::vector<ServiceInstance> registered() const {
    std::vector<ServiceInstance> out;
    {
      std::lock_guard lock(registrations->mu);
      for (const auto& [key, reg] : registrations->by_key) out.push_back(reg->key->value());
    }
    std::sort(out.begin(), out.end(), [](const ServiceInstance& a, const ServiceInstance& b) {
      return std::tie(a.name, a.id) < std::tie(b.name, b.id);
    });
    return out;
  }

  std::shared_ptr<RecipeCore> core;
  RecipeOptions child_options;
  std::shared_ptr<RegistryEntries> registrations;
  ListenerSet<const ServiceInstance&, const Status&> lost;
  ListenerSet<const ServiceInstance&> restored;

 private:
  std::shared_ptr<RegistryEntry> find(const std::string& key) const {
    std::lock_guard lock(registrations->mu);
    auto it = registrations->by_key.find(key);
    return it == registrations->by_key.end() ? nullptr : it->second;
  }

  void forget(const std::string& key, const std::shared_ptr<RegistryEntry>& reg) {
    {
      std::lock_guard lock(registrations->mu);
      auto it = registrations->by_key.find(key);
      if (it != registrations->by_key.end() && it->second == reg) registrations->by_key.erase(it);
    }
    reg->subscriptions.clear();
    reg->key->close();
    update_state();
  }

  // The key's listeners run on its client's executor: the registry's run
  // there too, in the key's order.
  void follow(const std::shared_ptr<RegistryEntry>& reg) {
    std::weak_ptr<RegistryState> weak = weak_from_this();
    std::weak_ptr<RegistryEntry> weak_reg = reg;
    reg->subscriptions.push_back(reg->key->on_lost([weak, weak_reg](const Status& why) {
      auto self = weak.lock();
      auto r = weak_reg.lock();
      if (!self || !r) return;
      {
        std::lock_guard lock(self->registrations->mu);
        r->lost = true;
      }
      self->core->set_state(ConnectionState::kLost);
      self->lost.call(self->core->throw_sink(), r->key->value(), why);
    }));
    reg->subscriptions.push_back(reg->key->on_restored([weak, weak_reg] {
      auto self = weak.lock();
      auto r = weak_reg.lock();
      if (!self || !r) return;
      {
        std::lock_guard lock(self->registrations->mu);
        r->lost = false;
      }
      self->update_state();
      self->restored.call(self->core->throw_sink(), r->key->value());
    }));
    reg->subscriptions.push_back(reg->key->on_error([weak](const Status& why) {
      if (auto self = weak.lock()) self->core->record_error(why);
    }));
  }

  // kLost while any registration is lost; kReconnected once none is.
  void update_state() {
    bool any_lost = false;
    {
      std::lock_guard lock(registrations->mu);
      for (const auto& [key, reg] : registrations->by_key) any_lost = any_lost || reg->lost;
    }
    if (!any_lost && core->state() == ConnectionState::kLost) core->set_state(ConnectionState::kReconnected);
  }
};

}  // namespace detail

ServiceRegistry::ServiceRegistry(Client client) : ServiceRegistry(std::move(client), ServiceRegistryOptions()) {}

ServiceRegistry::ServiceRegistry(Client client, ServiceRegistryOptions options)
    : state_(std::make_shared<detail::RegistryState>(std::move(client), std::move(options))) {
  state_->core->set_close_action([registrations = state_->registrations] { registrations->close_all(); });
  bind_recipe(state_->core);
}

std::string ServiceRegistry::key_of(const ServiceInstance& instance) const { return state_->key_of(instance); }

Call<void> ServiceRegistry::register_instance(ServiceInstance instance) {
  return state_->register_instance(std::move(instance));
}

Call<void> ServiceRegistry::update(ServiceInstance instance) { return state_->update(std::move(instance)); }

Call<bool> ServiceRegistry::unregister(std::string service, std::string id) {
  return state_->unregister(std::move(service), std::move(id));
}

std::vector<ServiceInstance> ServiceRegistry::registered() const { return state_->registered(); }

Subscription ServiceRegistry::on_lost(std::function<void(const ServiceInstance&, const Status&)> listener) {
  return state_->lost.add(std::move(listener));
}

Subscription ServiceRegistry::on_restored(std::function<void(const ServiceInstance&)> listener) {
  return state_->restored.add(std::move(listener));
}

}  // namespace etcd::recipes
