// The C API's holds: mutex, semaphore and election.
//
// Each handle owns its C++ recipe through a shared_ptr, and every
// asynchronous call keeps a copy until its callback has run: destroying a
// handle closes the recipe (pending calls end with Errc::kClosed) without
// freeing what those calls still use.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "c_api_internal.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/semaphore.h"

using etcdr_impl::CallbackSlot;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::invoke_with_status;
using etcdr_impl::ok;
using etcdr_impl::with_cancel;
using etcdr_impl::with_timeout;
namespace r = etcd::recipes;

struct etcdr_mutex {
  std::shared_ptr<r::DistributedMutex> mutex;
  // Set by a successful acquire, cleared by release: tells "nothing was
  // held" (a caller's mistake) from "it had been lost", which the C++
  // release() reports alike as false.
  std::shared_ptr<std::atomic<bool>> acquired = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<CallbackSlot<etcdr_lost_cb>> lost = std::make_shared<CallbackSlot<etcdr_lost_cb>>();
  etcd::Subscription lost_sub;
  etcdr_recipe recipe;
  std::shared_ptr<CallbackSlot<etcdr_release_requested_cb>> release_requested =
      std::make_shared<CallbackSlot<etcdr_release_requested_cb>>();
  etcd::Subscription release_requested_sub;
};

struct etcdr_semaphore {
  std::shared_ptr<r::DistributedSemaphore> sem;
  etcdr_recipe recipe;
};

struct etcdr_permit {
  r::Hold hold;
  std::atomic<bool> released{false};
  // etcdr_permit_on_lost: subscribed to the hold on first use.
  std::shared_ptr<CallbackSlot<etcdr_lost_cb>> lost{};
  etcd::Subscription lost_sub{};
  std::mutex lost_mu{};
};

namespace {

struct Leadership {
  CallbackSlot<etcdr_leadership_cb> slot;
  std::atomic<int64_t> term{0};  // the term the not-leader event ends
};

// A hold's release() result as the C API reports it.
etcdr_code release_result(etcd::Result<bool> released, etcdr_error* err) {
  if (!released.ok()) return fail(err, released.status());
  if (!*released) {
    return etcdr_impl::hold_lost(err,
                                 "the hold had been lost before the release: the work it protected may have raced "
                                 "with another holder");
  }
  return ok(err);
}

}  // namespace

struct etcdr_election {
  std::shared_ptr<r::LeaderLatch> latch;
  std::shared_ptr<Leadership> leadership = std::make_shared<Leadership>();
  etcd::Subscription is_leader_sub;
  etcd::Subscription not_leader_sub;
  etcdr_recipe recipe;
};

