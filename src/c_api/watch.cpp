// The C API's raw watch: the client's watch of a key or prefix, its events
// handed to a C callback through a CallbackSlot (so that none runs after
// etcdr_watch_destroy returns).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "c_api_internal.h"
#include "etcd/watch.h"

using etcdr_impl::CallbackSlot;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::ok;

struct etcdr_watch {
  std::shared_ptr<CallbackSlot<etcdr_watch_cb>> slot = std::make_shared<CallbackSlot<etcdr_watch_cb>>();
  etcd::Watcher watcher;
  std::chrono::milliseconds default_timeout{5000};  // the client's
};

namespace {

etcdr_node watch_kv_view(const etcd::KeyValue& kv) {
  etcdr_node v{};
  v.size = sizeof(etcdr_node);
  v.key = kv.key.c_str();
  v.key_len = kv.key.size();
  v.name = v.key;
  v.name_len = v.key_len;
  v.value = kv.value.c_str();
  v.value_len = kv.value.size();
  v.create_revision = kv.create_revision;
  v.mod_revision = kv.mod_revision;
  v.version = kv.version;
  v.lease = kv.lease;
  return v;
}

void deliver_watch_batch(CallbackSlot<etcdr_watch_cb>& slot, const etcd::Result<etcd::WatchResponse>& r) {
  slot.run([&](etcdr_watch_cb cb, void* user) {
    if (!r.ok()) {
      etcdr_impl::invoke_with_status(cb, user, r.status(), static_cast<const etcdr_watch_event*>(nullptr), size_t{0},
                                     int64_t{0});
      return;
    }
    if (r->events.empty()) return;  // progress or creation notices: nothing to tell
    const size_t n = r->events.size();
    std::vector<etcdr_node> kvs(n);
    std::vector<etcdr_node> prevs(n);
    std::vector<etcdr_watch_event> events(n);
    for (size_t i = 0; i < n; ++i) {
      const etcd::Event& e = r->events[i];
      kvs[i] = watch_kv_view(e.kv);
      events[i].size = sizeof(etcdr_watch_event);
      events[i].type = e.type == etcd::Event::Type::kPut ? ETCDR_WATCH_PUT : ETCDR_WATCH_DELETE;
      events[i].kv = &kvs[i];
      if (e.prev_kv) {
        prevs[i] = watch_kv_view(*e.prev_kv);
        events[i].prev = &prevs[i];
      }
    }
    etcdr_impl::invoke_with_status(cb, user, etcd::Status(), static_cast<const etcdr_watch_event*>(events.data()), n,
                                   r->header.revision);
  });
}

}  // namespace

extern "C" {

void etcdr_watch_options_init(etcdr_watch_options* options, size_t size) { etcdr_impl::init_options(options, size); }

etcdr_code etcdr_watch_create(etcdr_client* client, const char* key, size_t key_len, const etcdr_watch_options* options,
                              etcdr_watch_cb on_events, void* user, etcdr_watch** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || key == nullptr || on_events == nullptr || out == nullptr) {
      return invalid(err, "etcdr_watch_create: client, key, on_events and out are required");
    }
    etcdr_watch_options o;
    if (auto s = etcdr_impl::read_options(options, o); !s.ok()) return fail(err, s);
    if (o.start_revision < 0) return invalid(err, "etcdr_watch_create: start_revision must not be negative");
    if (key_len == 0 && o.prefix == 0) {
      return invalid(err, "etcdr_watch_create: an empty key (give prefix to watch every key)");
    }
    etcd::WatchOptions wo;
    wo.prefix = o.prefix != 0;
    wo.prev_kv = o.prev_kv != 0;
    wo.start_revision = o.start_revision;
    auto handle = std::make_unique<etcdr_watch>();
    handle->slot->set(on_events, user);
    handle->default_timeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(client->client.options().default_timeout);
    handle->watcher = client->client.watch(
        std::string(key, key_len), wo,
        [slot = handle->slot](etcd::Result<etcd::WatchResponse> r) { deliver_watch_batch(*slot, r); });
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_watch_wait_created(etcdr_watch* watch, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (watch == nullptr) return invalid(err, "etcdr_watch_wait_created: watch is NULL");
    auto timeout = timeout_ms < 0 ? watch->default_timeout : std::chrono::milliseconds(timeout_ms);
    if (!watch->watcher.wait_created(etcd::Clock::now() + timeout)) {
      return fail(err, etcd::Status(etcd::StatusCode::kDeadlineExceeded, "the watch was not confirmed in time"));
    }
    return ok(err);
  });
}

void etcdr_watch_destroy(etcdr_watch* watch) {
  if (watch == nullptr) return;
  watch->slot->set(nullptr, nullptr);
  watch->watcher.cancel();
  delete watch;
}

}  // extern "C"
