// DistributedWorkQueue and TypedWorkQueue: a facade over the recipe core,
// the queues' producer (guarded group commit) and their take engine driven
// by ClaimTake (claims bound to a presence lease). Semantics, key layout
// and costs: etcd/recipes/work_queue.h.
#include "etcd/recipes/work_queue.h"

#include "../core/calls.h"
#include "../core/recipe_core.h"
#include "../core/wall_clock.h"
#include "consumer.h"
#include "producer.h"
#include "work_record.h"
#include "work_take.h"

namespace etcd::recipes {

namespace detail {

namespace {

Status check_options(const WorkQueueOptions& o) {
  if (o.visibility_timeout < std::chrono::seconds(1)) {
    return InvalidArgument("the visibility timeout must be at least 1 s, got " +
                           std::to_string(o.visibility_timeout.count()) + " s");
  }
  if (o.max_deliveries < 1) {
    return InvalidArgument("max_deliveries must be at least 1, got " + std::to_string(o.max_deliveries));
  }
  return Status();
}

// The last byte string after every key that starts with `prefix`.
std::string prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) != 0xff) {
      prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

bool valid_id(const std::string& id) { return !id.empty() && id.find('/') == std::string::npos; }

}  // namespace

class WorkQueueState {
 public:
  WorkQueueState(Client client, const char* kind, const std::string& name, WorkQueueOptions options, WorkDecode decode)
      : core(std::make_shared<RecipeCore>(std::move(client), kind, name, options.recipe, check_options(options))),
        keys(name),
        labels{{"queue", name}},
        producer(std::make_shared<QueueProducer>(core, keys.items, keys.producers, labels)),
        driver(std::make_shared<ClaimTake>(core, keys, labels, options.visibility_timeout, options.max_deliveries,
                                           std::move(decode))),
        consumer(std::make_shared<QueueConsumer>(core, keys.items, keys.claims, "etcd_recipes_workqueue", labels,
                                                 nullptr, driver)) {
    consumer->attach();
  }

