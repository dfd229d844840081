// The C API's barriers: the gate (DistributedBarrier), the rendezvous of N
// parties (DistributedBarrierWithCount) and the double barrier. Handles own
// their recipe as locks.cpp's do.
#include <memory>

#include "c_api_internal.h"
#include "etcd/recipes/barrier.h"

using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::invoke_with_status;
using etcdr_impl::ok;
using etcdr_impl::with_cancel;
using etcdr_impl::with_timeout;
namespace r = etcd::recipes;

struct etcdr_barrier {
  std::shared_ptr<r::DistributedBarrier> barrier;
  etcdr_recipe recipe;
};

struct etcdr_barrier_with_count {
  std::shared_ptr<r::DistributedBarrierWithCount> barrier;
  etcdr_recipe recipe;
};

struct etcdr_double_barrier {
  std::shared_ptr<r::DistributedDoubleBarrier> barrier;
  etcdr_recipe recipe;
};

namespace {

// A barrier call with no value to an asynchronous caller; `keep` holds the
// recipe until the callback has run.
template <class B>
void barrier_then(etcd::Call<void> call, std::shared_ptr<B> keep, etcdr_done_cb done, void* user) {
  std::move(call).then(
      [keep = std::move(keep), done, user](etcd::Result<void> r) { invoke_with_status(done, user, r.status()); });
}

etcdr_code barrier_result(etcd::Result<void> r, etcdr_error* err) { return r.ok() ? ok(err) : fail(err, r.status()); }

// The common checks of a barrier's _create; the recipe is then built by `make`.
template <class Handle, class Make>
etcdr_code make_barrier_handle(const char* fn, etcdr_client* client, const char* name,
                               const etcdr_recipe_options* options, Handle** out, etcdr_error* err, Make make) {
  r::RecipeOptions ro;
  if (auto code = etcdr_impl::begin_create(fn, client, name, options, out, ro, err); code != ETCDR_OK) return code;
  auto handle = std::make_unique<Handle>();
  handle->barrier = make(std::move(ro));
  // start() checks the input (no I/O for a barrier until it is used).
  handle->barrier->start();
  handle->recipe.bind(*handle->barrier);
  *out = handle.release();
  return ok(err);
}

template <class Handle>
void destroy_barrier_handle(Handle* handle) {
  if (handle == nullptr) return;
  handle->recipe.unbind();
  etcdr_impl::close_quietly(*handle->barrier);
  delete handle;
}

}  // namespace

extern "C" {

// --- The gate

etcdr_code etcdr_barrier_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                                etcdr_barrier** out, etcdr_error* err) {
  return guarded(err, [&] {
    return make_barrier_handle("etcdr_barrier_create", client, name, options, out, err, [&](r::RecipeOptions ro) {
      return std::make_shared<r::DistributedBarrier>(client->client, name, std::move(ro));
    });
  });
}

etcdr_code etcdr_barrier_set(etcdr_barrier* barrier, int64_t timeout_ms, int* was_open, etcdr_error* err) {
  return guarded(err, [&] {
    if (barrier == nullptr) return invalid(err, "etcdr_barrier_set: barrier is NULL");
    auto r = with_timeout(barrier->barrier->set(), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    if (was_open != nullptr) *was_open = *r ? 1 : 0;
    return ok(err);
  });
}

etcdr_code etcdr_barrier_remove(etcdr_barrier* barrier, int64_t timeout_ms, int* was_set, etcdr_error* err) {
  return guarded(err, [&] {
    if (barrier == nullptr) return invalid(err, "etcdr_barrier_remove: barrier is NULL");
    auto r = with_timeout(barrier->barrier->remove(), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    if (was_set != nullptr) *was_set = *r ? 1 : 0;
    return ok(err);
  });
}

etcdr_code etcdr_barrier_wait(etcdr_barrier* barrier, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (barrier == nullptr) return invalid(err, "etcdr_barrier_wait: barrier is NULL");
    return barrier_result(with_timeout(barrier->barrier->wait(), timeout_ms).wait(), err);
  });
}

