// The C API's transient keys (TransientKeyValue): a key that lives while
// its owner does, with loss and restore callbacks.
#include <memory>
#include <string>

#include "c_api_internal.h"
#include "etcd/recipes/transient.h"

using etcdr_impl::CallbackSlot;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::invoke_with_status;
using etcdr_impl::ok;
using etcdr_impl::with_timeout;
namespace r = etcd::recipes;

using etcdr_restored_cb = void (*)(void* user);

struct etcdr_transient {
  std::shared_ptr<r::TransientKeyValue> key;
  std::shared_ptr<CallbackSlot<etcdr_lost_cb>> lost = std::make_shared<CallbackSlot<etcdr_lost_cb>>();
  std::shared_ptr<CallbackSlot<etcdr_restored_cb>> restored = std::make_shared<CallbackSlot<etcdr_restored_cb>>();
  etcd::Subscription lost_sub;
  etcd::Subscription restored_sub;
  etcdr_recipe recipe;
};

extern "C" {

etcdr_code etcdr_transient_create(etcdr_client* client, const char* key, const char* value, size_t value_len,
                                  const etcdr_recipe_options* options, etcdr_transient** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_transient_create: client and out are required (and a value with its length)");
    }
    if (etcdr_impl::bad_name(key)) return invalid(err, "etcdr_transient_create: the key is empty");
    if (auto s = r::validate_name("TransientKeyValue", key); !s.ok()) return fail(err, s);
    r::RecipeOptions ro;
    if (auto s = etcdr_impl::to_recipe_options(options, ro); !s.ok()) return fail(err, s);
    auto handle = std::make_unique<etcdr_transient>();
    handle->key = std::make_shared<r::TransientKeyValue>(client->client, key, etcdr_impl::bytes(value, value_len),
                                                         std::move(ro));
    handle->recipe.bind(*handle->key);
    handle->lost_sub = handle->key->on_lost([slot = handle->lost](const etcd::Status& why) {
      slot->run([&](etcdr_lost_cb cb, void* user) { invoke_with_status(cb, user, why); });
    });
    handle->restored_sub = handle->key->on_restored([slot = handle->restored] {
      slot->run([&](etcdr_restored_cb cb, void* user) { cb(user); });
    });
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_transient_create_key(etcdr_transient* transient, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (transient == nullptr) return invalid(err, "etcdr_transient_create_key: transient is NULL");
    auto c = with_timeout(transient->key->create(), timeout_ms).wait();
    return c.ok() ? ok(err) : fail(err, c.status());
  });
}

etcdr_code etcdr_transient_set_value(etcdr_transient* transient, const char* value, size_t value_len,
                                     int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (transient == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_transient_set_value: transient is NULL, or value is NULL with a length");
    }
    auto s = with_timeout(transient->key->set_value(etcdr_impl::bytes(value, value_len)), timeout_ms).wait();
    return s.ok() ? ok(err) : fail(err, s.status());
  });
}

etcdr_code etcdr_transient_release(etcdr_transient* transient, int64_t timeout_ms, int* was_ours, etcdr_error* err) {
  return guarded(err, [&] {
    if (transient == nullptr) return invalid(err, "etcdr_transient_release: transient is NULL");
    auto r = with_timeout(transient->key->release(), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    if (was_ours != nullptr) *was_ours = *r ? 1 : 0;
    return ok(err);
  });
}

int etcdr_transient_is_held(const etcdr_transient* transient) {
  return transient != nullptr && transient->key->is_held() ? 1 : 0;
}

int64_t etcdr_transient_create_revision(const etcdr_transient* transient) {
  return transient != nullptr ? transient->key->create_revision() : 0;
}

etcdr_code etcdr_transient_on_lost(etcdr_transient* transient, etcdr_lost_cb on_lost, void* user) {
  if (transient == nullptr) return invalid(nullptr, "etcdr_transient_on_lost: transient is NULL");
  transient->lost->set(on_lost, user);
  return ETCDR_OK;
}

etcdr_code etcdr_transient_on_restored(etcdr_transient* transient, void (*on_restored)(void* user), void* user) {
  if (transient == nullptr) return invalid(nullptr, "etcdr_transient_on_restored: transient is NULL");
  transient->restored->set(on_restored, user);
  return ETCDR_OK;
}

etcdr_recipe* etcdr_transient_recipe(etcdr_transient* transient) {
  return transient != nullptr ? &transient->recipe : nullptr;
}

void etcdr_transient_destroy(etcdr_transient* transient) {
  if (transient == nullptr) return;
  transient->recipe.unbind();
  transient->lost->set(nullptr, nullptr);
  transient->restored->set(nullptr, nullptr);
  transient->lost_sub.reset();
  transient->restored_sub.reset();
  etcdr_impl::close_quietly(*transient->key);  // deletes the key if ours, without waiting
  delete transient;
}

}  // extern "C"
