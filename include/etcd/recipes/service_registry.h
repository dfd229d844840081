// ServiceRegistry: registers this process's service instances
// (service_instance.h) for service discovery, each present while the
// process lives.
//
//   etcd::recipes::ServiceRegistry registry(client);           // base path "/services"
//   registry.register_instance({.name = "api", .id = "api-1", .address = "10.0.0.7", .port = 8080})
//       .wait().value();                                       // kAlreadyExists: the id is someone else's
//   registry.update(changed).wait().value();                   // same name and id, new address/payload/enabled
//   bool was_ours = registry.unregister("api", "api-1").wait().value();
//   registry.close();                                          // or the destructor: every registration goes at once
//
// Each registration is a transient key (transient.h) at BASE/NAME/ID whose
// value is the instance's JSON: created only where the key is absent (an id
// that another process registered, or that anyone wrote, is refused with
// StatusCode::kAlreadyExists and left alone), under the client's shared
// presence lease with TTL RecipeOptions::session_ttl — how long a
// registration outlives a process that died without unregistering. update() writes guarded by the
// key's create revision (only while it is ours).
//
// After a lease loss (the process was cut off from etcd past the TTL, or
// the lease was revoked) the registration heals: it is re-created with its
// current instance as soon as the link and a new lease are back — never
// over a key that someone else created meanwhile (then it keeps trying,
// at most each second, until that key is gone). on_lost / on_restored
// listeners hear of both, with the instance; state() is kLost while any
// registration is lost, kReconnected once all are back.
//
// One lease for the process, not one per registration: every
// registration (and transient key) of one Client with the same TTL lives on
// one presence lease, so thousands of registrations cost one keep-alive per
// TTL/3. Each still heals, is lost and is removed on its own: after a
// lease loss each is re-created where it is free, and one whose key was
// taken keeps trying alone. RecipeOptions::own_presence_lease = true gives
// each registration a lease of its own (a keep-alive each).
//
// Costs: register: one Txn (plus a lease grant for the client's first);
// update: one Txn; unregister: one Txn (and a revoke for the last user of
// the lease). The constructor does no I/O; lifecycle as
// every recipe (recipe.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"
#include "etcd/recipes/service_instance.h"
#include "etcd/status.h"

namespace etcd::recipes {

// The base path every discovery object of a deployment agrees on.
inline constexpr const char* kDefaultServicesPath = "/services";

struct ServiceRegistryOptions {
  // Instances live at base_path/NAME/ID.
  std::string base_path = kDefaultServicesPath;
  RecipeOptions recipe{};
};

namespace detail {
class RegistryState;
}

class ServiceRegistry : public RecipeHandle {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle).
  explicit ServiceRegistry(Client client);
  ServiceRegistry(Client client, ServiceRegistryOptions options);
  ServiceRegistry(ServiceRegistry&&) noexcept = default;
  ServiceRegistry& operator=(ServiceRegistry&&) noexcept = default;

  const std::string& base_path() const { return name(); }
  // BASE/NAME/ID.
  std::string key_of(const ServiceInstance& instance) const;

  // Registers `instance` (see the top of this file); completes once its key
  // is ours. registration_time_ms 0 becomes now. An invalid instance is
  // Errc::kBadArgument and an instance this registry has already
  // registered StatusCode::kAlreadyExists (use update()), before any write; a key
  // that someone else has is StatusCode::kAlreadyExists, nothing written. A
  // registration that fails or times out leaves nothing behind.
  Call<void> register_instance(ServiceInstance instance);
  // Replaces a registered instance (same name and id) with `instance`:
  // guarded, only while the key is ours (Errc::kHoldLost while it is lost:
  // the new instance is kept all the same and the heal writes it).
  // Errc::kNotFound if this registry has no such registration.
  Call<void> update(ServiceInstance instance);
  // Removes the registration: deletes the key if it is still ours and
  // revokes its lease. True if the key was ours; false if it was not (or
  // this registry had no such registration).
  [[nodiscard]] Call<bool> unregister(std::string service, std::string id);

  // The instances registered here (current values), sorted by name and id.
  std::vector<ServiceInstance> registered() const;

  // A registration's key stopped being ours; it heals (see above).
  Subscription on_lost(std::function<void(const ServiceInstance&, const Status&)> listener);
  // A registration's key was re-created after a loss.
  Subscription on_restored(std::function<void(const ServiceInstance&)> listener);

 private:
  std::shared_ptr<detail::RegistryState> state_;
};

}  // namespace etcd::recipes
