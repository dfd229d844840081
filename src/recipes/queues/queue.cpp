// DistributedQueue and TypedQueue: a facade over the recipe core, a
// producer (guarded group commit) and a consumer (view, commit order,
// guarded takes). Semantics, key layout and costs: etcd/recipes/queue.h.
#include "etcd/recipes/queue.h"

#include <algorithm>
#include <string_view>

#include "../core/calls.h"
#include "../core/recipe_core.h"
#include "consumer.h"
#include "delete_take.h"
#include "producer.h"
#include "queue_keys.h"

namespace etcd::recipes {

namespace detail {

class QueueState {
 public:
  QueueState(Client client, const char* kind, std::string name, RecipeOptions options, TakeCheck check, ItemRank rank)
      : core(std::make_shared<RecipeCore>(std::move(client), kind, name, std::move(options))),
        items(QueueKeys(name).items),
        labels{{"queue", name}},
        producer(std::make_shared<QueueProducer>(core, items, QueueKeys(name).producers, labels)),
        consumer(std::make_shared<QueueConsumer>(core, items, items, "etcd_recipes_queue", labels, check,
                                                 std::make_shared<DeleteTake>(core, labels, check != nullptr),
                                                 rank_of_keys(items.size(), std::move(rank)))) {
    consumer->attach();
  }

  const std::shared_ptr<RecipeCore> core;
  const std::string items;
  const Labels labels;
  const std::shared_ptr<QueueProducer> producer;
  const std::shared_ptr<QueueConsumer> consumer;

 private:
  // The consumer's order sees whole keys; an ItemRank, the part after
  // NAME/items/ (every key of the view has that prefix).
  static CreateOrder::Rank rank_of_keys(size_t prefix, ItemRank rank) {
    if (!rank) return nullptr;
    return [prefix, rank = std::move(rank)](std::string_view key) {
      return rank(key.substr(std::min(prefix, key.size())));
    };
  }
};

QueueBase::QueueBase(Client client, const char* kind, std::string name, RecipeOptions options, TakeCheck check,
                     ItemRank rank)
    : state_(std::make_shared<QueueState>(std::move(client), kind, std::move(name), std::move(options),
                                          std::move(check), std::move(rank))) {
  state_->core->set_close_action([consumer = state_->consumer, producer = state_->producer] {
    consumer->stop();
    producer->close();
  });
  bind_recipe(state_->core);
}

Call<int64_t> QueueBase::size() {
  auto& core = state_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<int64_t>(st);
  auto call = link->client().get(state_->items, GetOptions{.prefix = true, .count_only = true});
  return then_call<int64_t>(std::move(call), std::move(link), [core](Result<GetResponse> r) -> Result<int64_t> {
    if (!r.ok()) return core->named(std::move(r).status());
    return r->count;
  });
}

Call<bool> QueueBase::remove(std::string id) {
  auto state = state_;
  return state->core->call<bool>([state, id = std::move(id)](CallOptions options, Callback<bool> done) {
    auto& core = state->core;
    if (Status st = core->usable(); !st.ok()) return done(st);
    const std::string item = QueueKeys(core->name()).item_id(id);
    if (item.empty()) {
      return done(core->named(InvalidArgument("remove: '" + id + "' is not an item id or key of this queue")));
    }
    auto link = core->link();
    if (!link) return done(core->closed_status());
    // The same delete a take is: etcd tells exactly one of them it deleted
    // the key.
    CallAccess::start_inherited(link->client().del(state->items + item), options,
                                [core, done = std::move(done)](Result<DeleteResponse> r) mutable {
                                  if (!r.ok()) return done(core->named(std::move(r).status()));
                                  done(r->deleted > 0);
                                });
  });
}

Call<Enqueued> QueueBase::enqueue_encoded(std::vector<std::string> values, std::string key_prefix) {
  auto shared = std::make_shared<std::vector<std::string>>(std::move(values));
  return state_->core->call<Enqueued>([producer = state_->producer, shared, key_prefix = std::move(key_prefix)](
                                          CallOptions options, Callback<Enqueued> done) {
    producer->enqueue(std::move(*shared), options, std::move(done), key_prefix);
  });
}

Call<std::string> QueueBase::dequeue_bytes() {
  return make_call<std::string>([state = state_](CallOptions options, Callback<std::string> done) {
    start_take(state, false, std::move(options), [done = std::move(done)](Result<std::optional<TakenItem>> r) {
      if (!r.ok()) return done(std::move(r).status());
      done(std::move((*r)->value));
    });
  });
}

Call<std::optional<std::string>> QueueBase::try_dequeue_bytes() {
  return make_call<std::optional<std::string>>(
      [state = state_](CallOptions options, Callback<std::optional<std::string>> done) {
        start_take(state, true, std::move(options), [done = std::move(done)](Result<std::optional<TakenItem>> r) {
          if (!r.ok()) return done(std::move(r).status());
          if (!*r) return done(std::optional<std::string>());
          done(std::optional<std::string>(std::move((*r)->value)));
        });
      });
}

void QueueBase::start_take(const std::shared_ptr<QueueState>& state, bool try_only, CallOptions options,
                           Callback<std::optional<TakenItem>> done) {
  state->consumer->take(try_only, options, std::move(done));
}

std::shared_ptr<void> QueueBase::decoded_of(Result<std::optional<TakenItem>>& r) { return std::move((*r)->decoded); }

Status QueueBase::named(Status status) const { return state_->core->named(std::move(status)); }

Subscription QueueBase::add_poison_listener(std::function<void(const std::string&, const Status&)> listener) {
  return state_->consumer->on_poison(std::move(listener));
}

std::optional<TakenItem> QueueBase::take_until(Deadline deadline) {
  auto r = make_call<std::optional<TakenItem>>(
               [state = state_](CallOptions options, Callback<std::optional<TakenItem>> done) {
                 start_take(state, false, std::move(options), std::move(done));
               })
               .deadline(deadline)
               .wait();
  if (r.ok()) return std::move(*r);
  if (r.status().code() == StatusCode::kDeadlineExceeded) return std::nullopt;
  throw Error(std::move(r).status());
}

std::pair<std::shared_ptr<void>, Executor> QueueBase::call_context() const {
  // After close(), a Call answers without the client (as RecipeCore::call).
  auto link = state_->core->closed() ? nullptr : state_->core->link();
  const Executor ex = executor_or_system(link);
  return {std::move(link), ex};
}

}  // namespace detail

DistributedQueue::DistributedQueue(Client client, std::string name)
    : DistributedQueue(std::move(client), std::move(name), RecipeOptions()) {}

DistributedQueue::DistributedQueue(Client client, std::string name, RecipeOptions options)
    : QueueBase(std::move(client), "DistributedQueue", std::move(name), std::move(options), nullptr, nullptr) {}

Call<Enqueued> DistributedQueue::enqueue(std::string value) {
  std::vector<std::string> one;
  one.push_back(std::move(value));
  return enqueue_encoded(std::move(one), std::string());
}

Call<Enqueued> DistributedQueue::enqueue_all(std::vector<std::string> values) {
  return enqueue_encoded(std::move(values), std::string());
}

}  // namespace etcd::recipes
