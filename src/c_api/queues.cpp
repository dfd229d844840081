// The C API's queues and counter: queue, work queue, counter.
// Handles own their recipe as locks.cpp's do (see there).
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "c_api_internal.h"
#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/priority_queue.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/work_queue.h"

using etcdr_impl::bytes;
using etcdr_impl::close_quietly;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::invoke_with_status;
using etcdr_impl::ok;
using etcdr_impl::with_cancel;
using etcdr_impl::with_timeout;
namespace r = etcd::recipes;

struct etcdr_queue {
  std::shared_ptr<r::DistributedQueue> queue;
  etcdr_recipe recipe;
};

struct etcdr_priority_queue {
  std::shared_ptr<r::DistributedPriorityQueue> queue;
  etcdr_recipe recipe;
};

struct etcdr_work_queue {
  std::shared_ptr<r::DistributedWorkQueue> queue;
  etcdr_recipe recipe;
};

struct etcdr_work_item {
  r::WorkItem item;
  // Set once ack or nack was sent: destroy gives back only an item nobody
  // settled.
  std::atomic<bool> settled{false};
};

struct etcdr_dead_letters {
  std::vector<r::DeadLetter> letters;
};

struct etcdr_counter {
  std::shared_ptr<r::DistributedAtomicLong> counter;
  etcdr_recipe recipe;
};

namespace {

// A dequeue's value to an asynchronous pop's callback (the value is the
// library's, valid during the call); `keep` holds the recipe until then.
template <class Q>
void deliver_popped(etcd::Call<std::string> pop, std::shared_ptr<Q> keep, etcdr_value_cb done, void* user) {
  std::move(pop).then([keep = std::move(keep), done, user](etcd::Result<std::string> v) {
    if (v.ok()) {
      invoke_with_status(done, user, etcd::Status(), v->data(), v->size());
    } else {
      invoke_with_status(done, user, v.status(), static_cast<const char*>(nullptr), size_t{0});
    }
  });
}

// A pop's value into the caller's out-pointers.
etcdr_code popped_out(etcd::Result<std::string> v, char** value, size_t* value_len, etcdr_error* err) {
  if (!v.ok()) return fail(err, v.status());
  *value = etcdr_impl::copy_out(*v);
  if (value_len != nullptr) *value_len = v->size();
  return ok(err);
}

// A try-pop's value (if any) into the caller's out-pointers.
etcdr_code try_popped_out(etcd::Result<std::optional<std::string>> v, int* found, char** value, size_t* value_len,
                          etcdr_error* err) {
  if (!v.ok()) return fail(err, v.status());
  if (v->has_value()) {
    *value = etcdr_impl::copy_out(**v);
    if (value_len != nullptr) *value_len = (*v)->size();
    *found = 1;
  }
  return ok(err);
}

// ack()/requeue() result: false means this claim was gone.
etcdr_code settle_result(etcd::Result<bool> settled, etcdr_error* err) {
  if (!settled.ok()) return fail(err, settled.status());
  if (!*settled) {
    return etcdr_impl::hold_lost(err,
                                 "the claim on the item had been lost (the consumer's lease expired or it was "
                                 "closed): the item was or will be delivered again");
  }
  return ok(err);
}

}  // namespace

extern "C" {

// --- Queue

etcdr_code etcdr_queue_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                              etcdr_queue** out, etcdr_error* err) {
  return guarded(err, [&] {
    r::RecipeOptions ro;
    if (auto code = etcdr_impl::begin_create("etcdr_queue_create", client, name, options, out, ro, err); code != ETCDR_OK) {
      return code;
    }
    auto handle = std::make_unique<etcdr_queue>();
    handle->queue = std::make_shared<r::DistributedQueue>(client->client, name, std::move(ro));
    handle->queue->start();
    handle->recipe.bind(*handle->queue);
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_queue_push(etcdr_queue* queue, const char* value, size_t value_len, int64_t timeout_ms,
                            etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_queue_push: queue is NULL, or value is NULL with a length");
    }
    auto e = with_timeout(queue->queue->enqueue(bytes(value, value_len)), timeout_ms).wait();
    return e.ok() ? ok(err) : fail(err, e.status());
  });
}

