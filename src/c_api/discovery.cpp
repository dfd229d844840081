// The C API's service discovery: a ServiceDiscovery per handle, and
// providers made by it (include/etcd/recipes/service_discovery.h).
#include <cstdlib>
#include <set>

#include "c_api_internal.h"
#include "etcd/recipes/service_discovery.h"

namespace r = etcd::recipes;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::ok;
using etcdr_impl::with_timeout;

struct etcdr_discovery {
  std::shared_ptr<r::ServiceDiscovery> discovery;
  etcdr_recipe recipe;
};

struct etcdr_provider {
  std::shared_ptr<r::ServiceProvider> provider;
  etcdr_recipe recipe;
};

namespace {

const char* or_empty(const char* s) { return s == nullptr ? "" : s; }

// The C++ instance of a caller's etcdr_instance (read through its `size`).
etcd::Status to_instance(const etcdr_instance* in, r::ServiceInstance& out) {
  if (in == nullptr) return etcd::InvalidArgument("instance is NULL");
  etcdr_instance i;
  if (auto st = etcdr_impl::read_options(in, i); !st.ok()) return st;
  if (i.port < 0 || i.port > 65535 || i.ssl_port < 0 || i.ssl_port > 65535) {
    return etcd::InvalidArgument("port and ssl_port must be from 0 (none) to 65535");
  }
  out.name = or_empty(i.name);
  out.id = or_empty(i.id);
  out.address = or_empty(i.address);
  if (i.port != 0) out.port = static_cast<uint16_t>(i.port);
  if (i.ssl_port != 0) out.ssl_port = static_cast<uint16_t>(i.ssl_port);
  out.payload = or_empty(i.payload);
  out.registration_time_ms = i.registration_time_ms;
  out.enabled = i.disabled == 0;
  return r::validate_instance(out);
}

// One malloc'd block: the struct, then its strings (etcdr_instance_free is free()).
etcdr_instance* copy_out(const r::ServiceInstance& in) {
  const std::string* strings[] = {&in.name, &in.id, &in.address, &in.payload};
  size_t total = sizeof(etcdr_instance);
  for (const auto* s : strings) total += s->size() + 1;
  auto* out = static_cast<etcdr_instance*>(std::malloc(total));
  if (out == nullptr) throw std::bad_alloc();
  std::memset(out, 0, sizeof(etcdr_instance));
  out->size = sizeof(etcdr_instance);
  char* next = reinterpret_cast<char*>(out + 1);
  const char* copies[4];
  for (int k = 0; k < 4; ++k) {
    std::memcpy(next, strings[k]->c_str(), strings[k]->size() + 1);
    copies[k] = next;
    next += strings[k]->size() + 1;
  }
  out->name = copies[0];
  out->id = copies[1];
  out->address = copies[2];
  out->payload = in.payload.empty() ? nullptr : copies[3];
  out->port = in.port ? *in.port : 0;
  out->ssl_port = in.ssl_port ? *in.ssl_port : 0;
  out->registration_time_ms = in.registration_time_ms;
  out->disabled = in.enabled ? 0 : 1;
  return out;
}

}  // namespace

extern "C" {

void etcdr_discovery_options_init(etcdr_discovery_options* options, size_t size) {
  etcdr_impl::init_options(options, size);
}
void etcdr_instance_init(etcdr_instance* instance, size_t size) { etcdr_impl::init_options(instance, size); }
void etcdr_provider_options_init(etcdr_provider_options* options, size_t size) {
  etcdr_impl::init_options(options, size);
}

void etcdr_instance_free(etcdr_instance* instance) { std::free(instance); }

void etcdr_instances_free(etcdr_instance** instances, size_t count) {
  if (instances == nullptr) return;
  for (size_t i = 0; i < count; ++i) std::free(instances[i]);
  std::free(instances);
}

etcdr_code etcdr_discovery_create(etcdr_client* client, const etcdr_discovery_options* options, etcdr_discovery** out,
                                  etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr) return invalid(err, "etcdr_discovery_create: client and out are required");
    etcdr_discovery_options o;
    if (auto st = etcdr_impl::read_options(options, o); !st.ok()) return fail(err, st);
    if (o.ttl_s < 0) return invalid(err, "etcdr_discovery_create: ttl_s must not be negative");
    r::ServiceDiscoveryOptions ro;
    if (o.base_path != nullptr) ro.base_path = o.base_path;
    if (o.client_id != nullptr) ro.recipe.client_id = o.client_id;
    if (o.ttl_s != 0) ro.recipe.session_ttl = std::chrono::seconds(o.ttl_s);
    auto handle = std::make_unique<etcdr_discovery>();
    handle->discovery = std::make_shared<r::ServiceDiscovery>(client->client, std::move(ro));
    handle->discovery->start();  // checks the input: a bad base path fails here
    handle->recipe.bind(*handle->discovery);
    *out = handle.release();
    return ok(err);
  });
}