  const std::shared_ptr<RecipeCore> core;
  const WorkKeys keys;
  const Labels labels;
  const std::shared_ptr<QueueProducer> producer;
  const std::shared_ptr<ClaimTake> driver;
  const std::shared_ptr<QueueConsumer> consumer;
};

// --- WorkItemBase ----------------------------------------------------------------------------

namespace {
const std::string kEmpty;
}

const std::string& WorkItemBase::id() const { return claim_ ? claim_->fields().id : kEmpty; }
const std::string& WorkItemBase::key() const { return claim_ ? claim_->fields().item_key : kEmpty; }
int64_t WorkItemBase::attempt() const { return claim_ ? claim_->fields().attempt : 0; }
int64_t WorkItemBase::claim() const { return claim_ ? claim_->fields().claim : 0; }

std::stop_token WorkItemBase::stop_token() const {
  if (claim_) return claim_->stop_token();
  std::stop_source ended;
  ended.request_stop();
  return ended.get_token();
}

Call<bool> WorkItemBase::ack() const {
  if (claim_) return claim_->ack();
  return ready_call<bool>(nullptr, false);
}

Call<bool> WorkItemBase::requeue() const {
  if (claim_) return claim_->requeue(std::nullopt);
  return ready_call<bool>(nullptr, false);
}

Call<bool> WorkItemBase::requeue(std::chrono::milliseconds delay) const {
  if (claim_) return claim_->requeue(delay);
  return ready_call<bool>(nullptr, false);
}

// --- WorkQueueBase ---------------------------------------------------------------------------

WorkQueueBase::WorkQueueBase(Client client, const char* kind, std::string name, WorkQueueOptions options,
                             WorkDecode decode)
    : state_(std::make_shared<WorkQueueState>(std::move(client), kind, name, std::move(options), std::move(decode))) {
  state_->core->set_close_action([consumer = state_->consumer, producer = state_->producer, driver = state_->driver] {
    consumer->stop();
    producer->close();
    driver->close();
  });
  bind_recipe(state_->core);
}

Subscription WorkQueueBase::on_dead_letter(std::function<void(const DeadLetter& dead)> listener) {
  return state_->driver->on_dead_letter(std::move(listener));
}

Call<int64_t> WorkQueueBase::size() {
  auto& core = state_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<int64_t>(st);
  auto call = link->client().get(state_->keys.items, GetOptions{.prefix = true, .count_only = true});
  return then_call<int64_t>(std::move(call), std::move(link), [core](Result<GetResponse> r) -> Result<int64_t> {
    if (!r.ok()) return core->named(std::move(r).status());
    return r->count;
  });
}

namespace {

// Reads NAME/dead/ page by page from `from`, appending to `out`.
void read_dead(std::shared_ptr<ClientLink> link, std::shared_ptr<RecipeCore> core, WorkKeys keys, std::string from,
               CallOptions options, std::shared_ptr<std::vector<DeadLetter>> out,
               Callback<std::vector<DeadLetter>> done) {
  constexpr int64_t kPage = 500;
  const std::string end = prefix_end(keys.dead);
  auto call = link->client().get(from, GetOptions{.range_end = end, .limit = kPage});
  CallAccess::start_inherited(std::move(call), options,
                              [link, core, keys, options, out, done = std::move(done)](Result<GetResponse> r) mutable {
                                if (!r.ok()) return done(core->named(std::move(r).status()));
                                for (auto& kv : r->kvs) {
                                  DeadLetter d;
                                  d.key = kv.key;
                                  d.id = kv.key.substr(keys.dead.size());
                                  d.revision = kv.mod_revision;
                                  if (auto rec = parse_dead_record(kv.value)) {
                                    d.value = std::move(rec->payload);
                                    d.deliveries = rec->deliveries;
                                    d.reason = std::move(rec->reason);
                                    d.since =
                                        std::chrono::system_clock::time_point(std::chrono::milliseconds(rec->since_ms));
                                  } else {
                                    d.value = std::move(kv.value);
                                    d.reason = "(put by other means)";
                                  }
                                  out->push_back(std::move(d));
                                }
                                if (!r->more || r->kvs.empty()) return done(std::move(*out));
                                std::string next = r->kvs.back().key + std::string(1, '\0');
                                read_dead(link, core, keys, std::move(next), options, out, std::move(done));
                              });
}

}  // namespace

Call<std::vector<DeadLetter>> WorkQueueBase::dead_letters() {
  auto state = state_;
  return state->core->call<std::vector<DeadLetter>>(
      [state](CallOptions options, Callback<std::vector<DeadLetter>> done) {
        auto link = state->core->link();
        if (Status st = state->core->usable(link); !st.ok()) return done(st);
        read_dead(link, state->core, state->keys, state->keys.dead, options,
                  std::make_shared<std::vector<DeadLetter>>(), std::move(done));
      });
}

Call<bool> WorkQueueBase::requeue_dead(std::string id) {
  auto state = state_;
  return state->core->call<bool>([state, id = std::move(id)](CallOptions options, Callback<bool> done) {
    auto& core = state->core;
    if (Status st = core->usable(); !st.ok()) return done(st);
    if (!valid_id(id)) return done(core->named(InvalidArgument("requeue_dead: '" + id + "' is not an item id")));
    auto link = core->link();
    if (!link) return done(core->closed_status());
    const std::string dead = state->keys.dead + id;
    const std::string item = state->keys.items + id;
    CallAccess::start_inherited(
        link->client().get(dead), options,
        [link, core, dead, item, options, done = std::move(done)](Result<GetResponse> r) mutable {
          if (!r.ok()) return done(core->named(std::move(r).status()));
          const KeyValue* kv = r->first();
          if (!kv) return done(false);
          auto rec = parse_dead_record(kv->value);
          const std::string payload = rec ? rec->payload : kv->value;
          // Back at the tail with fresh deliveries, in one Txn with the
          // dead letter's removal: never both, never neither.
          Txn txn;
          txn.when(Compare::mod_revision(dead) == kv->mod_revision, Compare::create_revision(item) == 0)
              .then(Op::del(dead), Op::put(item, encode_work_record(payload)));
          CallAccess::start_inherited(
              link->client().txn(std::move(txn)), options,
              [core, dead, done = std::move(done)](Result<TxnResponse> t) mutable {
                if (!t.ok()) return done(core->named(std::move(t).status()));
                if (t->succeeded) {
                  return done(true);
                }
                done(core->named(Status(StatusCode::kAborted, "requeue_dead: " + dead +
                                                                  " changed meanwhile (or its item exists); "
                                                                  "nothing was written")));
              });
        });
  });
}

Call<bool> WorkQueueBase::purge_dead(std::string id) {
  auto state = state_;
  return state->core->call<bool>([state, id = std::move(id)](CallOptions options, Callback<bool> done) {
    auto& core = state->core;
    if (Status st = core->usable(); !st.ok()) return done(st);
    if (!valid_id(id)) return done(core->named(InvalidArgument("purge_dead: '" + id + "' is not an item id")));
    auto link = core->link();
    if (!link) return done(core->closed_status());
    CallAccess::start_inherited(link->client().del(state->keys.dead + id), options,
                                [core, done = std::move(done)](Result<DeleteResponse> r) mutable {
                                  if (!r.ok()) return done(core->named(std::move(r).status()));
                                  done(r->deleted > 0);
                                });
  });
}

Call<bool> WorkQueueBase::remove(std::string id) {
  auto state = state_;
  return state->core->call<bool>([state, id = std::move(id)](CallOptions options, Callback<bool> done) {
    auto& core = state->core;
    if (Status st = core->usable(); !st.ok()) return done(st);
    const std::string item = state->keys.item_id(id);
    if (item.empty()) {
      return done(core->named(InvalidArgument("remove: '" + id + "' is not an item id or key of this queue")));
    }
    auto link = core->link();
    if (!link) return done(core->closed_status());
    // Only while no claim exists: a claim needs the item unchanged and
    // unclaimed, so exactly one of the two applies.
    Txn txn;
    txn.when(Compare::create_revision(state->keys.claims + item) == 0).then(Op::del(state->keys.items + item));
    CallAccess::start_inherited(link->client().txn(std::move(txn)), options,
                                [core, done = std::move(done)](Result<TxnResponse> r) mutable {
                                  if (!r.ok()) return done(core->named(std::move(r).status()));
                                  done(r->succeeded && r->responses.at(0).del().deleted > 0);
                                });
  });
}

Call<Enqueued> WorkQueueBase::enqueue_payloads(std::vector<std::string> payloads, std::chrono::milliseconds delay) {
  if (delay.count() < 0) return refuse(InvalidArgument("enqueue: the delay must not be negative"));
  const int64_t not_before = delay.count() > 0 ? wall_clock_ms() + delay.count() : 0;
  auto records = std::make_shared<std::vector<std::string>>();
  records->reserve(payloads.size());
  for (const auto& p : payloads) records->push_back(encode_work_record(p, not_before));
  return state_->core->call<Enqueued>(
      [producer = state_->producer, records](CallOptions options, Callback<Enqueued> done) {
        producer->enqueue(std::move(*records), options, std::move(done));
      });
}

void WorkQueueBase::start_receive(const std::shared_ptr<WorkQueueState>& state, bool try_only, CallOptions options,
                                  Callback<std::optional<TakenItem>> done) {
  state->consumer->take(try_only, options, std::move(done));
}

ClaimedItem WorkQueueBase::to_claimed(Result<std::optional<TakenItem>>& r) {
  TakenItem& item = **r;
  auto delivery = std::static_pointer_cast<Delivery>(item.decoded);
  return ClaimedItem{std::move(delivery->claim), std::move(item.value), std::move(delivery->decoded)};
}

std::optional<ClaimedItem> WorkQueueBase::receive_until(Deadline deadline) {
  auto r = receive_as<std::optional<ClaimedItem>>(false, [](ClaimedItem c) { return c; }).deadline(deadline).wait();
  if (r.ok()) return std::move(*r);
  if (r.status().code() == StatusCode::kDeadlineExceeded) return std::nullopt;
  throw Error(std::move(r).status());
}

Call<Enqueued> WorkQueueBase::refuse(Status why) const {
  return state_->core->ready<Enqueued>(state_->core->named(std::move(why)));
}

std::pair<std::shared_ptr<void>, Executor> WorkQueueBase::call_context() const {
  // After close(), a Call answers without the client (as RecipeCore::call).
  auto link = state_->core->closed() ? nullptr : state_->core->link();
  const Executor ex = executor_or_system(link);
  return {std::move(link), ex};
}

}  // namespace detail