etcdr_code etcdr_queue_pop(etcdr_queue* queue, int64_t timeout_ms, char** value, size_t* value_len, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || value == nullptr) return invalid(err, "etcdr_queue_pop: queue and value are required");
    *value = nullptr;
    auto v = with_timeout(queue->queue->dequeue(), timeout_ms).wait();
    if (!v.ok()) return fail(err, v.status());
    *value = etcdr_impl::copy_out(*v);
    if (value_len != nullptr) *value_len = v->size();
    return ok(err);
  });
}

etcdr_code etcdr_queue_try_pop(etcdr_queue* queue, int* found, char** value, size_t* value_len, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || found == nullptr || value == nullptr) {
      return invalid(err, "etcdr_queue_try_pop: queue, found and value are required");
    }
    *found = 0;
    *value = nullptr;
    auto v = queue->queue->try_dequeue().wait();
    if (!v.ok()) return fail(err, v.status());
    if (v->has_value()) {
      *value = etcdr_impl::copy_out(**v);
      if (value_len != nullptr) *value_len = (*v)->size();
      *found = 1;
    }
    return ok(err);
  });
}

etcdr_code etcdr_queue_pop_async(etcdr_queue* queue, int64_t timeout_ms, etcdr_value_cb done, void* user) {
  return etcdr_queue_pop_async_cancellable(queue, timeout_ms, nullptr, done, user);
}

etcdr_code etcdr_queue_pop_async_cancellable(etcdr_queue* queue, int64_t timeout_ms, etcdr_call* call,
                                             etcdr_value_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (queue == nullptr || done == nullptr)
      return invalid(nullptr, "etcdr_queue_pop_async: queue and done are required");
    deliver_popped(with_timeout(with_cancel(queue->queue->dequeue(), call), timeout_ms), queue->queue, done, user);
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_code etcdr_queue_size(etcdr_queue* queue, int64_t* size, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || size == nullptr) return invalid(err, "etcdr_queue_size: queue and size are required");
    return etcdr_impl::store(err, queue->queue->size().wait(), size);
  });
}

void etcdr_queue_destroy(etcdr_queue* queue) {
  if (queue == nullptr) return;
  queue->recipe.unbind();
  close_quietly(*queue->queue);
  delete queue;
}

// --- Work queue

void etcdr_work_queue_options_init(etcdr_work_queue_options* options, size_t size) {
  etcdr_impl::init_options(options, size);
}

etcdr_code etcdr_work_queue_create(etcdr_client* client, const char* name, const etcdr_work_queue_options* options,
                                   etcdr_work_queue** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr)
      return invalid(err, "etcdr_work_queue_create: client and out are required");
    if (etcdr_impl::bad_name(name)) return invalid(err, "etcdr_work_queue_create: the name is empty");
    etcdr_work_queue_options o;
    if (auto s = etcdr_impl::read_options(options, o); !s.ok()) return fail(err, s);
    if (o.visibility_timeout_s < 0 || o.max_deliveries < 0) {
      return invalid(err, "etcdr_work_queue_create: visibility_timeout_s and max_deliveries must not be negative");
    }
    r::WorkQueueOptions wo;
    if (o.client_id != nullptr) wo.recipe.client_id = o.client_id;
    if (o.visibility_timeout_s > 0) wo.visibility_timeout = std::chrono::seconds(o.visibility_timeout_s);
    if (o.max_deliveries > 0) wo.max_deliveries = o.max_deliveries;
    auto handle = std::make_unique<etcdr_work_queue>();
    handle->queue = std::make_shared<r::DistributedWorkQueue>(client->client, name, std::move(wo));
    handle->recipe.bind(*handle->queue);
    handle->queue->start();
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_work_queue_push(etcdr_work_queue* queue, const char* value, size_t value_len, int64_t delay_ms,
                                 int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_work_queue_push: queue is NULL, or value is NULL with a length");
    }
    if (delay_ms < 0) return invalid(err, "etcdr_work_queue_push: delay_ms is negative");
    auto e =
        with_timeout(queue->queue->enqueue(bytes(value, value_len), std::chrono::milliseconds(delay_ms)), timeout_ms)
            .wait();
    return e.ok() ? ok(err) : fail(err, e.status());
  });
}