void etcdr_discovery_destroy(etcdr_discovery* discovery) {
  if (discovery == nullptr) return;
  discovery->recipe.unbind();
  try {
    discovery->discovery->close();
  } catch (...) {
    // Nothing a destroy could act on.
  }
  delete discovery;
}

etcdr_code etcdr_discovery_register(etcdr_discovery* discovery, const etcdr_instance* instance, int64_t timeout_ms,
                                    etcdr_error* err) {
  return guarded(err, [&] {
    if (discovery == nullptr) return invalid(err, "etcdr_discovery_register: discovery is NULL");
    r::ServiceInstance i;
    if (auto st = to_instance(instance, i); !st.ok()) return fail(err, st);
    auto done = with_timeout(discovery->discovery->register_instance(std::move(i)), timeout_ms).wait();
    return done.ok() ? ok(err) : fail(err, done.status());
  });
}

etcdr_code etcdr_discovery_update(etcdr_discovery* discovery, const etcdr_instance* instance, int64_t timeout_ms,
                                  etcdr_error* err) {
  return guarded(err, [&] {
    if (discovery == nullptr) return invalid(err, "etcdr_discovery_update: discovery is NULL");
    r::ServiceInstance i;
    if (auto st = to_instance(instance, i); !st.ok()) return fail(err, st);
    auto done = with_timeout(discovery->discovery->update(std::move(i)), timeout_ms).wait();
    return done.ok() ? ok(err) : fail(err, done.status());
  });
}

etcdr_code etcdr_discovery_unregister(etcdr_discovery* discovery, const char* service, const char* id,
                                      int64_t timeout_ms, int* was_ours, etcdr_error* err) {
  return guarded(err, [&] {
    if (was_ours != nullptr) *was_ours = 0;
    if (discovery == nullptr || service == nullptr || id == nullptr) {
      return invalid(err, "etcdr_discovery_unregister: discovery, service and id are required");
    }
    auto done = with_timeout(discovery->discovery->unregister(service, id), timeout_ms).wait();
    if (!done.ok()) return fail(err, done.status());
    if (was_ours != nullptr) *was_ours = *done ? 1 : 0;
    return ok(err);
  });
}

etcdr_code etcdr_discovery_query(etcdr_discovery* discovery, const char* service, int64_t timeout_ms,
                                 etcdr_instance*** instances, size_t* count, etcdr_error* err) {
  return guarded(err, [&] {
    if (instances != nullptr) *instances = nullptr;
    if (count != nullptr) *count = 0;
    if (discovery == nullptr || service == nullptr || instances == nullptr || count == nullptr) {
      return invalid(err, "etcdr_discovery_query: discovery, service, instances and count are required");
    }
    auto found = with_timeout(discovery->discovery->query_instances(service), timeout_ms).wait();
    if (!found.ok()) return fail(err, found.status());
    if (found->empty()) return ok(err);
    auto* array = static_cast<etcdr_instance**>(std::calloc(found->size(), sizeof(etcdr_instance*)));
    if (array == nullptr) throw std::bad_alloc();
    size_t made = 0;
    try {
      for (; made < found->size(); ++made) array[made] = copy_out((*found)[made]);
    } catch (...) {
      etcdr_instances_free(array, made);
      throw;
    }
    *instances = array;
    *count = made;
    return ok(err);
  });
}

