// The C API of KeyspaceView (include/etcd_recipes.h, "KeyspaceView"): the
// view's listener calls the user's callback on the client's callback
// threads through a CallbackSlot, so that after etcdr_view_destroy returns
// it never runs again.
#include <memory>
#include <string>
#include <vector>

#include "c_api_internal.h"
#include "etcd/recipes/keyspace_view.h"

namespace r = etcd::recipes;
using etcdr_impl::CallbackSlot;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::ok;

struct etcdr_view {
  std::shared_ptr<r::KeyspaceView> view;
  std::shared_ptr<CallbackSlot<etcdr_view_cb>> slot = std::make_shared<CallbackSlot<etcdr_view_cb>>();
  etcd::Subscription events;
};

namespace {

// One KeyspaceEvent as the C struct; `changes` holds a reset's differences
// (it must outlive the call).
void c_view_event_of(const r::KeyspaceEvent& e, etcdr_view_event& out, std::vector<etcdr_view_event>& changes,
                     const etcdr_error* cause) {
  out = etcdr_view_event{};
  out.type = static_cast<int32_t>(e.type);
  out.key = e.key.data();
  out.key_len = e.key.size();
  out.revision = e.revision;
  if (e.current) {
    out.has_value = 1;
    out.value = e.current->value.data();
    out.value_len = e.current->value.size();
    out.create_revision = e.current->create_revision;
    out.mod_revision = e.current->mod_revision;
    out.version = e.current->version;
    out.lease = e.current->lease;
  }
  if (e.previous) {
    out.has_prev_value = 1;
    out.prev_value = e.previous->value.data();
    out.prev_value_len = e.previous->value.size();
  }
  if (e.type == r::KeyspaceEvent::Type::kReset) {
    std::vector<etcdr_view_event> none;
    changes.resize(e.changes.size());
    for (size_t i = 0; i < e.changes.size(); ++i) c_view_event_of(e.changes[i], changes[i], none, nullptr);
    out.changes = changes.empty() ? nullptr : changes.data();
    out.change_count = changes.size();
    out.cause = cause;
  }
}

static_assert(static_cast<int>(r::KeyspaceEvent::Type::kAdded) == ETCDR_VIEW_ADDED);
static_assert(static_cast<int>(r::KeyspaceEvent::Type::kUpdated) == ETCDR_VIEW_UPDATED);
static_assert(static_cast<int>(r::KeyspaceEvent::Type::kRemoved) == ETCDR_VIEW_REMOVED);
static_assert(static_cast<int>(r::KeyspaceEvent::Type::kInitialized) == ETCDR_VIEW_INITIALIZED);
static_assert(static_cast<int>(r::KeyspaceEvent::Type::kReset) == ETCDR_VIEW_RESET);

}  // namespace

extern "C" {

void etcdr_view_options_init(etcdr_view_options* options, size_t size) { etcdr_impl::init_options(options, size); }

etcdr_code etcdr_view_create(etcdr_client* client, const char* key, const etcdr_view_options* options,
                             const etcdr_recipe_options* recipe, etcdr_view_cb on_event, void* user, etcdr_view** out,
                             etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr) return invalid(err, "etcdr_view_create: client and out are required");
    if (etcdr_impl::bad_name(key)) return invalid(err, "etcdr_view_create: the key is empty");
    etcdr_view_options o;
    if (auto s = etcdr_impl::read_options(options, o); !s.ok()) return fail(err, s);
    if (o.range_end == nullptr && o.range_end_len != 0) {
      return invalid(err, "etcdr_view_create: range_end is NULL but range_end_len is not 0");
    }
    if (o.start < ETCDR_VIEW_START_FROM_NOW || o.start > ETCDR_VIEW_START_FROM_REVISION) {
      return invalid(err, "etcdr_view_create: start is not one of ETCDR_VIEW_START_*");
    }
    r::KeyspaceViewOptions vo;
    vo.start = static_cast<r::KeyspaceViewOptions::Start>(o.start);
    vo.start_revision = o.start_revision;
    if (o.range_end != nullptr) vo.range_end.assign(o.range_end, o.range_end_len);
    if (o.page_size != 0) vo.page_size = o.page_size;
    if (auto s = etcdr_impl::to_recipe_options(recipe, vo.recipe); !s.ok()) return fail(err, s);
    auto handle = std::make_unique<etcdr_view>();
    handle->slot->set(on_event, user);
    handle->view = std::make_shared<r::KeyspaceView>(client->client, key, std::move(vo));
    handle->events = handle->view->on_event([slot = handle->slot](const r::KeyspaceEvent& e) {
      slot->run([&](etcdr_view_cb cb, void* u) {
        etcdr_error cause = ETCDR_ERROR_INIT;
        if (e.type == r::KeyspaceEvent::Type::kReset) etcdr_impl::set_error(&cause, e.cause);
        etcdr_view_event ev;
        std::vector<etcdr_view_event> changes;
        c_view_event_of(e, ev, changes, &cause);
        cb(u, &ev);
        etcdr_error_clear(&cause);
      });
    });
    handle->view->start();  // throws the input error (kBadArgument), before any I/O
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_view_wait_initialized(etcdr_view* view, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (view == nullptr) return invalid(err, "etcdr_view_wait_initialized: view is NULL");
    auto r = etcdr_impl::with_timeout(view->view->wait_initialized(), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    return ok(err);
  });
}

int64_t etcdr_view_revision(const etcdr_view* view) { return view == nullptr ? 0 : view->view->revision(); }

size_t etcdr_view_size(const etcdr_view* view) { return view == nullptr ? 0 : view->view->size(); }

etcdr_code etcdr_view_get(etcdr_view* view, const char* key, size_t key_len, char** value, size_t* value_len,
                          etcdr_error* err) {
  return guarded(err, [&] {
    if (value != nullptr) *value = nullptr;
    if (value_len != nullptr) *value_len = 0;
    if (view == nullptr || (key == nullptr && key_len != 0) || value == nullptr) {
      return invalid(err, "etcdr_view_get: view and value are required");
    }
    auto kv = view->view->get(std::string_view(key == nullptr ? "" : key, key_len));
    if (!kv) return fail(err, etcd::Status(etcd::StatusCode::kNotFound, "the view does not hold this key"));
    *value = etcdr_impl::copy_out(kv->value);
    if (value_len != nullptr) *value_len = kv->value.size();
    return ok(err);
  });
}

void etcdr_view_destroy(etcdr_view* view) {
  if (view == nullptr) return;
  view->slot->set(nullptr, nullptr);
  view->events.reset();
  try {
    view->view->close();
  } catch (...) {
    // close() does not throw for a started view; nothing to report in C.
  }
  delete view;
}

}  // extern "C"