etcdr_code etcdr_work_queue_receive(etcdr_work_queue* queue, int64_t timeout_ms, etcdr_work_item** item,
                                    etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || item == nullptr)
      return invalid(err, "etcdr_work_queue_receive: queue and item are required");
    *item = nullptr;
    auto w = with_timeout(queue->queue->receive(), timeout_ms).wait();
    if (!w.ok()) return fail(err, w.status());
    *item = new etcdr_work_item{std::move(*w)};
    return ok(err);
  });
}

etcdr_code etcdr_work_queue_receive_async(etcdr_work_queue* queue, int64_t timeout_ms, etcdr_work_item_cb done,
                                          void* user) {
  return etcdr_work_queue_receive_async_cancellable(queue, timeout_ms, nullptr, done, user);
}

etcdr_code etcdr_work_queue_receive_async_cancellable(etcdr_work_queue* queue, int64_t timeout_ms, etcdr_call* call,
                                                      etcdr_work_item_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (queue == nullptr || done == nullptr) {
      return invalid(nullptr, "etcdr_work_queue_receive_async: queue and done are required");
    }
    with_timeout(with_cancel(queue->queue->receive(), call), timeout_ms)
        .then([keep = queue->queue, done, user](etcd::Result<r::WorkItem> w) {
          etcdr_impl::complete_with_handle<etcdr_work_item>(done, user, std::move(w));
        });
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_code etcdr_work_queue_size(etcdr_work_queue* queue, int64_t* size, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || size == nullptr) return invalid(err, "etcdr_work_queue_size: queue and size are required");
    return etcdr_impl::store(err, queue->queue->size().wait(), size);
  });
}

etcdr_code etcdr_work_queue_dead_letters(etcdr_work_queue* queue, etcdr_dead_letters** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || out == nullptr)
      return invalid(err, "etcdr_work_queue_dead_letters: queue and out are required");
    *out = nullptr;
    auto d = queue->queue->dead_letters().wait();
    if (!d.ok()) return fail(err, d.status());
    *out = new etcdr_dead_letters{std::move(*d)};
    return ok(err);
  });
}

etcdr_code etcdr_work_queue_requeue_dead(etcdr_work_queue* queue, const char* id, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || etcdr_impl::bad_name(id))
      return invalid(err, "etcdr_work_queue_requeue_dead: queue and id are required");
    auto done = queue->queue->requeue_dead(id).wait();
    if (!done.ok()) return fail(err, done.status());
    if (!*done) return fail(err, etcd::Status(etcd::StatusCode::kNotFound, std::string("no dead letter ") + id));
    return ok(err);
  });
}

etcdr_code etcdr_work_queue_purge_dead(etcdr_work_queue* queue, const char* id, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || etcdr_impl::bad_name(id))
      return invalid(err, "etcdr_work_queue_purge_dead: queue and id are required");
    auto done = queue->queue->purge_dead(id).wait();
    if (!done.ok()) return fail(err, done.status());
    if (!*done) return fail(err, etcd::Status(etcd::StatusCode::kNotFound, std::string("no dead letter ") + id));
    return ok(err);
  });
}

void etcdr_work_queue_destroy(etcdr_work_queue* queue) {
  if (queue == nullptr) return;
  queue->recipe.unbind();
  close_quietly(*queue->queue);
  delete queue;
}

const char* etcdr_work_item_value(const etcdr_work_item* item, size_t* value_len) {
  if (item == nullptr) {
    if (value_len != nullptr) *value_len = 0;
    return nullptr;
  }
  if (value_len != nullptr) *value_len = item->item.value().size();
  return item->item.value().c_str();
}

const char* etcdr_work_item_id(const etcdr_work_item* item) {
  return item != nullptr ? item->item.id().c_str() : nullptr;
}

int64_t etcdr_work_item_attempt(const etcdr_work_item* item) { return item != nullptr ? item->item.attempt() : 0; }

etcdr_code etcdr_work_item_ack(etcdr_work_item* item, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (item == nullptr) return invalid(err, "etcdr_work_item_ack: item is NULL");
    item->settled.store(true);
    return settle_result(with_timeout(item->item.ack(), timeout_ms).wait(), err);
  });
}