etcdr_code etcdr_barrier_wait_async(etcdr_barrier* barrier, int64_t timeout_ms, etcdr_call* call, etcdr_done_cb done,
                                    void* user) {
  return guarded(nullptr, [&] {
    if (barrier == nullptr || done == nullptr) {
      return invalid(nullptr, "etcdr_barrier_wait_async: barrier and done are required");
    }
    barrier_then(with_timeout(with_cancel(barrier->barrier->wait(), call), timeout_ms), barrier->barrier, done, user);
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_recipe* etcdr_barrier_recipe(etcdr_barrier* barrier) { return barrier != nullptr ? &barrier->recipe : nullptr; }

void etcdr_barrier_destroy(etcdr_barrier* barrier) { destroy_barrier_handle(barrier); }

// --- N parties meet

etcdr_code etcdr_barrier_with_count_create(etcdr_client* client, const char* name, int64_t parties,
                                           const etcdr_recipe_options* options, etcdr_barrier_with_count** out,
                                           etcdr_error* err) {
  return guarded(err, [&] {
    if (parties < 1) {
      if (out != nullptr) *out = nullptr;
      return invalid(err, "etcdr_barrier_with_count_create: parties must be at least 1");
    }
    return make_barrier_handle("etcdr_barrier_with_count_create", client, name, options, out, err,
                               [&](r::RecipeOptions ro) {
                                 return std::make_shared<r::DistributedBarrierWithCount>(client->client, name, parties,
                                                                                         std::move(ro));
                               });
  });
}

etcdr_code etcdr_barrier_with_count_wait(etcdr_barrier_with_count* barrier, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (barrier == nullptr) return invalid(err, "etcdr_barrier_with_count_wait: barrier is NULL");
    return barrier_result(with_timeout(barrier->barrier->wait(), timeout_ms).wait(), err);
  });
}

etcdr_code etcdr_barrier_with_count_wait_async(etcdr_barrier_with_count* barrier, int64_t timeout_ms,
                                               etcdr_call* call, etcdr_done_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (barrier == nullptr || done == nullptr) {
      return invalid(nullptr, "etcdr_barrier_with_count_wait_async: barrier and done are required");
    }
    barrier_then(with_timeout(with_cancel(barrier->barrier->wait(), call), timeout_ms), barrier->barrier, done, user);
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_code etcdr_barrier_with_count_waiting(etcdr_barrier_with_count* barrier, int64_t* waiting, etcdr_error* err) {
  return guarded(err, [&] {
    if (barrier == nullptr || waiting == nullptr) {
      return invalid(err, "etcdr_barrier_with_count_waiting: barrier and waiting are required");
    }
    return etcdr_impl::store(err, barrier->barrier->waiting().wait(), waiting);
  });
}

etcdr_recipe* etcdr_barrier_with_count_recipe(etcdr_barrier_with_count* barrier) {
  return barrier != nullptr ? &barrier->recipe : nullptr;
}

void etcdr_barrier_with_count_destroy(etcdr_barrier_with_count* barrier) { destroy_barrier_handle(barrier); }

// --- Enter together, leave together

etcdr_code etcdr_double_barrier_create(etcdr_client* client, const char* name, int64_t parties,
                                       const etcdr_recipe_options* options, etcdr_double_barrier** out,
                                       etcdr_error* err) {
  return guarded(err, [&] {
    if (parties < 1) {
      if (out != nullptr) *out = nullptr;
      return invalid(err, "etcdr_double_barrier_create: parties must be at least 1");
    }
    return make_barrier_handle("etcdr_double_barrier_create", client, name, options, out, err,
                               [&](r::RecipeOptions ro) {
                                 return std::make_shared<r::DistributedDoubleBarrier>(client->client, name, parties,
                                                                                      std::move(ro));
                               });
  });
}

etcdr_code etcdr_double_barrier_enter(etcdr_double_barrier* barrier, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (barrier == nullptr) return invalid(err, "etcdr_double_barrier_enter: barrier is NULL");
    return barrier_result(with_timeout(barrier->barrier->enter(), timeout_ms).wait(), err);
  });
}

etcdr_code etcdr_double_barrier_enter_async(etcdr_double_barrier* barrier, int64_t timeout_ms, etcdr_call* call,
                                            etcdr_done_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (barrier == nullptr || done == nullptr) {
      return invalid(nullptr, "etcdr_double_barrier_enter_async: barrier and done are required");
    }
    barrier_then(with_timeout(with_cancel(barrier->barrier->enter(), call), timeout_ms), barrier->barrier, done, user);
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_code etcdr_double_barrier_leave(etcdr_double_barrier* barrier, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (barrier == nullptr) return invalid(err, "etcdr_double_barrier_leave: barrier is NULL");
    return barrier_result(with_timeout(barrier->barrier->leave(), timeout_ms).wait(), err);
  });
}

etcdr_code etcdr_double_barrier_leave_async(etcdr_double_barrier* barrier, int64_t timeout_ms, etcdr_call* call,
                                            etcdr_done_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (barrier == nullptr || done == nullptr) {
      return invalid(nullptr, "etcdr_double_barrier_leave_async: barrier and done are required");
    }
    barrier_then(with_timeout(with_cancel(barrier->barrier->leave(), call), timeout_ms), barrier->barrier, done, user);
    return etcdr_code{ETCDR_OK};
  });
}

int etcdr_double_barrier_entered(const etcdr_double_barrier* barrier) {
  return barrier != nullptr && barrier->barrier->entered() ? 1 : 0;
}

etcdr_recipe* etcdr_double_barrier_recipe(etcdr_double_barrier* barrier) {
  return barrier != nullptr ? &barrier->recipe : nullptr;
}

void etcdr_double_barrier_destroy(etcdr_double_barrier* barrier) { destroy_barrier_handle(barrier); }

}  // extern "C"
