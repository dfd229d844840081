#include "work_take.h"

#include <asio/post.hpp>

#include "../core/calls.h"
#include "../core/keys.h"
#include "../core/strand_steps.h"
#include "../core/wall_clock.h"

namespace etcd::recipes::detail {

// --- a delivery's ack and requeue ----------------------------------------------------------

Call<bool> WorkClaim::ack() {
  Txn txn;
  txn.when(Compare::create_revision(f_.claim_key) == f_.claim)
      .then(Op::del(f_.item_key), Op::del(f_.claim_key))
      .otherwise(Op::get(f_.item_key, GetOptions{.keys_only = true}));
  return guarded(std::move(txn), "ack", "etcd_recipes_workqueue_acked_total", false);
}

Call<bool> WorkClaim::requeue(std::optional<std::chrono::milliseconds> delay) {
  if (delay && delay->count() < 0) {
    return core_->ready<bool>(core_->named(InvalidArgument("requeue: the delay must not be negative")));
  }
  Txn txn;
  txn.when(Compare::create_revision(f_.claim_key) == f_.claim).then(Op::del(f_.claim_key));
  if (delay && delay->count() > 0) {
    // The new time goes into the record; the deliveries counted so far are
    // carried over at the version this put will leave (the claim's put
    // made it f_.version; nobody else writes the item while we hold it).
    txn.then(
        Op::put(f_.item_key, encode_work_record(f_.payload, wall_clock_ms() + delay->count(), f_.attempt, f_.version + 1)));
  }
  txn.otherwise(Op::get(f_.item_key, GetOptions{.keys_only = true}));
  return guarded(std::move(txn), "requeue", "etcd_recipes_workqueue_requeued_total", !(delay && delay->count() > 0));
}

Call<bool> WorkClaim::guarded(Txn txn, const char* what, const char* metric, bool releases) {
  auto shared = std::make_shared<const Txn>(std::move(txn));
  return core_->call<bool>(
      [self = shared_from_this(), shared, what, metric, releases](CallOptions options, Callback<bool> done) {
        auto link = self->core_->link();
        if (Status st = self->core_->usable(link); !st.ok()) return done(st);
        self->send(link, shared, what, metric, releases, options, false, std::move(done));
      });
}

void WorkClaim::send(std::shared_ptr<ClientLink> link, std::shared_ptr<const Txn> txn, const char* what,
                     const char* metric, bool releases, CallOptions options, bool again, Callback<bool> done) {
  auto call = link->client().txn(*txn);
  CallAccess::start_inherited(
      std::move(call), options,
      [self = shared_from_this(), link, txn, what, metric, releases, options, again,
       done = std::move(done)](Result<TxnResponse> r) mutable {
        if (!r.ok()) {
          // After an unknown outcome the same guarded Txn goes once more: it
          // applies at most once (it deletes the claim it compares).
          if (!again && r.status().is(Errc::kOutcomeUnknown)) {
            return self->send(link, txn, what, metric, releases, options, true, std::move(done));
          }
          // After an unknown outcome whether it applied is not known: if the
          // claim is still there it would hide its item for as long as this
          // consumer lives. It joins the consumer's orphaned claims
          // (deleted, guarded by its revision, once no take of the item is
          // in flight): the item is delivered again, as after a lost claim.
          // After any other failure nothing applied: the claim stays, for
          // the caller to try again.
          if (again) {
            if (auto driver = self->driver_.lock()) driver->abandoned(self->f_.item_key, self->f_.claim);
          }
          return done(self->core_->named(
              Status(r.status().code(), std::string(what) + ": " + r.status().message(), r.status().reason())));
        }
        self->end();
        if (r->succeeded) {
          self->core_->metrics().add(metric, self->labels_, 1);
          if (auto driver = self->driver_.lock(); driver && releases) {
            driver->released(r->header.revision);
          }
          return done(true);
        }
        const bool item_gone = r->responses.at(0).get().kvs.empty();
        if (again && item_gone && std::string_view(what) == "ack") {
          // Our first ack may have deleted it, or another delivery's ack
          // after a redelivery: it cannot be told.
          return done(self->core_->named(
              Status(StatusCode::kUnavailable,
                     "ack: the outcome is unknown (the item is gone: this ack or another delivery's deleted it)",
                     Errc::kOutcomeUnknown)));
        }
        self->core_->metrics().add("etcd_recipes_workqueue_stale_acks_total", self->labels_, 1);
        done(false);
      });
}

// --- the claim driver --------------------------------------------------------------------------

struct ClaimTake::Attempt {
  std::shared_ptr<ClientLink> link;
  std::string key;
  std::string id;
  ViewEntry entry;
  WorkRecord record;
  int64_t deliveries = 0;
  std::shared_ptr<void> decoded;
  int64_t lease = 0;
  bool again = false;
  OutcomeCallback done;