etcdr_code etcdr_discovery_query_names(etcdr_discovery* discovery, int64_t timeout_ms, char** names, size_t* count,
                                       etcdr_error* err) {
  return guarded(err, [&] {
    if (names != nullptr) *names = nullptr;
    if (count != nullptr) *count = 0;
    if (discovery == nullptr || names == nullptr || count == nullptr) {
      return invalid(err, "etcdr_discovery_query_names: discovery, names and count are required");
    }
    auto found = with_timeout(discovery->discovery->query_names(), timeout_ms).wait();
    if (!found.ok()) return fail(err, found.status());
    if (found->empty()) return ok(err);
    std::string packed;
    for (const auto& n : *found) packed.append(n).push_back('\0');
    packed.pop_back();  // copy_out adds the last NUL
    *names = etcdr_impl::copy_out(packed);
    *count = found->size();
    return ok(err);
  });
}

etcdr_code etcdr_provider_create(etcdr_discovery* discovery, const char* service, const etcdr_provider_options* options,
                                 etcdr_provider** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (discovery == nullptr || out == nullptr || etcdr_impl::bad_name(service)) {
      return invalid(err, "etcdr_provider_create: discovery, a service name and out are required");
    }
    etcdr_provider_options o;
    if (auto st = etcdr_impl::read_options(options, o); !st.ok()) return fail(err, st);
    r::ServiceProviderOptions po;
    switch (o.strategy) {
      case ETCDR_STRATEGY_ROUND_ROBIN:
        po.strategy = r::round_robin_strategy();
        break;
      case ETCDR_STRATEGY_RANDOM:
        po.strategy = r::random_strategy();
        break;
      case ETCDR_STRATEGY_STICKY:
        po.strategy = r::sticky_strategy();
        break;
      default:
        return invalid(err, "etcdr_provider_create: strategy is not one of ETCDR_STRATEGY_*");
    }
    if (o.errors_before_ejection != 0) po.errors_before_ejection = o.errors_before_ejection;
    if (o.ejection_time_ms != 0) po.ejection_time = std::chrono::milliseconds(o.ejection_time_ms);
    auto provider = discovery->discovery->provider(service, std::move(po));
    // Bad options or a bad name: the provider reports them on every
    // operation; here they are the create's error.
    if (auto st = provider->wait_initialized().timeout(std::chrono::milliseconds(0)).wait().status();
        st.is(etcd::Errc::kBadArgument)) {
      provider->close();
      return fail(err, st);
    }
    auto handle = std::make_unique<etcdr_provider>();
    handle->provider = std::move(provider);
    handle->recipe.bind(*handle->provider);
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_provider_pick(etcdr_provider* provider, int64_t timeout_ms, etcdr_instance** instance,
                               etcdr_error* err) {
  return guarded(err, [&] {
    if (instance != nullptr) *instance = nullptr;
    if (provider == nullptr || instance == nullptr) {
      return invalid(err, "etcdr_provider_pick: provider and instance are required");
    }
    auto picked = with_timeout(provider->provider->get_instance(), timeout_ms).wait();
    if (!picked.ok()) return fail(err, picked.status());
    *instance = copy_out(*picked);
    return ok(err);
  });
}

etcdr_code etcdr_provider_note_error(etcdr_provider* provider, const char* id, etcdr_error* err) {
  return guarded(err, [&] {
    if (provider == nullptr || etcdr_impl::bad_name(id)) {
      return invalid(err, "etcdr_provider_note_error: provider and an instance id are required");
    }
    r::ServiceInstance i;
    i.id = id;
    provider->provider->note_error(i);
    return ok(err);
  });
}

void etcdr_provider_destroy(etcdr_provider* provider) {
  if (provider == nullptr) return;
  provider->recipe.unbind();
  try {
    provider->provider->close();
  } catch (...) {
    // Nothing a destroy could act on.
  }
  delete provider;
}

etcdr_recipe* etcdr_discovery_recipe(etcdr_discovery* discovery) {
  return discovery != nullptr ? &discovery->recipe : nullptr;
}

etcdr_recipe* etcdr_provider_recipe(etcdr_provider* provider) {
  return provider != nullptr ? &provider->recipe : nullptr;
}

}  // extern "C"
