// DistributedBarrier: the design and the keys are in
// include/etcd/recipes/barrier.h; docs/recipes/barriers.md has the Txns.
//
// Waiters follow one view of the two keys (NAME and NAME/set-by): the gate
// is open while it shows neither. A wait reads both keys once, so that it
// decides at its own revision even when the view lags a set() that just
// completed elsewhere, then parks on a level the view raises.
#include <asio/system_executor.hpp>
#include <optional>

#include "../core/calls.h"
#include "../core/key_path.h"
#include "../core/own_presence.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "../core/waiters.h"
#include "barrier_keys.h"
#include "etcd/recipes/barrier.h"
#include "etcd/txn.h"

namespace etcd::recipes::detail {

class GateState : public std::enable_shared_from_this<GateState> {
 public:
  GateState(std::shared_ptr<RecipeCore> core, GateOptions options, std::chrono::seconds ttl)
      : core_(std::move(core)),
        gate_(core_->name()),
        set_by_(key_under(core_->name(), barrier_keys::kSetBy)),
        options_(options),
        ttl_(ttl),
        open_at_(std::make_shared<WaiterSet>(core_)),
        opened_after_closing_(std::make_shared<WaiterSet>(core_)) {}

  void install() { presence_ = attach_presence(shared_from_this(), *core_, ttl_, "the gate's lease"); }

  Call<bool> set() {
    return core_->call<bool>([self = shared_from_this()](CallOptions, Callback<bool> done) {
      auto link = self->core_->link();
      if (Status st = self->core_->usable(link); !st.ok()) return done(st);
      self->presence_->with_lease(link, [self, link, done = std::move(done)](Result<int64_t> lease) mutable {
        if (!lease.ok()) return done(self->core_->named(std::move(lease).status()));
        self->send_set(link, *lease, false, std::move(done));
      });
    });
  }

  Call<bool> remove() {
    return core_->call<bool>([self = shared_from_this()](CallOptions, Callback<bool> done) {
      auto link = self->core_->link();
      if (Status st = self->core_->usable(link); !st.ok()) return done(st);
      Txn txn;
      txn.then(Op::del(self->gate_), Op::del(self->set_by_));
      CallAccess::start_inline(link->client().txn(std::move(txn)),
                               [self, link, done = std::move(done)](Result<TxnResponse> r) {
                                 if (!r.ok()) return done(self->core_->named(std::move(r).status()));
                                 {
                                   std::lock_guard lock(self->mu_);
                                   self->set_rev_ = 0;
                                 }
                                 done(r->responses.at(0).del().deleted + r->responses.at(1).del().deleted > 0);
                               });
    });
  }

  // One read decides at the call's own revision R (the view may lag a set
  // that completed just before): open at R, done; otherwise the waiter
  // needs the view to show the gate open at a revision after R. With
  // wait_until_set, a gate open at R must close after R and then open.
  Call<void> wait() {
    return core_->call<void>([self = shared_from_this()](CallOptions options, Callback<void> done) {
      auto link = self->core_->link();
      if (Status st = self->core_->usable(link); !st.ok()) return done(st);
      self->ensure_view();
      Txn read;
      read.then(Op::get(self->gate_, GetOptions{.keys_only = true}),
                Op::get(self->set_by_, GetOptions{.keys_only = true}));
      CallAccess::start_inherited(link->client().txn(std::move(read)), options,
                                  [self, options, done = std::move(done)](Result<TxnResponse> r) mutable {
                                    if (!r.ok()) return done(self->core_->named(std::move(r).status()));
                                    const bool closed =
                                        !r->responses.at(0).get().kvs.empty() || !r->responses.at(1).get().kvs.empty();
                                    const auto needed = static_cast<uint64_t>(r->header.revision) + 1;
                                    if (!closed && self->options_.wait_until_set) {
                                      return self->opened_after_closing_->add_until(
                                          options, std::move(done), "the gate to be set and removed", needed);
                                    }
                                    if (!closed) return done(Result<void>());
                                    self->open_at_->add_until(options, std::move(done), "the gate to open", needed);
                                  });
    });
  }

  bool is_set_by_me() const {
    std::lock_guard lock(mu_);
    return set_rev_ != 0 && presence_->lease_id() != 0;
  }

 private:
  // attach_presence() reaches presence_event() and restore().
  template <class Owner>
  friend std::shared_ptr<OwnPresence> attach_presence(const std::shared_ptr<Owner>&, RecipeCore&, std::chrono::seconds,
                                                      std::string);

  void ensure_view() {
    std::lock_guard lock(mu_);
    if (view_) return;
    PrefixView::Options options;
    options.range_end = set_by_ + '\0';  // [NAME, NAME/set-by]
    options.accept = [gate = gate_, set_by = set_by_](std::string_view key) { return key == gate || key == set_by; };
    std::weak_ptr<GateState> weak = weak_from_this();
    view_ = PrefixView::create(core_, gate_, std::move(options), [weak](const ViewBatch& batch) {
      if (auto self = weak.lock()) self->on_batch(batch);
    });
    view_->start();
  }

  // On the view's strand, in revision order.
  void on_batch(const ViewBatch& batch) {
    const bool closed = !batch.state->empty();
    if (batch.kind != ViewBatch::Kind::kInitialized) {
      core_->metrics().add("etcd_recipes_barrier_wakeups_total", {{"name", gate_}}, 1);
    }
    const auto revision = static_cast<uint64_t>(batch.revision);
    if (closed) {
      if (!closed_since_) closed_since_ = revision;
      return;
    }
    if (closed_since_) {
      core_->metrics().add("etcd_recipes_barrier_openings_total", {{"name", gate_}}, 1);
      opened_after_closing_->advance(*closed_since_);
      closed_since_.reset();
    }
    open_at_->advance(revision);
  }