etcdr_code etcdr_work_item_nack(etcdr_work_item* item, int64_t delay_ms, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (item == nullptr) return invalid(err, "etcdr_work_item_nack: item is NULL");
    if (delay_ms < 0) return invalid(err, "etcdr_work_item_nack: delay_ms is negative");
    item->settled.store(true);
    auto call = delay_ms == 0 ? item->item.requeue() : item->item.requeue(std::chrono::milliseconds(delay_ms));
    return settle_result(with_timeout(std::move(call), timeout_ms).wait(), err);
  });
}

void etcdr_work_item_destroy(etcdr_work_item* item) {
  if (item == nullptr) return;
  if (!item->settled.load()) {
    try {
      // Fire and forget: guarded by this claim, so it can only give back
      // an item this delivery still holds.
      item->item.requeue().then([](etcd::Result<bool>) {});
    } catch (...) {
      // Then the item comes back when the consumer's lease ends.
    }
  }
  delete item;
}

size_t etcdr_dead_letters_count(const etcdr_dead_letters* letters) {
  return letters != nullptr ? letters->letters.size() : 0;
}

const char* etcdr_dead_letters_id(const etcdr_dead_letters* letters, size_t i) {
  return letters != nullptr && i < letters->letters.size() ? letters->letters[i].id.c_str() : nullptr;
}

const char* etcdr_dead_letters_value(const etcdr_dead_letters* letters, size_t i, size_t* value_len) {
  const bool in = letters != nullptr && i < letters->letters.size();
  if (value_len != nullptr) *value_len = in ? letters->letters[i].value.size() : 0;
  return in ? letters->letters[i].value.c_str() : nullptr;
}

int64_t etcdr_dead_letters_deliveries(const etcdr_dead_letters* letters, size_t i) {
  return letters != nullptr && i < letters->letters.size() ? letters->letters[i].deliveries : 0;
}

const char* etcdr_dead_letters_reason(const etcdr_dead_letters* letters, size_t i) {
  return letters != nullptr && i < letters->letters.size() ? letters->letters[i].reason.c_str() : nullptr;
}

void etcdr_dead_letters_free(etcdr_dead_letters* letters) { delete letters; }

// --- Counter

etcdr_code etcdr_counter_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                                etcdr_counter** out, etcdr_error* err) {
  return guarded(err, [&] {
    r::RecipeOptions ro;
    if (auto code = etcdr_impl::begin_create("etcdr_counter_create", client, name, options, out, ro, err); code != ETCDR_OK) {
      return code;
    }
    auto handle = std::make_unique<etcdr_counter>();
    handle->counter = std::make_shared<r::DistributedAtomicLong>(client->client, name, std::move(ro));
    handle->counter->start();
    handle->recipe.bind(*handle->counter);
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_counter_get(etcdr_counter* counter, int64_t timeout_ms, int64_t* value, etcdr_error* err) {
  return guarded(err, [&] {
    if (counter == nullptr || value == nullptr)
      return invalid(err, "etcdr_counter_get: counter and value are required");
    return etcdr_impl::store(err, with_timeout(counter->counter->get(), timeout_ms).wait(), value);
  });
}

etcdr_code etcdr_counter_add(etcdr_counter* counter, int64_t delta, int64_t timeout_ms, int64_t* new_value,
                             etcdr_error* err) {
  return guarded(err, [&] {
    if (counter == nullptr) return invalid(err, "etcdr_counter_add: counter is NULL");
    auto v = with_timeout(counter->counter->add(delta), timeout_ms).wait();
    if (!v.ok()) return fail(err, v.status());
    if (new_value != nullptr) *new_value = *v;
    return ok(err);
  });
}

etcdr_code etcdr_counter_set(etcdr_counter* counter, int64_t value, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (counter == nullptr) return invalid(err, "etcdr_counter_set: counter is NULL");
    auto v = with_timeout(counter->counter->set(value), timeout_ms).wait();
    return v.ok() ? ok(err) : fail(err, v.status());
  });
}

etcdr_code etcdr_counter_compare_and_set(etcdr_counter* counter, int64_t expected, int64_t desired, int64_t timeout_ms,
                                         int* swapped, etcdr_error* err) {
  return guarded(err, [&] {
    if (counter == nullptr || swapped == nullptr) {
      return invalid(err, "etcdr_counter_compare_and_set: counter and swapped are required");
    }
    auto v = with_timeout(counter->counter->compare_and_set(expected, desired), timeout_ms).wait();
    if (!v.ok()) return fail(err, v.status());
    *swapped = *v ? 1 : 0;
    return ok(err);
  });
}

void etcdr_counter_destroy(etcdr_counter* counter) {
  if (counter == nullptr) return;
  counter->recipe.unbind();
  close_quietly(*counter->counter);
  delete counter;
}

etcdr_recipe* etcdr_queue_recipe(etcdr_queue* queue) { return queue != nullptr ? &queue->recipe : nullptr; }
etcdr_recipe* etcdr_work_queue_recipe(etcdr_work_queue* queue) { return queue != nullptr ? &queue->recipe : nullptr; }
etcdr_recipe* etcdr_counter_recipe(etcdr_counter* counter) { return counter != nullptr ? &counter->recipe : nullptr; }

// --- Priority queue

etcdr_code etcdr_priority_queue_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                                       etcdr_priority_queue** out, etcdr_error* err) {
  return guarded(err, [&] {
    r::RecipeOptions ro;
    if (auto code = etcdr_impl::begin_create("etcdr_priority_queue_create", client, name, options, out, ro, err);
        code != ETCDR_OK) {
      return code;
    }
    auto handle = std::make_unique<etcdr_priority_queue>();
    handle->queue = std::make_shared<r::DistributedPriorityQueue>(client->client, name, std::move(ro));
    handle->queue->start();
    handle->recipe.bind(*handle->queue);
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_priority_queue_push(etcdr_priority_queue* queue, const char* value, size_t value_len,
                                     int64_t priority, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_priority_queue_push: queue is NULL, or value is NULL with a length");
    }
    // The recipe checks the priority's range before any write.
    auto e = with_timeout(queue->queue->enqueue(bytes(value, value_len), priority), timeout_ms).wait();
    return e.ok() ? ok(err) : fail(err, e.status());
  });
}

