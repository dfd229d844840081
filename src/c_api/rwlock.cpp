// The C API's read-write lock: one handle, two sides (ETCDR_READ,
// ETCDR_WRITE), each driven as etcdr_mutex drives its lock (locks.cpp).
#include <array>
#include <atomic>
#include <memory>

#include "c_api_internal.h"
#include "etcd/recipes/rwlock.h"

using etcdr_impl::CallbackSlot;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::invoke_with_status;
using etcdr_impl::ok;
using etcdr_impl::with_cancel;
using etcdr_impl::with_timeout;
namespace r = etcd::recipes;

struct etcdr_rwlock {
  std::shared_ptr<r::DistributedReadWriteLock> lock;
  // Per side, set by a successful acquire and cleared by release (as
  // etcdr_mutex's flag): "nothing held" differs from "it had been lost".
  std::shared_ptr<std::array<std::atomic<bool>, 2>> acquired = std::make_shared<std::array<std::atomic<bool>, 2>>();
  std::shared_ptr<CallbackSlot<etcdr_lost_cb>> lost = std::make_shared<CallbackSlot<etcdr_lost_cb>>();
  etcd::Subscription read_lost_sub;
  etcd::Subscription write_lost_sub;
  etcdr_recipe recipe;

  r::DistributedReadWriteLock::LockView& side(etcdr_rwlock_mode mode) const {
    return mode == ETCDR_WRITE ? lock->write_lock() : lock->read_lock();
  }
};

namespace {

bool rwlock_bad_mode(etcdr_rwlock_mode mode) { return mode != ETCDR_READ && mode != ETCDR_WRITE; }

}  // namespace