  std::string payload() const { return std::string(work_payload(entry.value, record)); }
};

ClaimTake::ClaimTake(std::shared_ptr<RecipeCore> core, WorkKeys keys, Labels labels, std::chrono::seconds visibility,
                     int64_t max_deliveries, WorkDecode decode)
    : core_(std::move(core)),
      keys_(std::move(keys)),
      labels_(std::move(labels)),
      visibility_(visibility),
      max_deliveries_(max_deliveries),
      decode_(std::move(decode)) {}

std::string ClaimTake::view_range_end() const {
  // "NAME/items/" + 1 in its last byte: the first key after the prefix.
  std::string end = keys_.items;
  end.back() = static_cast<char>(end.back() + 1);
  return end;
}

std::string ClaimTake::full_end() const {
  // Claims are held in full (one per delivery in flight); the dead letters
  // between them and the items are not read.
  return prefix_range_end(keys_.claims);
}

std::string ClaimTake::note(const ViewEvent& ev, int64_t revision) {
  // Our claims the view has reached are in claimed_ (or gone again).
  std::erase_if(own_claims_, [&](const auto& c) { return c.second <= revision; });
  view_revision_ = std::max(view_revision_, revision);
  if (ev.key.starts_with(keys_.claims)) {
    std::string item = keys_.items + ev.key.substr(keys_.claims.size());
    if (ev.type == ViewEvent::Type::kRemoved) {
      claimed_.erase(item);
      held_.erase(ev.entry.create_revision);
    } else {
      claimed_[item] = SeenClaim{ev.entry.lease, ev.entry.create_revision};
      release_if_orphaned(item);
    }
    return item;
  }
  if (auto old = not_before_.find(ev.key); old != not_before_.end()) {
    delays_.erase({old->second, ev.key});
    not_before_.erase(old);
  }
  if (ev.type != ViewEvent::Type::kRemoved) {
    const WorkRecord record = parse_work_record(ev.entry.value);
    if (record.not_before_ms > wall_clock_ms()) {
      not_before_[ev.key] = record.not_before_ms;
      delays_.emplace(record.not_before_ms, ev.key);
    }
  }
  return ev.key;
}

bool ClaimTake::ready(const std::string& key, std::chrono::system_clock::time_point now) const {
  // Until the view shows our own requeues, what it says of them is old.
  if (view_revision_ < own_writes_) return false;
  if (own_claims_.count(key) || claimed_.count(key)) return false;
  auto it = not_before_.find(key);
  return it == not_before_.end() || wall_clock_at(it->second) <= now;
}

std::optional<std::chrono::system_clock::time_point> ClaimTake::next_ready_time() {
  // Delays that passed are ready for good: forget them.
  const int64_t now = wall_clock_ms();
  while (!delays_.empty() && delays_.begin()->first <= now) {
    not_before_.erase(delays_.begin()->second);
    delays_.erase(delays_.begin());
  }
  if (delays_.empty()) return std::nullopt;
  return wall_clock_at(delays_.begin()->first);
}

void ClaimTake::take(const std::shared_ptr<ClientLink>& link, const std::string& key, const ViewEntry& entry,
                     std::shared_ptr<void> decoded, OutcomeCallback done) {
  auto a = std::make_shared<Attempt>();
  a->link = link;
  a->key = key;
  a->id = key.substr(keys_.items.size());
  a->entry = entry;
  a->record = parse_work_record(entry.value);
  a->deliveries = a->record.deliveries(entry.version);
  a->decoded = std::move(decoded);
  ++taking_[key];
  a->done = [self = std::static_pointer_cast<ClaimTake>(shared_from_this()), key,
             done = std::move(done)](Outcome out) {
    if (out.kind == Outcome::Kind::kTaken) {
      if (auto* delivery = static_cast<Delivery*>(out.item.decoded.get())) {
        self->held_.insert(delivery->claim->fields().claim);
      }
    }
    if (auto it = self->taking_.find(key); it != self->taking_.end() && --it->second <= 0) {
      self->taking_.erase(it);
      self->release_if_orphaned(key);
    }
    done(std::move(out));
  };
  if (a->deliveries >= max_deliveries_) {
    return send_dead_letter(a, "delivered " + std::to_string(a->deliveries) + " times (max_deliveries " +
                                   std::to_string(max_deliveries_) + ")");
  }
  if (decode_) {
    auto r = decode_(key, a->payload());
    if (!r.ok()) {
      if (r.status().is(Errc::kDecodeFailed)) {
        // Poison: it would fail every consumer; it goes to the dead letters now.
        core_->record_error(core_->named(r.status()));
        core_->metrics().add("etcd_recipes_workqueue_poison_total", labels_, 1);
        return send_dead_letter(a, "poison: " + r.status().message());
      }
      Outcome out;
      out.status = std::move(r).status();
      return a->done(std::move(out));
    }
    a->decoded = std::move(*r);
  }
  with_lease(link, [self = std::static_pointer_cast<ClaimTake>(shared_from_this()), a](Result<int64_t> lease) {
    if (!lease.ok()) {
      Outcome out;
      out.status = std::move(lease).status();
      return a->done(std::move(out));
    }
    a->lease = *lease;
    self->send_claim(a);
  });
}

void ClaimTake::release_if_orphaned(const std::string& item) {
  auto seen = claimed_.find(item);
  if (seen == claimed_.end() || taking_.count(item) || held_.count(seen->second.revision) ||
      releasing_.count(seen->second.revision)) {
    return;
  }
  {
    std::lock_guard lock(mu_);
    if (closed_ || !presence_ || presence_->lease_id() != seen->second.lease) return;
  }
  auto link = core_->link();
  if (!link) return;
  const int64_t revision = seen->second.revision;
  const std::string claim_key = keys_.claims + item.substr(keys_.items.size());
  releasing_.insert(revision);
  Txn txn;
  txn.when(Compare::create_revision(claim_key) == revision).then(Op::del(claim_key));
  run_on_strand(link->strand(), link->client().txn(std::move(txn)),
                [self = std::static_pointer_cast<ClaimTake>(shared_from_this()), link, item,
                 revision](Result<TxnResponse> r) {
                  self->releasing_.erase(revision);
                  if (r.ok()) {
                    self->release_failures_ = 0;
                    if (r->succeeded) {
                      self->core_->metrics().add("etcd_recipes_workqueue_orphaned_claims_released_total",
                                                 self->labels_, 1);
                    }
                    return;
                  }
                  // Safe to repeat (guarded by the claim's revision): again
                  // after a pause, if it is still there and still ours.
                  self->core_->record_error(self->core_->named(Status(
                      r.status().code(), "releasing a claim whose take's outcome was unknown: " + r.status().message(),
                      r.status().reason())));
                  std::weak_ptr<ClaimTake> weak = self;
                  retry_on_strand(
                      link->strand(), self->release_failures_, self->release_retry_, 5000,
                      [weak] { return weak.expired(); },
                      [weak, item] {
                        if (auto again = weak.lock()) again->release_if_orphaned(item);
                      });
                });
}

void ClaimTake::with_lease(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then) {
  std::shared_ptr<OwnPresence> presence;
  {
    std::lock_guard lock(mu_);
    if (closed_) return then(core_->closed_status());
    if (!presence_) {
      std::weak_ptr<ClaimTake> weak = std::static_pointer_cast<ClaimTake>(shared_from_this());
      presence_ = std::make_shared<OwnPresence>(
          PresenceOptions{.ttl = visibility_}, "the consumer's lease",
          [weak](PresenceEvent event, const Status& why) {
            auto self = weak.lock();
            if (!self || event != PresenceEvent::kExpired) return;
            // etcd deleted our claims with the lease: the items may be
            // delivered elsewhere already. Deliveries in hand end.
            self->core_->record_error(self->core_->named(
                Status(why.code(), "the consumer's lease was lost; its items will be delivered again: " + why.message(),
                       why.reason())));
            self->end_claims();
          },
          nullptr);
    }
    presence = presence_;
  }
  presence->with_lease(link, std::move(then), &link->strand());
}

void ClaimTake::send_claim(const std::shared_ptr<Attempt>& a) {
  const std::string claim_key = keys_.claims + a->id;
  Txn txn;
  txn.when(Compare::mod_revision(a->key) == a->entry.mod_revision, Compare::create_revision(claim_key) == 0)
      .then(Op::put(claim_key, core_->client_id(), PutOptions{.lease = a->lease}),
            Op::put(a->key, "", PutOptions{.ignore_value = true}))
      .otherwise(Op::get(claim_key));
  run_on_strand(
      a->link->strand(), a->link->client().txn(std::move(txn)),
      [self = std::static_pointer_cast<ClaimTake>(shared_from_this()), a, claim_key](Result<TxnResponse> r) {
        if (!r.ok()) {
          if (!a->again && r.status().is(Errc::kOutcomeUnknown)) {
            a->again = true;
            return self->send_claim(a);
          }
          Outcome out;
          out.status = std::move(r).status();
          if (out.status.is(Errc::kLeaseNotFound)) {
            // The presence lease heals; the take waits for it.
            out.status = Status(StatusCode::kUnavailable,
                                "the consumer's lease was lost; waiting for a new one: " + out.status.message());
          }
          return a->done(std::move(out));
        }
        int64_t claim = 0;
        if (r->succeeded) {
          claim = r->header.revision;
        } else if (a->again) {
          // The first attempt may have applied: the claim is ours if
          // it is under our lease.
          const KeyValue* kv = r->responses.at(0).get().first();
          if (kv && kv->lease == a->lease) claim = kv->create_revision;
        }
        if (claim == 0) {
          Outcome out;
          out.kind = Outcome::Kind::kConflict;
          return a->done(std::move(out));
        }
        self->own_claims_[a->key] = claim;
        auto delivery = std::make_shared<WorkClaim>(
            self->core_, std::weak_ptr<ClaimTake>(self), self->labels_,
            WorkClaim::Fields{a->id, a->key, claim_key, claim, a->deliveries + 1, a->entry.version + 1, a->payload()});
        bool lost = false;
        {
          std::lock_guard lock(self->mu_);
          std::erase_if(self->live_, [](const auto& w) { return w.expired(); });
          self->live_.push_back(delivery);
          lost = self->closed_ || !self->presence_ || self->presence_->lease_id() != a->lease;
        }
        if (lost) delivery->end();
        self->core_->metrics().add("etcd_recipes_workqueue_received_total", self->labels_, 1);
        Outcome out;
        out.kind = Outcome::Kind::kTaken;
        out.removed = false;
        // The claim travels in the item's `decoded` slot, beside a typed
        // queue's value.
        out.item = TakenItem{a->key, delivery->fields().payload, a->entry.create_revision,
                             std::make_shared<Delivery>(Delivery{delivery, std::move(a->decoded)})};
        a->done(std::move(out));
      });
}

void ClaimTake::send_dead_letter(const std::shared_ptr<Attempt>& a, std::string reason) {
  const std::string claim_key = keys_.claims + a->id;
  const int64_t since = wall_clock_ms();
  Txn txn;
  txn.when(Compare::mod_revision(a->key) == a->entry.mod_revision, Compare::create_revision(claim_key) == 0)
      .then(Op::del(a->key), Op::put(keys_.dead + a->id, encode_dead_record(a->payload(), a->deliveries, since, reason)));
  run_on_strand(a->link->strand(), a->link->client().txn(std::move(txn)),
                [self = std::static_pointer_cast<ClaimTake>(shared_from_this()), a, since,
                 reason = std::move(reason)](Result<TxnResponse> r) mutable {
                  Outcome out;
                  if (!r.ok()) {
                    // Moving it is all or nothing: sent again, it applies at most once.
                    if (!a->again && r.status().is(Errc::kOutcomeUnknown)) {
                      a->again = true;
                      return self->send_dead_letter(a, std::move(reason));
                    }
                    out.status = std::move(r).status();
                    if (a->again && out.status.is(Errc::kOutcomeUnknown)) out.kind = Outcome::Kind::kConflict;
                    return a->done(std::move(out));
                  }
                  if (!r->succeeded) {
                    out.kind = Outcome::Kind::kConflict;
                    return a->done(std::move(out));
                  }
                  self->core_->metrics().add("etcd_recipes_workqueue_dead_lettered_total", self->labels_, 1);
                  self->core_->log(LogLevel::kWarning, "item " + a->id + " moved to the dead letters after " +
                                                           std::to_string(a->deliveries) + " deliveries: " + reason);
                  if (!self->dead_listeners_.empty()) {
                    DeadLetter dead{.id = a->id,
                                    .key = self->keys_.dead + a->id,
                                    .value = a->payload(),
                                    .deliveries = a->deliveries,
                                    .reason = std::move(reason),
                                    .since = std::chrono::system_clock::time_point(std::chrono::milliseconds(since)),
                                    .revision = r->header.revision};
                    self->dead_listeners_.notify(a->link->strand(), self->core_->throw_sink(), dead);
                  }
                  out.kind = Outcome::Kind::kDiverted;
                  a->done(std::move(out));
                });
}

void ClaimTake::released(int64_t revision) {
  auto link = core_->link();
  if (!link) return;
  // Before the caller's completion: a receive it makes next comes after.
  asio::post(link->strand(), [self = std::static_pointer_cast<ClaimTake>(shared_from_this()), revision] {
    self->own_writes_ = std::max(self->own_writes_, revision);
  });
}

void ClaimTake::abandoned(const std::string& item, int64_t claim) {
  auto link = core_->link();
  if (!link) return;
  asio::post(link->strand(), [self = std::static_pointer_cast<ClaimTake>(shared_from_this()), item, claim] {
    self->held_.erase(claim);
    self->release_if_orphaned(item);
  });
}

void ClaimTake::end_claims() {
  std::vector<std::shared_ptr<WorkClaim>> live;
  {
    std::lock_guard lock(mu_);
    for (auto& w : live_) {
      if (auto c = w.lock()) live.push_back(std::move(c));
    }
    live_.clear();
  }
  for (auto& c : live) c->end();
}

void ClaimTake::close() {
  std::shared_ptr<OwnPresence> presence;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    presence = presence_;
  }
  end_claims();
  // Revoking the lease deletes our claims: their items are ready again now.
  if (presence) presence->drop(/*for_good=*/true, nullptr);
}

}  // namespace etcd::recipes::detail