extern "C" {

void etcdr_recipe_options_init(etcdr_recipe_options* options, size_t size) { etcdr_impl::init_options(options, size); }

// --- Mutex

etcdr_code etcdr_mutex_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                              etcdr_mutex** out, etcdr_error* err) {
  return guarded(err, [&] {
    r::RecipeOptions ro;
    if (auto code = etcdr_impl::begin_create("etcdr_mutex_create", client, name, options, out, ro, err); code != ETCDR_OK) {
      return code;
    }
    auto handle = std::make_unique<etcdr_mutex>();
    handle->mutex = std::make_shared<r::DistributedMutex>(client->client, name, std::move(ro));
    // For a lock, start() only checks the input (no I/O): a bad name is
    // reported here rather than at the first acquire.
    handle->mutex->start();
    handle->recipe.bind(*handle->mutex);
    handle->lost_sub = handle->mutex->on_lost([slot = handle->lost](const etcd::Status& why) {
      slot->run([&](etcdr_lost_cb cb, void* user) { invoke_with_status(cb, user, why); });
    });
    handle->release_requested_sub = handle->mutex->on_release_requested([slot = handle->release_requested] {
      slot->run([](etcdr_release_requested_cb cb, void* user) { cb(user); });
    });
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_mutex_acquire(etcdr_mutex* mutex, int64_t timeout_ms, int64_t* token, etcdr_error* err) {
  return guarded(err, [&] {
    if (mutex == nullptr) return invalid(err, "etcdr_mutex_acquire: mutex is NULL");
    auto h = with_timeout(mutex->mutex->acquire(), timeout_ms).wait();
    if (!h.ok()) return fail(err, h.status());
    mutex->acquired->store(true);
    if (token != nullptr) *token = h->token();
    return ok(err);
  });
}

etcdr_code etcdr_mutex_try_acquire(etcdr_mutex* mutex, int* acquired, int64_t* token, etcdr_error* err) {
  return guarded(err, [&] {
    if (mutex == nullptr || acquired == nullptr) {
      return invalid(err, "etcdr_mutex_try_acquire: mutex and acquired are required");
    }
    *acquired = 0;
    auto h = mutex->mutex->try_acquire().wait();
    if (!h.ok()) return fail(err, h.status());
    if (h->has_value()) {
      mutex->acquired->store(true);
      *acquired = 1;
      if (token != nullptr) *token = (*h)->token();
    }
    return ok(err);
  });
}

etcdr_code etcdr_mutex_acquire_async(etcdr_mutex* mutex, int64_t timeout_ms, etcdr_acquire_cb done, void* user) {
  return etcdr_mutex_acquire_async_cancellable(mutex, timeout_ms, nullptr, done, user);
}

etcdr_code etcdr_mutex_acquire_async_cancellable(etcdr_mutex* mutex, int64_t timeout_ms, etcdr_call* call,
                                                 etcdr_acquire_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (mutex == nullptr || done == nullptr)
      return invalid(nullptr, "etcdr_mutex_acquire_async: mutex and done are required");
    with_timeout(with_cancel(mutex->mutex->acquire(), call), timeout_ms)
        .then([keep = mutex->mutex, acquired = mutex->acquired, done, user](etcd::Result<r::Hold> h) {
          if (h.ok()) acquired->store(true);
          invoke_with_status(done, user, h.status(), h.ok() ? h->token() : int64_t{0});
        });
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_code etcdr_mutex_release(etcdr_mutex* mutex, etcdr_error* err) {
  return guarded(err, [&] {
    if (mutex == nullptr) return invalid(err, "etcdr_mutex_release: mutex is NULL");
    if (!mutex->acquired->exchange(false)) {
      return fail(err, etcd::Status(etcd::StatusCode::kFailedPrecondition, "etcdr_mutex_release: nothing is held",
                                    etcd::Errc::kHoldLost));
    }
    return release_result(mutex->mutex->release().wait(), err);
  });
}

int etcdr_mutex_is_held(const etcdr_mutex* mutex) { return mutex != nullptr && mutex->mutex->is_held() ? 1 : 0; }

etcdr_code etcdr_mutex_on_lost(etcdr_mutex* mutex, etcdr_lost_cb on_lost, void* user) {
  if (mutex == nullptr) return ETCDR_INVALID_ARGUMENT;
  mutex->lost->set(on_lost, user);
  return ETCDR_OK;
}

etcdr_code etcdr_mutex_request_release(etcdr_mutex* mutex, int64_t timeout_ms, int* asked, etcdr_error* err) {
  return guarded(err, [&] {
    if (mutex == nullptr) return invalid(err, "etcdr_mutex_request_release: mutex is NULL");
    if (asked != nullptr) *asked = 0;
    auto r = with_timeout(mutex->mutex->request_release(), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    if (asked != nullptr) *asked = *r ? 1 : 0;
    return ok(err);
  });
}

etcdr_code etcdr_mutex_on_release_requested(etcdr_mutex* mutex, etcdr_release_requested_cb on_request, void* user) {
  if (mutex == nullptr) return ETCDR_INVALID_ARGUMENT;
  mutex->release_requested->set(on_request, user);
  return ETCDR_OK;
}

void etcdr_mutex_destroy(etcdr_mutex* mutex) {
  if (mutex == nullptr) return;
  mutex->recipe.unbind();
  mutex->lost->set(nullptr, nullptr);
  mutex->lost_sub.reset();
  mutex->release_requested->set(nullptr, nullptr);
  mutex->release_requested_sub.reset();
  try {
    mutex->mutex->close();  // releases a hold without waiting, ends pending acquires
  } catch (...) {
    // close() reports nothing a destroy could act on.
  }
  delete mutex;
}

// --- Semaphore

etcdr_code etcdr_semaphore_create(etcdr_client* client, const char* name, int32_t permits,
                                  const etcdr_recipe_options* options, etcdr_semaphore** out, etcdr_error* err) {
  return guarded(err, [&] {
    r::RecipeOptions ro;
    if (auto code = etcdr_impl::begin_create("etcdr_semaphore_create", client, name, options, out, ro, err);
        code != ETCDR_OK) {
      return code;
    }
    if (permits < 1) return invalid(err, "etcdr_semaphore_create: permits must be at least 1");
    auto handle = std::make_unique<etcdr_semaphore>();
    handle->sem = std::make_shared<r::DistributedSemaphore>(client->client, name, permits, std::move(ro));
    handle->sem->start();
    handle->recipe.bind(*handle->sem);
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_semaphore_acquire(etcdr_semaphore* sem, int64_t timeout_ms, etcdr_permit** permit, etcdr_error* err) {
  return guarded(err, [&] {
    if (sem == nullptr || permit == nullptr)
      return invalid(err, "etcdr_semaphore_acquire: sem and permit are required");
    *permit = nullptr;
    auto h = with_timeout(sem->sem->acquire(), timeout_ms).wait();
    if (!h.ok()) return fail(err, h.status());
    *permit = new etcdr_permit{std::move(*h)};
    return ok(err);
  });
}

etcdr_code etcdr_semaphore_try_acquire(etcdr_semaphore* sem, etcdr_permit** permit, etcdr_error* err) {
  return guarded(err, [&] {
    if (sem == nullptr || permit == nullptr) {
      return invalid(err, "etcdr_semaphore_try_acquire: sem and permit are required");
    }
    *permit = nullptr;
    auto h = sem->sem->try_acquire().wait();
    if (!h.ok()) return fail(err, h.status());
    if (h->has_value()) *permit = new etcdr_permit{std::move(**h)};
    return ok(err);
  });
}

etcdr_code etcdr_semaphore_acquire_async(etcdr_semaphore* sem, int64_t timeout_ms, etcdr_permit_cb done, void* user) {
  return etcdr_semaphore_acquire_async_cancellable(sem, timeout_ms, nullptr, done, user);
}

etcdr_code etcdr_semaphore_acquire_async_cancellable(etcdr_semaphore* sem, int64_t timeout_ms, etcdr_call* call,
                                                     etcdr_permit_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (sem == nullptr || done == nullptr)
      return invalid(nullptr, "etcdr_semaphore_acquire_async: sem and done are required");
    with_timeout(with_cancel(sem->sem->acquire(), call), timeout_ms).then([keep = sem->sem, done, user](etcd::Result<r::Hold> h) {
      etcdr_impl::complete_with_handle<etcdr_permit>(done, user, std::move(h));
    });
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_code etcdr_semaphore_available(etcdr_semaphore* sem, int32_t* available, etcdr_error* err) {
  return guarded(err, [&] {
    if (sem == nullptr || available == nullptr) {
      return invalid(err, "etcdr_semaphore_available: sem and available are required");
    }
    return etcdr_impl::store(err, sem->sem->available_permits().wait(), available);
  });
}

etcdr_code etcdr_semaphore_resize(etcdr_semaphore* sem, int32_t permits, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (sem == nullptr) return invalid(err, "etcdr_semaphore_resize: sem is NULL");
    if (permits < 1) return invalid(err, "etcdr_semaphore_resize: permits must be at least 1");
    auto r = with_timeout(sem->sem->resize(permits), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    return ok(err);
  });
}

void etcdr_semaphore_destroy(etcdr_semaphore* sem) {
  if (sem == nullptr) return;
  sem->recipe.unbind();
  try {
    sem->sem->close();
  } catch (...) {
    // As etcdr_mutex_destroy.
  }
  delete sem;
}

int64_t etcdr_permit_token(const etcdr_permit* permit) { return permit != nullptr ? permit->hold.token() : 0; }

int etcdr_permit_is_held(const etcdr_permit* permit) {
  return permit != nullptr && !permit->released.load() && permit->hold.is_held() ? 1 : 0;
}

etcdr_code etcdr_permit_release(etcdr_permit* permit, etcdr_error* err) {
  return guarded(err, [&] {
    if (permit == nullptr) return invalid(err, "etcdr_permit_release: permit is NULL");
    if (permit->released.exchange(true)) {
      return fail(err, etcd::Status(etcd::StatusCode::kFailedPrecondition,
                                    "etcdr_permit_release: the permit was released already", etcd::Errc::kHoldLost));
    }
    return release_result(permit->hold.release().wait(), err);
  });
}

etcdr_code etcdr_permit_on_lost(etcdr_permit* permit, etcdr_lost_cb on_lost, void* user) {
  return guarded(nullptr, [&] {
    if (permit == nullptr) return invalid(nullptr, "etcdr_permit_on_lost: permit is NULL");
    std::shared_ptr<CallbackSlot<etcdr_lost_cb>> slot;
    {
      std::lock_guard lock(permit->lost_mu);
      if (permit->lost == nullptr) {
        permit->lost = std::make_shared<CallbackSlot<etcdr_lost_cb>>();
        permit->lost_sub = permit->hold.on_lost([slot = permit->lost](const etcd::Status& why) {
          slot->run([&](etcdr_lost_cb cb, void* u) { invoke_with_status(cb, u, why); });
        });
      }
      slot = permit->lost;
    }
    slot->set(on_lost, user);
    return etcdr_code{ETCDR_OK};
  });
}

void etcdr_permit_destroy(etcdr_permit* permit) {
  if (permit == nullptr) return;
  if (permit->lost != nullptr) permit->lost->set(nullptr, nullptr);
  permit->lost_sub.reset();
  delete permit;  // the last Hold copy releases
}

etcdr_recipe* etcdr_mutex_recipe(etcdr_mutex* mutex) { return mutex != nullptr ? &mutex->recipe : nullptr; }
etcdr_recipe* etcdr_semaphore_recipe(etcdr_semaphore* sem) { return sem != nullptr ? &sem->recipe : nullptr; }

// --- Election

etcdr_code etcdr_election_create(etcdr_client* client, const char* name, const char* value, size_t value_len,
                                 const etcdr_recipe_options* options, etcdr_election** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_election_create: client and out are required");
    }
    if (etcdr_impl::bad_name(name)) return invalid(err, "etcdr_election_create: the name is empty");
    // start() would begin campaigning: check the name the way it would.
    if (auto s = r::validate_name("LeaderLatch", name); !s.ok()) return fail(err, s);
    r::RecipeOptions ro;
    if (auto s = etcdr_impl::to_recipe_options(options, ro); !s.ok()) return fail(err, s);
    auto handle = std::make_unique<etcdr_election>();
    handle->latch = std::make_shared<r::LeaderLatch>(
        client->client, name, value_len == 0 ? std::string() : std::string(value, value_len), std::move(ro));
    handle->recipe.bind(*handle->latch);
    handle->is_leader_sub = handle->latch->on_is_leader([l = handle->leadership](int64_t term) {
      l->term.store(term);
      l->slot.run([&](etcdr_leadership_cb cb, void* user) {
        etcdr_error ok_status = ETCDR_ERROR_INIT;
        cb(user, 1, term, &ok_status);
      });
    });
    handle->not_leader_sub = handle->latch->on_not_leader([l = handle->leadership](const etcd::Status& why) {
      const int64_t term = l->term.load();
      l->slot.run([&](etcdr_leadership_cb cb, void* user) {
        etcdr_error e = ETCDR_ERROR_INIT;
        etcdr_impl::set_error(&e, why);
        cb(user, 0, term, &e);
        etcdr_error_clear(&e);
      });
    });
    *out = handle.release();
    return ok(err);
  });
}

}  // extern "C"

namespace {
// The leadership campaign_async found, as the C callback gets it: the term
// token, or kHoldLost when it ended before the callback could read it.
etcd::Status current_term(const r::LeaderLatch& latch, int64_t& term) {
  r::Hold h = latch.hold();
  term = h.valid() ? h.token() : 0;
  if (term == 0) {
    return etcd::Status(etcd::StatusCode::kAborted, "leadership was lost as soon as it was won", etcd::Errc::kHoldLost);
  }
  return etcd::Status();
}
}  // namespace

extern "C" {

etcdr_code etcdr_election_campaign(etcdr_election* election, int64_t timeout_ms, int64_t* term, etcdr_error* err) {
  return guarded(err, [&] {
    if (election == nullptr) return invalid(err, "etcdr_election_campaign: election is NULL");
    election->latch->start();
    auto led = with_timeout(election->latch->await_leadership(), timeout_ms).wait();
    if (!led.ok()) return fail(err, led.status());
    int64_t t = 0;
    if (auto s = current_term(*election->latch, t); !s.ok()) return fail(err, s);
    if (term != nullptr) *term = t;
    return ok(err);
  });
}

etcdr_code etcdr_election_campaign_async(etcdr_election* election, int64_t timeout_ms, etcdr_acquire_cb done,
                                         void* user) {
  return etcdr_election_campaign_async_cancellable(election, timeout_ms, nullptr, done, user);
}

etcdr_code etcdr_election_campaign_async_cancellable(etcdr_election* election, int64_t timeout_ms, etcdr_call* call,
                                                     etcdr_acquire_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (election == nullptr || done == nullptr) {
      return invalid(nullptr, "etcdr_election_campaign_async: election and done are required");
    }
    election->latch->start();
    with_timeout(with_cancel(election->latch->await_leadership(), call), timeout_ms)
        .then([latch = election->latch, done, user](etcd::Result<void> led) {
          int64_t t = 0;
          etcd::Status s = led.ok() ? current_term(*latch, t) : led.status();
          invoke_with_status(done, user, s, t);
        });
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_recipe* etcdr_election_recipe(etcdr_election* election) {
  return election != nullptr ? &election->recipe : nullptr;
}

int etcdr_election_is_leader(const etcdr_election* election) {
  return election != nullptr && election->latch->is_held() ? 1 : 0;
}

etcdr_code etcdr_election_leader(etcdr_election* election, char** value, size_t* value_len, int64_t* term,
                                 etcdr_error* err) {
  return guarded(err, [&] {
    if (election == nullptr) return invalid(err, "etcdr_election_leader: election is NULL");
    if (value != nullptr) *value = nullptr;
    auto l = election->latch->leader().wait();
    if (!l.ok()) return fail(err, l.status());
    if (!l->has_value()) {
      return fail(err,
                  etcd::Status(etcd::StatusCode::kNotFound, "the election has no leader", etcd::Errc::kKeyNotFound));
    }
    if (value != nullptr) *value = etcdr_impl::copy_out((*l)->value);
    if (value_len != nullptr) *value_len = (*l)->value.size();
    if (term != nullptr) *term = (*l)->term;
    return ok(err);
  });
}

etcdr_code etcdr_election_resign(etcdr_election* election, int* was_leader, etcdr_error* err) {
  return guarded(err, [&] {
    if (election == nullptr) return invalid(err, "etcdr_election_resign: election is NULL");
    auto resigned = election->latch->resign().wait();
    if (!resigned.ok()) return fail(err, resigned.status());
    if (was_leader != nullptr) *was_leader = *resigned ? 1 : 0;
    return ok(err);
  });
}

etcdr_code etcdr_election_on_change(etcdr_election* election, etcdr_leadership_cb on_change, void* user) {
  if (election == nullptr) return ETCDR_INVALID_ARGUMENT;
  election->leadership->slot.set(on_change, user);
  return ETCDR_OK;
}

void etcdr_election_destroy(etcdr_election* election) {
  if (election == nullptr) return;
  election->recipe.unbind();
  election->leadership->slot.set(nullptr, nullptr);
  election->is_leader_sub.reset();
  election->not_leader_sub.reset();
  try {
    election->latch->close();
  } catch (...) {
    // As etcdr_mutex_destroy.
  }
  delete election;
}

}  // extern "C"