  // If create_revision(NAME) == 0
  //   Then Put(NAME, client id, lease), Put(NAME/set-by, client id, prev_kv)
  //   Else Get(NAME), Get(NAME/set-by)
  // Sent again once after an unknown outcome: the second one recognises
  // the gate as ours by its lease.
  void send_set(const std::shared_ptr<ClientLink>& link, int64_t lease, bool again, Callback<bool> done) {
    Txn txn;
    txn.when(Compare::create_revision(gate_) == 0)
        .then(Op::put(gate_, core_->client_id(), PutOptions{.lease = lease}),
              Op::put(set_by_, core_->client_id(), PutOptions{.prev_kv = true}))
        .otherwise(Op::get(gate_), Op::get(set_by_));
    CallAccess::start_inline(
        link->client().txn(std::move(txn)),
        [self = shared_from_this(), link, lease, again, done = std::move(done)](Result<TxnResponse> r) mutable {
          if (!r.ok()) {
            if (!again && r.status().is(Errc::kOutcomeUnknown)) {
              return self->send_set(link, lease, true, std::move(done));
            }
            return done(self->core_->named(std::move(r).status()));
          }
          if (r->succeeded) {
            const auto& prev = r->responses.at(1).put().prev_kv;
            {
              std::lock_guard lock(self->mu_);
              self->set_rev_ = prev ? prev->create_revision : r->header.revision;
            }
            return done(!prev.has_value());
          }
          const KeyValue* gate = r->responses.at(0).get().first();
          const KeyValue* set_by = r->responses.at(1).get().first();
          if (again && gate && gate->lease == lease && set_by) {
            std::lock_guard lock(self->mu_);
            self->set_rev_ = set_by->create_revision;
          }
          done(false);
        });
  }

  // The presence lease was re-granted after a loss: re-create the gate
  // key, only where it is free and only if the gate is still the one this
  // object set (NAME/set-by not removed nor replaced meanwhile).
  Call<void> restore(int64_t lease) {
    auto link = core_->link();
    int64_t set_rev = 0;
    {
      std::lock_guard lock(mu_);
      set_rev = set_rev_;
    }
    if (!link || set_rev == 0) return Call<void>::ready(Result<void>(), executor_or_system(link));
    return Call<void>(
        [self = shared_from_this(), link, lease, set_rev](CallOptions, Callback<void> done) {
          Txn txn;
          txn.when(Compare::create_revision(self->gate_) == 0, Compare::create_revision(self->set_by_) == set_rev)
              .then(Op::put(self->gate_, self->core_->client_id(), PutOptions{.lease = lease}))
              .otherwise(Op::get(self->gate_));
          CallAccess::start_inline(link->client().txn(std::move(txn)),
                                   [self, lease, done = std::move(done)](Result<TxnResponse> r) {
                                     if (!r.ok()) return done(std::move(r).status());
                                     const KeyValue* gate = r->succeeded ? nullptr : r->responses.at(0).get().first();
                                     if (!r->succeeded && !(gate && gate->lease == lease)) {
                                       // Removed (or taken over) while we were cut off:
                                       // the gate is not ours to keep any more.
                                       std::lock_guard lock(self->mu_);
                                       self->set_rev_ = 0;
                                     }
                                     done(Result<void>());
                                   });
        },
        link->executor());
  }

  void presence_event(PresenceEvent event, const Status& why) {
    bool owns = false;
    {
      std::lock_guard lock(mu_);
      owns = set_rev_ != 0;
    }
    loss_.on_event(*core_, event, why, owns, "the gate's lease",
                   "the gate stays set (" + set_by_ + ") and its key is re-created where it is free");
  }

  const std::shared_ptr<RecipeCore> core_;
  const std::string gate_;
  const std::string set_by_;
  const GateOptions options_;
  const std::chrono::seconds ttl_;
  // Level: the newest revision at which the view saw the gate open.
  const std::shared_ptr<WaiterSet> open_at_;
  // Level: the revision at which the gate closed, once it opened again.
  const std::shared_ptr<WaiterSet> opened_after_closing_;
  std::shared_ptr<OwnPresence> presence_;  // set by install()
  PresenceLossReport loss_;
  std::optional<uint64_t> closed_since_;  // on the view's strand: the gate is closed since

  mutable std::mutex mu_;
  std::shared_ptr<PrefixView> view_;
  int64_t set_rev_ = 0;  // create revision of the NAME/set-by this object wrote (0: none)
};

}  // namespace etcd::recipes::detail

namespace etcd::recipes {

DistributedBarrier::DistributedBarrier(Client client, std::string name)
    : DistributedBarrier(std::move(client), std::move(name), RecipeOptions()) {}

DistributedBarrier::DistributedBarrier(Client client, std::string name, RecipeOptions options)
    : DistributedBarrier(std::move(client), std::move(name), std::move(options), GateOptions()) {}

DistributedBarrier::DistributedBarrier(Client client, std::string name, RecipeOptions options, GateOptions gate) {
  const auto ttl = options.session_ttl;
  auto core = detail::OwnPresence::make_core(std::move(client), "DistributedBarrier", std::move(name),
                                             std::move(options), Status());
  state_ = std::make_shared<detail::GateState>(core, gate, ttl);
  state_->install();
  bind_recipe(std::move(core));
}

Call<bool> DistributedBarrier::set() { return state_->set(); }
Call<bool> DistributedBarrier::remove() { return state_->remove(); }
Call<void> DistributedBarrier::wait() { return state_->wait(); }
bool DistributedBarrier::is_set_by_me() const { return state_->is_set_by_me(); }

}  // namespace etcd::recipes
