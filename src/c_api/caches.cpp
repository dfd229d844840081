// The C API's caches: NodeCache and PathChildrenCache of bytes, with their
// events as etcdr_cache_event and their contents as etcdr_node(_list).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "c_api_internal.h"
#include "etcd/recipes/node_cache.h"
#include "etcd/recipes/path_children_cache.h"

using etcdr_impl::CallbackSlot;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::ok;
using etcdr_impl::with_timeout;
namespace r = etcd::recipes;

using CNode = r::CachedNode<std::string>;

struct etcdr_node_cache {
  std::shared_ptr<r::NodeCache<std::string>> cache;
  std::shared_ptr<CallbackSlot<etcdr_cache_event_cb>> events = std::make_shared<CallbackSlot<etcdr_cache_event_cb>>();
  etcd::Subscription event_sub;
  etcdr_recipe recipe;
};

struct etcdr_path_children_cache {
  std::shared_ptr<r::PathChildrenCache> cache;
  std::shared_ptr<CallbackSlot<etcdr_cache_event_cb>> events = std::make_shared<CallbackSlot<etcdr_cache_event_cb>>();
  etcd::Subscription event_sub;
  etcdr_recipe recipe;
};

struct etcdr_node_list {
  std::vector<CNode> nodes;
  std::vector<etcdr_node> views;  // point into `nodes`
  int64_t revision = 0;
};

namespace {

// A C view of a cached node (valid while `n` is).
etcdr_node cache_node_view(const CNode& n) {
  etcdr_node v{};
  v.size = sizeof(etcdr_node);
  v.key = n.key.c_str();
  v.key_len = n.key.size();
  v.name = n.name.c_str();
  v.name_len = n.name.size();
  // A bytes cache always decodes: `value` is there.
  static const std::string kNoValue;
  const std::string& value = n.value != nullptr ? *n.value : kNoValue;
  v.value = value.c_str();
  v.value_len = value.size();
  v.create_revision = n.create_revision;
  v.mod_revision = n.mod_revision;
  v.version = n.version;
  v.lease = n.lease;
  return v;
}

// Calls the slot's callback with one event built from the C++ one's parts.
void deliver_cache_event(CallbackSlot<etcdr_cache_event_cb>& slot, etcdr_cache_event_type type,
                         const std::optional<CNode>& previous, const std::optional<CNode>& current, int64_t revision,
                         bool resync, const etcd::Status* cause) {
  slot.run([&](etcdr_cache_event_cb cb, void* user) {
    etcdr_node prev_view{};
    etcdr_node cur_view{};
    etcdr_cache_event e{};
    e.size = sizeof(etcdr_cache_event);
    e.type = type;
    if (previous) {
      prev_view = cache_node_view(*previous);
      e.previous = &prev_view;
    }
    if (current) {
      cur_view = cache_node_view(*current);
      e.current = &cur_view;
    }
    e.revision = revision;
    e.resync = resync ? 1 : 0;
    etcdr_error cause_error = ETCDR_ERROR_INIT;
    if (cause != nullptr) {
      etcdr_impl::set_error(&cause_error, *cause);
      e.cause = &cause_error;
    }
    cb(user, &e);
    etcdr_error_clear(&cause_error);
  });
}

// A cached node's value into the caller's out-pointers.
etcdr_code cache_get_out(const std::optional<CNode>& node, int* found, char** value, size_t* value_len,
                         int64_t* mod_revision, etcdr_error* err) {
  if (node && node->value != nullptr) {
    *value = etcdr_impl::copy_out(*node->value);
    if (value_len != nullptr) *value_len = node->value->size();
    if (mod_revision != nullptr) *mod_revision = node->mod_revision;
    *found = 1;
  }
  return ok(err);
}

template <class Handle>
etcdr_code start_cache(Handle* handle, etcdr_error* err, const char* fn) {
  return guarded(err, [&] {
    if (handle == nullptr) return invalid(err, (std::string(fn) + ": cache is NULL").c_str());
    handle->cache->start();  // throws kBadArgument / kClosed as etcd::Error
    return ok(err);
  });
}

template <class Handle>
etcdr_code wait_cache_initialized(Handle* handle, int64_t timeout_ms, etcdr_error* err, const char* fn) {
  return guarded(err, [&] {
    if (handle == nullptr) return invalid(err, (std::string(fn) + ": cache is NULL").c_str());
    handle->cache->start();
    auto r = with_timeout(handle->cache->wait_initialized(), timeout_ms).wait();
    return r.ok() ? ok(err) : fail(err, r.status());
  });
}

template <class Handle>
void destroy_cache(Handle* handle) {
  if (handle == nullptr) return;
  handle->recipe.unbind();
  handle->events->set(nullptr, nullptr);
  handle->event_sub.reset();
  etcdr_impl::close_quietly(*handle->cache);
  delete handle;
}

}  // namespace

