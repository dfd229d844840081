// The C API's cancellation handles and the listeners every recipe handle
// and the client share: connection state and recorded background errors.
#include <memory>
#include <mutex>
#include <stop_token>

#include "c_api_internal.h"

using etcdr_impl::CallbackSlot;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::ok;

static_assert(ETCDR_STATE_CONNECTED == static_cast<int>(etcd::ConnectionState::kConnected));
static_assert(ETCDR_STATE_SUSPENDED == static_cast<int>(etcd::ConnectionState::kSuspended));
static_assert(ETCDR_STATE_RECONNECTED == static_cast<int>(etcd::ConnectionState::kReconnected));
static_assert(ETCDR_STATE_LOST == static_cast<int>(etcd::ConnectionState::kLost));

namespace {

std::function<void(etcd::ConnectionState)> state_slot_listener(std::shared_ptr<CallbackSlot<etcdr_state_cb>> slot) {
  return [slot = std::move(slot)](etcd::ConnectionState s) {
    slot->run([&](etcdr_state_cb cb, void* user) { cb(user, static_cast<etcdr_state>(s)); });
  };
}

}  // namespace

void etcdr_recipe::bind(etcd::recipes::RecipeHandle& r) {
  recipe = &r;
  error_sub = r.on_error([slot = errors](const etcd::Status& why) {
    slot->run([&](etcdr_error_cb cb, void* user) { etcdr_impl::invoke_with_status(cb, user, why); });
  });
  state_sub = r.on_state_change(state_slot_listener(states));
}

void etcdr_recipe::unbind() noexcept {
  errors->set(nullptr, nullptr);
  states->set(nullptr, nullptr);
  error_sub.reset();
  state_sub.reset();
}

extern "C" {

// --- Cancellation

etcdr_code etcdr_call_create(etcdr_call** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out == nullptr) return invalid(err, "etcdr_call_create: out is NULL");
    *out = new etcdr_call();
    return ok(err);
  });
}

void etcdr_call_cancel(etcdr_call* call) {
  if (call != nullptr) call->source.request_stop();
}

int etcdr_call_is_cancelled(const etcdr_call* call) {
  return call != nullptr && call->source.stop_requested() ? 1 : 0;
}

void etcdr_call_destroy(etcdr_call* call) { delete call; }

// --- Connection state

const char* etcdr_state_name(etcdr_state state) {
  if (state < ETCDR_STATE_CONNECTED || state > ETCDR_STATE_LOST) return "?";
  return etcd::to_string(static_cast<etcd::ConnectionState>(state)).data();
}

etcdr_state etcdr_client_state(const etcdr_client* client) {
  if (client == nullptr) return ETCDR_STATE_LOST;
  return static_cast<etcdr_state>(client->client.state());
}

etcdr_code etcdr_client_on_state_change(etcdr_client* client, etcdr_state_cb on_change, void* user) {
  return guarded(nullptr, [&] {
    if (client == nullptr) return invalid(nullptr, "etcdr_client_on_state_change: client is NULL");
    std::shared_ptr<CallbackSlot<etcdr_state_cb>> slot;
    {
      std::lock_guard lock(client->state_mu);
      if (client->state == nullptr) {
        // Subscribed on first use: most programs never ask.
        client->state = std::make_shared<CallbackSlot<etcdr_state_cb>>();
        client->state_sub = client->client.on_state_change(state_slot_listener(client->state));
      }
      slot = client->state;
    }
    slot->set(on_change, user);
    return etcdr_code{ETCDR_OK};
  });
}

// --- Every recipe handle

etcdr_state etcdr_recipe_state(const etcdr_recipe* recipe) {
  if (recipe == nullptr || recipe->recipe == nullptr) return ETCDR_STATE_LOST;
  return static_cast<etcdr_state>(recipe->recipe->state());
}

size_t etcdr_recipe_error_count(const etcdr_recipe* recipe) {
  if (recipe == nullptr || recipe->recipe == nullptr) return 0;
  try {
    return recipe->recipe->errors().size();
  } catch (...) {
    return 0;
  }
}

etcdr_code etcdr_recipe_last_error(const etcdr_recipe* recipe, etcdr_error* out) {
  return guarded(out, [&] {
    if (recipe == nullptr || recipe->recipe == nullptr) return invalid(out, "etcdr_recipe_last_error: recipe is NULL");
    auto errors = recipe->recipe->errors();
    if (errors.empty()) return ok(out);
    return etcdr_impl::fail(out, errors.back());
  });
}

void etcdr_recipe_clear_errors(etcdr_recipe* recipe) {
  if (recipe != nullptr && recipe->recipe != nullptr) recipe->recipe->clear_errors();
}

etcdr_code etcdr_recipe_on_error(etcdr_recipe* recipe, etcdr_error_cb on_error, void* user) {
  if (recipe == nullptr) return invalid(nullptr, "etcdr_recipe_on_error: recipe is NULL");
  recipe->errors->set(on_error, user);
  return ETCDR_OK;
}

etcdr_code etcdr_recipe_on_state_change(etcdr_recipe* recipe, etcdr_state_cb on_change, void* user) {
  if (recipe == nullptr) return invalid(nullptr, "etcdr_recipe_on_state_change: recipe is NULL");
  recipe->states->set(on_change, user);
  return ETCDR_OK;
}

}  // extern "C"