etcdr_code etcdr_priority_queue_pop(etcdr_priority_queue* queue, int64_t timeout_ms, char** value, size_t* value_len,
                                    etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || value == nullptr) {
      return invalid(err, "etcdr_priority_queue_pop: queue and value are required");
    }
    *value = nullptr;
    return popped_out(with_timeout(queue->queue->dequeue(), timeout_ms).wait(), value, value_len, err);
  });
}

etcdr_code etcdr_priority_queue_try_pop(etcdr_priority_queue* queue, int* found, char** value, size_t* value_len,
                                        etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || found == nullptr || value == nullptr) {
      return invalid(err, "etcdr_priority_queue_try_pop: queue, found and value are required");
    }
    *found = 0;
    *value = nullptr;
    return try_popped_out(queue->queue->try_dequeue().wait(), found, value, value_len, err);
  });
}

etcdr_code etcdr_priority_queue_pop_async(etcdr_priority_queue* queue, int64_t timeout_ms, etcdr_call* call,
                                          etcdr_value_cb done, void* user) {
  return guarded(nullptr, [&] {
    if (queue == nullptr || done == nullptr) {
      return invalid(nullptr, "etcdr_priority_queue_pop_async: queue and done are required");
    }
    deliver_popped(with_timeout(with_cancel(queue->queue->dequeue(), call), timeout_ms), queue->queue, done, user);
    return etcdr_code{ETCDR_OK};
  });
}

etcdr_code etcdr_priority_queue_size(etcdr_priority_queue* queue, int64_t* size, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || size == nullptr) {
      return invalid(err, "etcdr_priority_queue_size: queue and size are required");
    }
    return etcdr_impl::store(err, queue->queue->size().wait(), size);
  });
}

etcdr_recipe* etcdr_priority_queue_recipe(etcdr_priority_queue* queue) {
  return queue != nullptr ? &queue->recipe : nullptr;
}

void etcdr_priority_queue_destroy(etcdr_priority_queue* queue) {
  if (queue == nullptr) return;
  queue->recipe.unbind();
  close_quietly(*queue->queue);
  delete queue;
}

// --- Removing an item by id (pending items only for the work queue)