extern "C" {

// --- Node lists

size_t etcdr_node_list_count(const etcdr_node_list* list) { return list != nullptr ? list->views.size() : 0; }

const etcdr_node* etcdr_node_list_at(const etcdr_node_list* list, size_t i) {
  return list != nullptr && i < list->views.size() ? &list->views[i] : nullptr;
}

int64_t etcdr_node_list_revision(const etcdr_node_list* list) { return list != nullptr ? list->revision : 0; }

void etcdr_node_list_free(etcdr_node_list* list) { delete list; }

// --- Node cache

etcdr_code etcdr_node_cache_create(etcdr_client* client, const char* key, const etcdr_recipe_options* options,
                                   etcdr_node_cache** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr) return invalid(err, "etcdr_node_cache_create: client and out are required");
    if (etcdr_impl::bad_name(key)) return invalid(err, "etcdr_node_cache_create: the key is empty");
    if (auto s = r::validate_name("NodeCache", key); !s.ok()) return fail(err, s);
    r::RecipeOptions ro;
    if (auto s = etcdr_impl::to_recipe_options(options, ro); !s.ok()) return fail(err, s);
    auto handle = std::make_unique<etcdr_node_cache>();
    handle->cache = std::make_shared<r::NodeCache<std::string>>(client->client, key, std::move(ro));
    handle->recipe.bind(*handle->cache);
    handle->event_sub = handle->cache->on_change([slot = handle->events](const r::NodeEvent<std::string>& e) {
      using T = r::NodeEvent<std::string>::Type;
      etcdr_cache_event_type type = e.type == T::kInitialized ? ETCDR_CACHE_INITIALIZED
                                    : e.type == T::kCreated   ? ETCDR_CACHE_ADDED
                                    : e.type == T::kUpdated   ? ETCDR_CACHE_UPDATED
                                                              : ETCDR_CACHE_REMOVED;
      deliver_cache_event(*slot, type, e.previous, e.current, e.revision, e.resync, nullptr);
    });
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_node_cache_on_change(etcdr_node_cache* cache, etcdr_cache_event_cb on_change, void* user) {
  if (cache == nullptr) return invalid(nullptr, "etcdr_node_cache_on_change: cache is NULL");
  cache->events->set(on_change, user);
  return ETCDR_OK;
}

etcdr_code etcdr_node_cache_start(etcdr_node_cache* cache, etcdr_error* err) {
  return start_cache(cache, err, "etcdr_node_cache_start");
}

etcdr_code etcdr_node_cache_wait_initialized(etcdr_node_cache* cache, int64_t timeout_ms, etcdr_error* err) {
  return wait_cache_initialized(cache, timeout_ms, err, "etcdr_node_cache_wait_initialized");
}

etcdr_code etcdr_node_cache_get(etcdr_node_cache* cache, int* found, char** value, size_t* value_len,
                                int64_t* mod_revision, etcdr_error* err) {
  return guarded(err, [&] {
    if (cache == nullptr || found == nullptr || value == nullptr) {
      return invalid(err, "etcdr_node_cache_get: cache, found and value are required");
    }
    *found = 0;
    *value = nullptr;
    return cache_get_out(cache->cache->current(), found, value, value_len, mod_revision, err);
  });
}

etcdr_recipe* etcdr_node_cache_recipe(etcdr_node_cache* cache) { return cache != nullptr ? &cache->recipe : nullptr; }

void etcdr_node_cache_destroy(etcdr_node_cache* cache) { destroy_cache(cache); }

// --- Path children cache

void etcdr_path_children_cache_options_init(etcdr_path_children_cache_options* options, size_t size) {
  etcdr_impl::init_options(options, size);
}

etcdr_code etcdr_path_children_cache_create(etcdr_client* client, const char* path,
                                            const etcdr_recipe_options* options,
                                            const etcdr_path_children_cache_options* cache_options,
                                            etcdr_path_children_cache** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr) {
      return invalid(err, "etcdr_path_children_cache_create: client and out are required");
    }
    if (etcdr_impl::bad_name(path)) return invalid(err, "etcdr_path_children_cache_create: the path is empty");
    if (auto s = r::validate_name("PathChildrenCache", path); !s.ok()) return fail(err, s);
    r::PathChildrenCacheOptions po;
    if (auto s = etcdr_impl::to_recipe_options(options, po.recipe); !s.ok()) return fail(err, s);
    etcdr_path_children_cache_options co;
    if (auto s = etcdr_impl::read_options(cache_options, co); !s.ok()) return fail(err, s);
    switch (co.start_mode) {
      case ETCDR_CACHE_START_NORMAL:
        po.start_mode = r::PathChildrenCacheOptions::StartMode::kNormal;
        break;
      case ETCDR_CACHE_START_SILENT:
        po.start_mode = r::PathChildrenCacheOptions::StartMode::kBuildInitialCache;
        break;
      case ETCDR_CACHE_START_POST_INITIALIZED:
        po.start_mode = r::PathChildrenCacheOptions::StartMode::kPostInitializedEvent;
        break;
      default:
        return invalid(err, "etcdr_path_children_cache_create: start_mode must be one of ETCDR_CACHE_START_*");
    }
    if (co.page_size < 0) return invalid(err, "etcdr_path_children_cache_create: page_size must not be negative");
    if (co.page_size > 0) po.page_size = co.page_size;
    po.scope = co.subtree != 0 ? r::PathChildrenCacheOptions::Scope::kSubtree
                               : r::PathChildrenCacheOptions::Scope::kDirectChildren;
    auto handle = std::make_unique<etcdr_path_children_cache>();
    handle->cache = std::make_shared<r::PathChildrenCache>(client->client, path, std::move(po));
    handle->recipe.bind(*handle->cache);
    handle->event_sub = handle->cache->on_event([slot = handle->events](const r::ChildEvent<std::string>& e) {
      static_assert(static_cast<int>(r::ChildEvent<std::string>::Type::kAdded) == ETCDR_CACHE_ADDED &&
                    static_cast<int>(r::ChildEvent<std::string>::Type::kUpdated) == ETCDR_CACHE_UPDATED &&
                    static_cast<int>(r::ChildEvent<std::string>::Type::kRemoved) == ETCDR_CACHE_REMOVED &&
                    static_cast<int>(r::ChildEvent<std::string>::Type::kInitialized) == ETCDR_CACHE_INITIALIZED &&
                    static_cast<int>(r::ChildEvent<std::string>::Type::kReset) == ETCDR_CACHE_RESET);
      const bool reset = e.type == r::ChildEvent<std::string>::Type::kReset;
      deliver_cache_event(*slot, static_cast<etcdr_cache_event_type>(e.type), e.previous, e.current, e.revision,
                          e.resync, reset ? &e.cause : nullptr);
    });
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_path_children_cache_on_event(etcdr_path_children_cache* cache, etcdr_cache_event_cb on_event,
                                              void* user) {
  if (cache == nullptr) return invalid(nullptr, "etcdr_path_children_cache_on_event: cache is NULL");
  cache->events->set(on_event, user);
  return ETCDR_OK;
}

etcdr_code etcdr_path_children_cache_start(etcdr_path_children_cache* cache, etcdr_error* err) {
  return start_cache(cache, err, "etcdr_path_children_cache_start");
}

etcdr_code etcdr_path_children_cache_wait_initialized(etcdr_path_children_cache* cache, int64_t timeout_ms,
                                                      etcdr_error* err) {
  return wait_cache_initialized(cache, timeout_ms, err, "etcdr_path_children_cache_wait_initialized");
}

etcdr_code etcdr_path_children_cache_list(etcdr_path_children_cache* cache, etcdr_node_list** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (cache == nullptr || out == nullptr) {
      return invalid(err, "etcdr_path_children_cache_list: cache and out are required");
    }
    *out = nullptr;
    auto snapshot = cache->cache->snapshot();
    auto list = std::make_unique<etcdr_node_list>();
    list->nodes = std::move(snapshot.nodes);
    list->revision = snapshot.revision;
    list->views.reserve(list->nodes.size());
    for (const auto& n : list->nodes) list->views.push_back(cache_node_view(n));
    *out = list.release();
    return ok(err);
  });
}

etcdr_code etcdr_path_children_cache_get(etcdr_path_children_cache* cache, const char* name, int* found, char** value,
                                         size_t* value_len, int64_t* mod_revision, etcdr_error* err) {
  return guarded(err, [&] {
    if (cache == nullptr || name == nullptr || found == nullptr || value == nullptr) {
      return invalid(err, "etcdr_path_children_cache_get: cache, name, found and value are required");
    }
    *found = 0;
    *value = nullptr;
    return cache_get_out(cache->cache->get(name), found, value, value_len, mod_revision, err);
  });
}

etcdr_recipe* etcdr_path_children_cache_recipe(etcdr_path_children_cache* cache) {
  return cache != nullptr ? &cache->recipe : nullptr;
}

void etcdr_path_children_cache_destroy(etcdr_path_children_cache* cache) { destroy_cache(cache); }

}  // extern "C"
