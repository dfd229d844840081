// SharedValue<T> (include/etcd/recipes/shared_value.h): a thin driver over
// a one-key PrefixView (the anchored read, the watch, the resync after a
// gap) and two Txns. It keeps the view's state and, beside it, what its own
// last Txn answered when that is newer, and turns the view's batches into
// change events.
#include "etcd/recipes/shared_value.h"

#include <optional>

#include "../core/calls.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "../core/view_lifecycle.h"
#include "client/listener_set.h"
#include "etcd/txn.h"

namespace etcd::recipes::detail {

namespace {

RawSharedValue shared_value_of_entry(const ViewEntry& e, int64_t revision) {
  RawSharedValue v;
  v.exists = true;
  v.bytes = e.value;
  v.decoded = e.decoded;
  v.create_revision = e.create_revision;
  v.mod_revision = e.mod_revision;
  v.version = e.version;
  v.lease = e.lease;
  v.revision = revision;
  return v;
}

bool same_shared_value(const RawSharedValue& a, const RawSharedValue& b) {
  return a.exists == b.exists && a.bytes == b.bytes && a.mod_revision == b.mod_revision &&
         a.create_revision == b.create_revision;
}

}  // namespace

class SharedValueState : public std::enable_shared_from_this<SharedValueState> {
 public:
  SharedValueState(Client client, const char* kind, std::string key, CacheCodec codec, RecipeOptions options,
                   Status input)
      : core(std::make_shared<RecipeCore>(std::move(client), kind, key, std::move(options), std::move(input))),
        codec_(std::move(codec)),
        key_(std::move(key)),
        labels_{{"key", key_}} {}

  // Called once, right after construction: the view's handler refers back
  // to this state weakly (the view lives inside it).
  void attach() {
    PrefixView::Options o;
    o.single_key = true;
    o.decode = codec_.decode;
    view = ViewLifecycle::attach(shared_from_this(), core, key_, std::move(o));
  }

  const std::shared_ptr<RecipeCore> core;
  std::shared_ptr<PrefixView> view;  // set by attach()
  ListenerSet<const RawSharedValueEvent&> listeners;

  RawSharedValue raw() const {
    RawSharedValue out;
    view->read([&](const ViewMap& map, int64_t revision) {
      out.revision = revision;
      if (auto it = map.find(key_); it != map.end()) out = shared_value_of_entry(it->second, revision);
    });
    std::lock_guard lock(mu_);
    if (answered_ && answered_->revision > out.revision) return *answered_;
    return out;
  }

  Call<int64_t> set(std::string bytes) {
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) return core->ready<int64_t>(st);
    Txn txn;
    txn.then(Op::put(key_, bytes)).then(Op::get(key_));
    return then_call<int64_t>(link->client().txn(std::move(txn)), link,
                              [self = shared_from_this()](Result<TxnResponse> r) -> Result<int64_t> {
                                if (!r.ok()) return self->core->named(std::move(r).status());
                                self->core->metrics().add("etcd_recipes_shared_value_writes_total", self->labels_, 1);
                                self->remember(*r, r->responses.at(1).get());
                                return r->header.revision;
                              });
  }