namespace {

// The id of the first item an enqueue wrote (its key after NAME/items/),
// copied out for the caller.
etcdr_code queue_pushed_id_out(etcd::Result<r::Enqueued> e, char** id, etcdr_error* err) {
  if (!e.ok()) return fail(err, e.status());
  if (e->keys.empty()) return fail(err, etcd::Status(etcd::StatusCode::kInternal, "the enqueue wrote no item"));
  const std::string& key = e->keys.front();
  const auto at = key.rfind("/items/");
  *id = etcdr_impl::copy_out(at == std::string::npos ? key : key.substr(at + 7));
  return ok(err);
}

// A remove's answer into `removed`.
etcdr_code queue_removed_out(etcd::Result<bool> done, int* removed, etcdr_error* err) {
  if (!done.ok()) return fail(err, done.status());
  if (removed != nullptr) *removed = *done ? 1 : 0;
  return ok(err);
}

}  // namespace

etcdr_code etcdr_queue_push_id(etcdr_queue* queue, const char* value, size_t value_len, int64_t timeout_ms, char** id,
                               etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || id == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_queue_push_id: queue and id are required, and value is NULL only with length 0");
    }
    *id = nullptr;
    return queue_pushed_id_out(with_timeout(queue->queue->enqueue(bytes(value, value_len)), timeout_ms).wait(), id,
                               err);
  });
}

etcdr_code etcdr_queue_remove(etcdr_queue* queue, const char* id, int64_t timeout_ms, int* removed, etcdr_error* err) {
  return guarded(err, [&] {
    if (removed != nullptr) *removed = 0;
    if (queue == nullptr || etcdr_impl::bad_name(id)) {
      return invalid(err, "etcdr_queue_remove: queue and a non-empty id are required");
    }
    return queue_removed_out(with_timeout(queue->queue->remove(id), timeout_ms).wait(), removed, err);
  });
}

etcdr_code etcdr_priority_queue_push_id(etcdr_priority_queue* queue, const char* value, size_t value_len,
                                        int64_t priority, int64_t timeout_ms, char** id, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || id == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err,
                     "etcdr_priority_queue_push_id: queue and id are required, and value is NULL only with length 0");
    }
    *id = nullptr;
    return queue_pushed_id_out(
        with_timeout(queue->queue->enqueue(bytes(value, value_len), priority), timeout_ms).wait(), id, err);
  });
}

etcdr_code etcdr_priority_queue_remove(etcdr_priority_queue* queue, const char* id, int64_t timeout_ms, int* removed,
                                       etcdr_error* err) {
  return guarded(err, [&] {
    if (removed != nullptr) *removed = 0;
    if (queue == nullptr || etcdr_impl::bad_name(id)) {
      return invalid(err, "etcdr_priority_queue_remove: queue and a non-empty id are required");
    }
    return queue_removed_out(with_timeout(queue->queue->remove(id), timeout_ms).wait(), removed, err);
  });
}

etcdr_code etcdr_work_queue_push_id(etcdr_work_queue* queue, const char* value, size_t value_len, int64_t delay_ms,
                                    int64_t timeout_ms, char** id, etcdr_error* err) {
  return guarded(err, [&] {
    if (queue == nullptr || id == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_work_queue_push_id: queue and id are required, and value is NULL only with length 0");
    }
    if (delay_ms < 0) return invalid(err, "etcdr_work_queue_push_id: delay_ms is negative");
    *id = nullptr;
    return queue_pushed_id_out(
        with_timeout(queue->queue->enqueue(bytes(value, value_len), std::chrono::milliseconds(delay_ms)), timeout_ms)
            .wait(),
        id, err);
  });
}

etcdr_code etcdr_work_queue_remove(etcdr_work_queue* queue, const char* id, int64_t timeout_ms, int* removed,
                                   etcdr_error* err) {
  return guarded(err, [&] {
    if (removed != nullptr) *removed = 0;
    if (queue == nullptr || etcdr_impl::bad_name(id)) {
      return invalid(err, "etcdr_work_queue_remove: queue and a non-empty id are required");
    }
    return queue_removed_out(with_timeout(queue->queue->remove(id), timeout_ms).wait(), removed, err);
  });
}

}  // extern "C"