DistributedWorkQueue::DistributedWorkQueue(Client client, std::string name)
    : DistributedWorkQueue(std::move(client), std::move(name), WorkQueueOptions()) {}

DistributedWorkQueue::DistributedWorkQueue(Client client, std::string name, WorkQueueOptions options)
    : WorkQueueBase(std::move(client), "DistributedWorkQueue", std::move(name), std::move(options), nullptr) {}

Call<Enqueued> DistributedWorkQueue::enqueue(std::string value) {
  return enqueue(std::move(value), std::chrono::milliseconds(0));
}

Call<Enqueued> DistributedWorkQueue::enqueue(std::string value, std::chrono::milliseconds delay) {
  std::vector<std::string> one;
  one.push_back(std::move(value));
  return enqueue_payloads(std::move(one), delay);
}

Call<Enqueued> DistributedWorkQueue::enqueue_all(std::vector<std::string> values) {
  return enqueue_payloads(std::move(values), std::chrono::milliseconds(0));
}

Call<Enqueued> DistributedWorkQueue::enqueue_all(std::vector<std::string> values, std::chrono::milliseconds delay) {
  return enqueue_payloads(std::move(values), delay);
}

Call<WorkItem> DistributedWorkQueue::receive() {
  return receive_as<WorkItem>(false, [](detail::ClaimedItem c) { return WorkItem(std::move(c)); });
}

Call<std::optional<WorkItem>> DistributedWorkQueue::try_receive() {
  return receive_as<std::optional<WorkItem>>(true, [](detail::ClaimedItem c) { return WorkItem(std::move(c)); });
}

}  // namespace etcd::recipes
