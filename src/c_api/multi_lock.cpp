// The C API's multi-lock: several mutex names held as one
// (etcd/recipes/multi_lock.h). The handle owns its C++ recipe through a
// shared_ptr, as the other holds do (locks.cpp).
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "c_api_internal.h"
#include "etcd/recipes/multi_lock.h"

namespace r = etcd::recipes;

struct etcdr_multi_lock {
  std::shared_ptr<r::MultiLock> lock;
  // One loss and one release-request callback per handle (as the mutex's).
  std::shared_ptr<etcdr_impl::CallbackSlot<etcdr_lost_cb>> lost =
      std::make_shared<etcdr_impl::CallbackSlot<etcdr_lost_cb>>();
  etcd::Subscription lost_sub;
  std::shared_ptr<etcdr_impl::CallbackSlot<etcdr_release_requested_cb>> release_requested =
      std::make_shared<etcdr_impl::CallbackSlot<etcdr_release_requested_cb>>();
  etcd::Subscription release_requested_sub;
  // Set by a successful acquire, cleared by release: tells "nothing was
  // held" from "it had been lost" (MultiLock::release() gives false for both).
  std::atomic<bool> acquired{false};
};

extern "C" {

etcdr_code etcdr_multi_lock_create(etcdr_client* client, const char* const* names, size_t count,
                                   const etcdr_recipe_options* options, etcdr_multi_lock** out, etcdr_error* err) {
  return etcdr_impl::guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr || (names == nullptr && count > 0)) {
      return etcdr_impl::invalid(err, "etcdr_multi_lock_create: client, names and out are required");
    }
    std::vector<std::string> list;
    for (size_t i = 0; i < count; ++i) {
      if (names[i] == nullptr) return etcdr_impl::invalid(err, "etcdr_multi_lock_create: a name is NULL");
      list.emplace_back(names[i]);
    }
    r::RecipeOptions ro;
    if (auto s = etcdr_impl::to_recipe_options(options, ro); !s.ok()) return etcdr_impl::fail(err, s);
    auto handle = std::make_unique<etcdr_multi_lock>();
    handle->lock = std::make_shared<r::MultiLock>(client->client, std::move(list), std::move(ro));
    // Checks the names (no I/O): bad input is reported here.
    handle->lock->start();
    handle->lost_sub = handle->lock->on_lost([slot = handle->lost](const etcd::Status& why) {
      slot->run([&](etcdr_lost_cb cb, void* user) { etcdr_impl::invoke_with_status(cb, user, why); });
    });
    handle->release_requested_sub = handle->lock->on_release_requested([slot = handle->release_requested] {
      slot->run([](etcdr_release_requested_cb cb, void* user) { cb(user); });
    });
    *out = handle.release();
    return etcdr_impl::ok(err);
  });
}

etcdr_code etcdr_multi_lock_acquire(etcdr_multi_lock* lock, int64_t timeout_ms, etcdr_error* err) {
  return etcdr_impl::guarded(err, [&] {
    if (lock == nullptr) return etcdr_impl::invalid(err, "etcdr_multi_lock_acquire: lock is NULL");
    auto h = etcdr_impl::with_timeout(lock->lock->acquire(), timeout_ms).wait();
    if (!h.ok()) return etcdr_impl::fail(err, h.status());
    lock->acquired.store(true);
    return etcdr_impl::ok(err);
  });
}

etcdr_code etcdr_multi_lock_try_acquire(etcdr_multi_lock* lock, int* acquired, etcdr_error* err) {
  return etcdr_impl::guarded(err, [&] {
    if (lock == nullptr || acquired == nullptr) {
      return etcdr_impl::invalid(err, "etcdr_multi_lock_try_acquire: lock and acquired are required");
    }
    *acquired = 0;
    auto h = lock->lock->try_acquire().wait();
    if (!h.ok()) return etcdr_impl::fail(err, h.status());
    if (h->has_value()) {
      lock->acquired.store(true);
      *acquired = 1;
    }
    return etcdr_impl::ok(err);
  });
}

int64_t etcdr_multi_lock_token(const etcdr_multi_lock* lock, const char* name) {
  if (lock == nullptr || name == nullptr) return 0;
  return lock->lock->hold().token(name);
}

etcdr_code etcdr_multi_lock_release(etcdr_multi_lock* lock, etcdr_error* err) {
  return etcdr_impl::guarded(err, [&] {
    if (lock == nullptr) return etcdr_impl::invalid(err, "etcdr_multi_lock_release: lock is NULL");
    if (!lock->acquired.exchange(false)) {
      return etcdr_impl::fail(err, etcd::Status(etcd::StatusCode::kFailedPrecondition,
                                                "etcdr_multi_lock_release: nothing is held", etcd::Errc::kHoldLost));
    }
    auto released = lock->lock->release().wait();
    if (!released.ok()) return etcdr_impl::fail(err, released.status());
    if (!*released) {
      return etcdr_impl::hold_lost(err,
                                   "a name had been lost before the release: the work it protected may have raced "
                                   "with another holder");
    }
    return etcdr_impl::ok(err);
  });
}

int etcdr_multi_lock_is_held(const etcdr_multi_lock* lock) {
  return lock != nullptr && lock->lock->is_held() ? 1 : 0;
}

etcdr_code etcdr_multi_lock_on_lost(etcdr_multi_lock* lock, etcdr_lost_cb on_lost, void* user) {
  if (lock == nullptr) return ETCDR_INVALID_ARGUMENT;
  lock->lost->set(on_lost, user);
  return ETCDR_OK;
}

int etcdr_multi_lock_release_requested(const etcdr_multi_lock* lock) {
  return lock != nullptr && lock->lock->hold().release_requested().stop_requested() ? 1 : 0;
}

etcdr_code etcdr_multi_lock_on_release_requested(etcdr_multi_lock* lock, etcdr_release_requested_cb on_request,
                                                 void* user) {
  if (lock == nullptr) return ETCDR_INVALID_ARGUMENT;
  lock->release_requested->set(on_request, user);
  return ETCDR_OK;
}

void etcdr_multi_lock_destroy(etcdr_multi_lock* lock) {
  if (lock == nullptr) return;
  lock->lost->set(nullptr, nullptr);
  lock->lost_sub.reset();
  lock->release_requested->set(nullptr, nullptr);
  lock->release_requested_sub.reset();
  try {
    lock->lock->close();  // releases a hold without waiting, ends a pending acquire
  } catch (...) {
    // close() reports nothing a destroy could act on.
  }
  delete lock;
}

}  // extern "C"