  Call<bool> compare_and_set(int64_t expected, std::string bytes) {
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) return core->ready<bool>(st);
    if (expected < 0) expected = raw().mod_revision;
    Txn txn;
    txn.when(Compare::mod_revision(key_) == expected)
        .then(Op::put(key_, bytes))
        .then(Op::get(key_))
        .otherwise(Op::get(key_));
    return then_call<bool>(
        link->client().txn(std::move(txn)), link, [self = shared_from_this()](Result<TxnResponse> r) -> Result<bool> {
          if (!r.ok()) return self->core->named(std::move(r).status());
          self->core->metrics().add(
              r->succeeded ? "etcd_recipes_shared_value_writes_total" : "etcd_recipes_shared_value_conflicts_total",
              self->labels_, 1);
          self->remember(*r, r->responses.back().get());
          return r->succeeded;
        });
  }

  Call<int64_t> refuse_set(Status why) const { return core->ready<int64_t>(core->named(std::move(why))); }
  Call<bool> refuse_compare(Status why) const { return core->ready<bool>(core->named(std::move(why))); }

  uint64_t resyncs() const { return view->resyncs(); }

 private:
  friend class ViewLifecycle;  // reaches start(), stop() and on_batch()

  void start() { lifecycle_.start(core, *view); }

  // After the close gate (which wakes wait_initialized() and stops the view).
  void stop() {
    lifecycle_.stop();
    listeners.clear();  // they may own what owns this object
  }

  // What one of this object's Txns found the key to be, at its revision.
  void remember(const TxnResponse& r, const GetResponse& read) {
    RawSharedValue v;
    v.revision = r.header.revision;
    if (const KeyValue* kv = read.first()) {
      v.exists = true;
      v.bytes = kv->value;
      if (codec_.decode) v.decoded = codec_.decode(key_, v.bytes);
      v.create_revision = kv->create_revision;
      v.mod_revision = kv->mod_revision;
      v.version = kv->version;
      v.lease = kv->lease;
    }
    std::lock_guard lock(mu_);
    if (!answered_ || answered_->revision < v.revision) answered_ = std::move(v);
  }

  // On the strand: the first read, one revision's change, or a resync.
  // Listeners run here and now, so that events keep their order.
  void on_batch(const ViewBatch& batch) {
    RawSharedValue current;
    current.revision = batch.revision;
    if (auto it = batch.state->find(key_); it != batch.state->end()) {
      current = shared_value_of_entry(it->second, batch.revision);
    }
    const bool resync = batch.kind == ViewBatch::Kind::kResynced;
    if (resync) core->metrics().add("etcd_recipes_shared_value_resyncs_total", labels_, 1);
    RawSharedValue previous = std::move(shown_);
    shown_ = current;
    if (batch.kind == ViewBatch::Kind::kInitialized) {
      report_undecodable(current);
      return;
    }
    if (batch.events.empty() || same_shared_value(previous, current)) return;
    report_undecodable(current);
    core->metrics().add("etcd_recipes_shared_value_changes_total", labels_, 1);
    RawSharedValueEvent e;
    e.previous = &previous;
    e.current = &current;
    e.resync = resync;
    listeners.call(core->throw_sink(), e);
  }

  void report_undecodable(const RawSharedValue& v) {
    if (!v.exists || !v.decoded || !codec_.error_of) return;
    if (const Status* why = codec_.error_of(v.decoded.get())) {
      core->metrics().add("etcd_recipes_shared_value_decode_failures_total", labels_, 1);
      core->record_error(*why);
    }
  }

  const CacheCodec codec_;
  const std::string key_;
  const Labels labels_;

  mutable std::mutex mu_;
  ViewLifecycle lifecycle_;
  // The newest answer of this object's own Txns (get() prefers it while it
  // is newer than the view).
  std::optional<RawSharedValue> answered_;
  // On the strand only: what the listeners were last shown.
  RawSharedValue shown_;
};

SharedValueBase::SharedValueBase(Client client, const char* kind, std::string key, CacheCodec codec,
                                 RecipeOptions options, Status input)
    : state_(std::make_shared<SharedValueState>(std::move(client), kind, std::move(key), std::move(codec),
                                                std::move(options), std::move(input))) {
  state_->attach();
  bind_recipe(state_->core);
}

Call<void> SharedValueBase::wait_initialized() {
  if (Status st = state_->core->input(); !st.ok()) return state_->core->ready<void>(st);
  return state_->view->wait_initialized();
}
bool SharedValueBase::initialized() const { return state_->view->initialized(); }
uint64_t SharedValueBase::resyncs() const { return state_->resyncs(); }
RawSharedValue SharedValueBase::raw() const { return state_->raw(); }
Call<int64_t> SharedValueBase::set_encoded(std::string bytes) { return state_->set(std::move(bytes)); }
Call<bool> SharedValueBase::compare_and_set_encoded(int64_t expected, std::string bytes) {
  return state_->compare_and_set(expected, std::move(bytes));
}
Subscription SharedValueBase::add_listener(std::function<void(const RawSharedValueEvent&)> listener) {
  return state_->listeners.add(std::move(listener));
}
Call<int64_t> SharedValueBase::refuse_set(Status why) const { return state_->refuse_set(std::move(why)); }
Call<bool> SharedValueBase::refuse_compare(Status why) const { return state_->refuse_compare(std::move(why)); }

}  // namespace etcd::recipes::detail