extern "C" {

etcdr_code etcdr_rwlock_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                               etcdr_rwlock** out, etcdr_error* err) {
  return guarded(err, [&] {
    r::RecipeOptions ro;
    if (auto code = etcdr_impl::begin_create("etcdr_rwlock_create", client, name, options, out, ro, err); code != ETCDR_OK) {
      return code;
    }
    auto handle = std::make_unique<etcdr_rwlock>();
    handle->lock = std::make_shared<r::DistributedReadWriteLock>(client->client, name, std::move(ro));
    handle->lock->start();  // checks the input (no I/O), as etcdr_mutex_create
    handle->recipe.bind(*handle->lock);
    auto on_lost = [slot = handle->lost](const etcd::Status& why) {
      slot->run([&](etcdr_lost_cb cb, void* user) { invoke_with_status(cb, user, why); });
    };
    handle->read_lost_sub = handle->lock->read_lock().on_lost(on_lost);
    handle->write_lost_sub = handle->lock->write_lock().on_lost(on_lost);
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_rwlock_acquire(etcdr_rwlock* rw, etcdr_rwlock_mode mode, int64_t timeout_ms, int64_t* token,
                                etcdr_error* err) {
  return guarded(err, [&] {
    if (rw == nullptr) return invalid(err, "etcdr_rwlock_acquire: rw is NULL");
    if (rwlock_bad_mode(mode)) return invalid(err, "etcdr_rwlock_acquire: mode must be ETCDR_READ or ETCDR_WRITE");
    auto h = with_timeout(rw->side(mode).acquire(), timeout_ms).wait();
    if (!h.ok()) return fail(err, h.status());
    (*rw->acquired)[mode].store(true);
    if (token != nullptr) *token = h->token();
    return ok(err);
  });
}

etcdr_code etcdr_rwlock_try_acquire(etcdr_rwlock* rw, etcdr_rwlock_mode mode, int* acquired, int64_t* token,
                                    etcdr_error* err) {
  return guarded(err, [&] {
    if (rw == nullptr || acquired == nullptr) {
      return invalid(err, "etcdr_rwlock_try_acquire: rw and acquired are required");
    }
    *acquired = 0;
    if (rwlock_bad_mode(mode)) {
      return invalid(err, "etcdr_rwlock_try_acquire: mode must be ETCDR_READ or ETCDR_WRITE");
    }
    auto h = rw->side(mode).try_acquire().wait();
    if (!h.ok()) return fail(err, h.status());
    if (h->has_value()) {
      (*rw->acquired)[mode].store(true);
      *acquired = 1;
      if (token != nullptr) *token = (*h)->token();
    }
    return ok(err);
  });
}

etcdr_code etcdr_rwlock_acquire_async(etcdr_rwlock* rw, etcdr_rwlock_mode mode, int64_t timeout_ms, etcdr_call* call,
                                      etcdr_acquire_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (rw == nullptr || done == nullptr || rwlock_bad_mode(mode)) {
      return invalid(nullptr, "etcdr_rwlock_acquire_async: rw, a mode and done are required");
    }
    with_timeout(with_cancel(rw->side(mode).acquire(), call), timeout_ms)
        .then([keep = rw->lock, acquired = rw->acquired, mode, done, user](etcd::Result<r::Hold> h) {
          if (h.ok()) (*acquired)[mode].store(true);
          invoke_with_status(done, user, h.status(), h.ok() ? h->token() : int64_t{0});
        });
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_code etcdr_rwlock_release(etcdr_rwlock* rw, etcdr_rwlock_mode mode, etcdr_error* err) {
  return guarded(err, [&] {
    if (rw == nullptr) return invalid(err, "etcdr_rwlock_release: rw is NULL");
    if (rwlock_bad_mode(mode)) return invalid(err, "etcdr_rwlock_release: mode must be ETCDR_READ or ETCDR_WRITE");
    if (!(*rw->acquired)[mode].exchange(false)) {
      return fail(err, etcd::Status(etcd::StatusCode::kFailedPrecondition,
                                    mode == ETCDR_WRITE ? "etcdr_rwlock_release: the write side holds nothing"
                                                        : "etcdr_rwlock_release: the read side holds nothing",
                                    etcd::Errc::kHoldLost));
    }
    auto released = rw->side(mode).release().wait();
    if (!released.ok()) return fail(err, released.status());
    if (!*released) {
      return etcdr_impl::hold_lost(err,
                                   "the hold had been lost before the release: the work it protected may have "
                                   "raced with another holder");
    }
    return ok(err);
  });
}

etcdr_code etcdr_rwlock_downgrade(etcdr_rwlock* rw, etcdr_error* err) {
  return guarded(err, [&] {
    if (rw == nullptr) return invalid(err, "etcdr_rwlock_downgrade: rw is NULL");
    auto d = rw->lock->downgrade().wait();
    if (!d.ok()) return fail(err, d.status());
    (*rw->acquired)[ETCDR_WRITE].store(false);
    (*rw->acquired)[ETCDR_READ].store(true);
    return ok(err);
  });
}

int etcdr_rwlock_is_held(const etcdr_rwlock* rw, etcdr_rwlock_mode mode) {
  if (rw == nullptr || rwlock_bad_mode(mode)) return 0;
  return rw->side(mode).is_held() ? 1 : 0;
}

etcdr_code etcdr_rwlock_on_lost(etcdr_rwlock* rw, etcdr_lost_cb on_lost, void* user) {
  if (rw == nullptr) return invalid(nullptr, "etcdr_rwlock_on_lost: rw is NULL");
  rw->lost->set(on_lost, user);
  return ETCDR_OK;
}

etcdr_recipe* etcdr_rwlock_recipe(etcdr_rwlock* rw) { return rw != nullptr ? &rw->recipe : nullptr; }

void etcdr_rwlock_destroy(etcdr_rwlock* rw) {
  if (rw == nullptr) return;
  rw->recipe.unbind();
  rw->lost->set(nullptr, nullptr);
  rw->read_lost_sub.reset();
  rw->write_lost_sub.reset();
  etcdr_impl::close_quietly(*rw->lock);  // releases a hold without waiting, ends pending acquires
  delete rw;
}

}  // extern "C"
