// DistributedSemaphore: a contender driver for the engine
// (core/contender.h) — the holders layout's (here) or the ordered one's
// (ordered_semaphore.h). Key layouts and waiting rules: semaphore.h.
#include "etcd/recipes/semaphore.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include "../core/calls.h"
#include "../core/contender.h"
#include "../core/key_path.h"
#include "../core/keys.h"
#include "../core/recipe_core.h"
#include "lock_keys.h"
#include "ordered_semaphore.h"
#include "permit_count.h"

namespace etcd::recipes {

namespace detail {

namespace {

// Numbers the permit keys of one client (holders/<lease>-<n>): several
// permits on one session, from one object or from several objects sharing
// the session, need distinct keys. A lease belongs to the one client its
// session was made on, so numbering per client (a service of its core)
// makes every key of that lease unique, whichever clients the semaphores
// use.
struct PermitNumbers {
  std::atomic<uint64_t> last{0};

  static uint64_t next(const Session& session) {
    return etcd::detail::ClientAccess::service<PermitNumbers>(session.client(),
                                                              [] { return std::make_shared<PermitNumbers>(); })
               ->last.fetch_add(1) +
           1;
  }
};

Status check_permits(int permits) {
  if (permits < 1) return InvalidArgument("permits must be at least 1, got " + std::to_string(permits));
  return Status();
}

}  // namespace

// The holders layout: NAME/holders/<lease>-<seq>, the first N by create
// revision hold.
class SemaphoreHoldersDriver : public ContenderDriver {
 public:
  SemaphoreHoldersDriver(std::shared_ptr<RecipeCore> core_in, std::shared_ptr<PermitCount> permits)
      : core(std::move(core_in)),
        count(std::move(permits)),
        scope(core->name() + "/"),
        holders(dir_under(core->name(), semaphore_keys::kHolders)),
        labels_{{"semaphore", core->name()}} {}

  const std::shared_ptr<RecipeCore> core;
  const std::shared_ptr<PermitCount> count;
  const std::string scope;
  const std::string holders;

  std::string key(const Session& s) override {
    return holders + lease_hex(s.lease_id()) + "-" + std::to_string(PermitNumbers::next(s));
  }
  bool claims_key() const override { return false; }  // unique by its sequence number
  std::string batch_scope() const override { return scope; }

  // One round trip: store the permit count if absent (or check it), create
  // our key if absent, and read the two newest keys and the number of keys.
  // Create-if-absent (our key is new to this acquisition), so it is safe to
  // send again after an unknown outcome and to share a group commit.
  Txn create(const std::string& key, int64_t lease) override {
    const Op put_key = Op::put(key, core->client_id(), PutOptions{.lease = lease});
    // The count this Txn compares and judges by: created() must use the
    // same one, whatever a concurrent resize made this object adopt.
    const int n = count->n();
    Txn checked;
    checked.when({Compare::value(count->key) == count->text(n), Compare::absent(key)})
        .then({put_key, Op::get(holders, newest()), Op::get(count->key)})
        .otherwise({Op::get(count->key), Op::get(key, GetOptions{.keys_only = true})});
    Txn txn;
    txn.when({Compare::absent(count->key), Compare::absent(key)})
        .then({Op::put(count->key, count->text(n)), put_key, Op::get(holders, newest())})
        .otherwise(Op::txn(std::move(checked)));
    return txn;
  }

  Created created(const TxnResponse& r) override {
    Created c;
    const GetResponse* newest_keys;
    int n = count->n();
    if (r.succeeded) {
      newest_keys = &r.responses[2].get();
    } else {
      const TxnResponse& inner = r.responses.at(0).txn();
      if (!inner.succeeded) {
        if (const auto* mine = inner.responses[1].get().first()) {
          c.rev = mine->create_revision;  // an earlier attempt created it: read where it stands
          return c;
        }
        const auto* stored = inner.responses[0].get().first();
        if (count->adopt(stored)) {
          c.retry_at = r.header.revision;  // resized: create again, comparing the count adopted
          return c;
        }
        c.failure = count->mismatch(stored ? stored->value : std::string("nothing"));
        return c;
      }
      newest_keys = &inner.responses[1].get();
      // The count compared (read back in the same Txn: this object may
      // have adopted another one since create()).
      if (const auto* stored = inner.responses[2].get().first()) {
        if (auto compared = count->parse(stored->value)) n = *compared;
      }
    }
    c.rev = r.header.revision;
    // Our key is the newest: it holds iff there are at most N keys.
    const int64_t at = r.header.revision;
    if (newest_keys->count <= n) {
      c.verdict = Verdict{.holds = true, .revision = at};
    } else if (newest_keys->count == n + 1) {
      c.verdict = Verdict{.wait = first_waiter(c.rev, at + 1, n), .revision = at};
    } else {
      c.verdict = Verdict{.wait = later_waiter(newest_keys->kvs.at(1).key, at + 1), .revision = at};
    }
    return c;
  }

  // At one revision: our key, the first N keys before it, the one just
  // before it, whether any key follows it, and the permit count.
  Txn read(const std::string& key, int64_t rev) override {
    const GetOptions first_n{.prefix = true,
                             .limit = count->n(),
                             .sort_order = SortOrder::kAscend,
                             .sort_target = SortTarget::kCreate,
                             .keys_only = true,
                             .max_create_revision = rev - 1};
    const GetOptions last_before{.prefix = true,
                                 .limit = 1,
                                 .sort_order = SortOrder::kDescend,
                                 .sort_target = SortTarget::kCreate,
                                 .keys_only = true,
                                 .max_create_revision = rev - 1};
    const GetOptions any_after{.prefix = true, .limit = 1, .keys_only = true, .min_create_revision = rev + 1};
    return Txn().then({Op::get(key, GetOptions{.keys_only = true}), Op::get(holders, first_n),
                       Op::get(holders, last_before), Op::get(holders, any_after), Op::get(count->key)});
  }

  Verdict judge(const TxnResponse& r, int64_t rev) override {
    const auto& before = r.responses[1].get().kvs;
    const int64_t from = r.header.revision + 1;
    const int n = count->at(r.responses[4].get().first());
    const auto* pred = r.responses[2].get().first();
    // `before` holds every key before ours (its limit, the count when the
    // read was sent, was not reached), or the first that many.
    const bool all_before = pred == nullptr || pred->key == before.back().key;
    const auto seen = static_cast<int64_t>(before.size());
    if (all_before && seen < n) {
      forget_first(rev);
      return Verdict{.holds = true, .waiters_behind = !r.responses[3].get().kvs.empty()};
    }
    // A count grown past the read's limit: read again with it.
    if (!all_before && seen < n) return Verdict{};
    // The first waiter stays the first (only holders are before it), also
    // when a shrink leaves more than N of them.
    if ((all_before && seen == n) || was_first(rev)) return Verdict{.wait = first_waiter(rev, from, n)};
    return Verdict{.wait = later_waiter(pred->key, from)};
  }

  Txn leave(const std::string& key, int64_t rev, bool /*first*/) override {
    forget_first(rev);
    return delete_if_created_at(key, rev);
  }

  HoldSpec hold_spec() override { return HoldSpec{.noun = "permit", .family = family_, .labels = labels_}; }

  // An admitted waiter that has waiters behind it tells the one just behind
  // it (which watches our key) that it is now the first waiter.
  void held(const std::shared_ptr<HoldState>& hold, const Verdict& v) override {
    forget_first(hold->spec().token);
    if (!v.waiters_behind) return;
    core->metrics().add("etcd_recipes_semaphore_nudges_total", labels_, 1);
    if (auto link = hold->link())
      nudge(std::move(link), core, hold->spec().key, hold->spec().token, hold->spec().lease, 1);
  }

  const std::string& family() const override { return family_; }
  const Labels& labels() const override { return labels_; }
  std::string waiting_for() const override { return "a permit"; }

 private:
  static GetOptions newest() {
    return GetOptions{.prefix = true,
                      .limit = 2,
                      .sort_order = SortOrder::kDescend,
                      .sort_target = SortTarget::kCreate,
                      .keys_only = true};
  }

  // The acquisitions (by their key's create revision) that were the first
  // waiter: only holders are before them, whatever the count says later.
  bool was_first(int64_t rev) {
    std::lock_guard lock(first_mu_);
    return first_waiters_.contains(rev);
  }
  void forget_first(int64_t rev) {
    std::lock_guard lock(first_mu_);
    first_waiters_.erase(rev);
  }

  // The first waiter (exactly N keys before it): any deletion of a key
  // created before ours admits us; if the store moved between the read and
  // the watch, one read tells whether fewer than N keys before ours are left.
  // A change of the permit count (a resize) wakes it too.
  WaitFor first_waiter(int64_t rev, int64_t from, int n) {
    {
      std::lock_guard lock(first_mu_);
      first_waiters_.insert(rev);
    }
    const GetOptions before{.prefix = true, .limit = n, .keys_only = true, .max_create_revision = rev - 1};
    return WaitFor{.key = holders,
                   .options = WatchOptions{.prefix = true, .prev_kv = true, .filter_puts = true},
                   .relevant =
                       [rev](const WatchResponse& r) {
                         for (const auto& ev : r.events) {
                           // A key after ours (a later waiter giving up) changes nothing.
                           if (!ev.prev_kv || ev.prev_kv->create_revision < rev) return true;
                         }
                         return false;
                       },
                   .recheck = Recheck{holders, before,
                                      [n](const GetResponse& g) { return static_cast<int64_t>(g.kvs.size()) < n; }},
                   .also = WaitFor::Also{count->key, key_changed(count->key, from, /*puts=*/true)}};
  }

  // A later waiter: woken when the key just before ours is deleted (gave
  // up, released) or nudged (admitted, which makes us the first waiter).
  static WaitFor later_waiter(const std::string& pred_key, int64_t from) {
    return WaitFor{.key = pred_key, .recheck = key_changed(pred_key, from, /*puts=*/true)};
  }

  // A put that keeps the key's create revision and lease. Guarded, so it
  // never re-creates a released key; idempotent, so retried when its
  // outcome is unknown.
  static void nudge(std::shared_ptr<ClientLink> link, std::shared_ptr<RecipeCore> core, std::string key, int64_t rev,
                    int64_t lease, int attempt) {
    Txn txn;
    txn.when(Compare::create_revision(key) == rev).then(Op::put(key, core->client_id(), PutOptions{.lease = lease}));
    auto call = link->client().txn(std::move(txn));
    CallAccess::start_inline(std::move(call), [link, core, key, rev, lease, attempt](Result<TxnResponse> r) mutable {
      if (!r.ok() && attempt < 3 && transient(r.status())) {
        return nudge(std::move(link), std::move(core), std::move(key), rev, lease, attempt + 1);
      }
      if (!r.ok()) {
        core->record_error(Status(r.status().code(),
                                  "telling the next waiter (it waits until we release): " + r.status().message(),
                                  r.status().reason()));
      }
    });
  }

  const std::string family_ = "semaphore";
  const Labels labels_;
  std::mutex first_mu_;
  std::set<int64_t> first_waiters_;
};

// What the facade keeps: the permit count, the layout's contender driver,
// and where its holds are counted.
class SemaphoreDriver {
 public:
  SemaphoreDriver(std::shared_ptr<RecipeCore> core_in, int permits)
      : core(std::move(core_in)),
        ordered(core->options().contender_layout == ContenderLayout::kOrdered),
        count(std::make_shared<PermitCount>(key_under(core->name(), semaphore_keys::kPermits), ordered, permits)),
        held(dir_under(core->name(), ordered ? semaphore_keys::kSlots : semaphore_keys::kHolders)),
        contender(ordered ? ordered_semaphore_driver(core, count)
                          : std::static_pointer_cast<ContenderDriver>(
                                std::make_shared<SemaphoreHoldersDriver>(core, count))) {}

  const std::shared_ptr<RecipeCore> core;
  const bool ordered;
  const std::shared_ptr<PermitCount> count;
  // The prefix of the keys that take a permit: holders and waiters (the
  // holders layout), or the permits (the ordered one).
  const std::string held;
  const std::shared_ptr<ContenderDriver> contender;
};

// One attempt of resize(): read NAME/permits, then write the new count
// unless it changed meanwhile (then again). An absent count is stored
// first, then written again: a count with version > 1 is what other
// objects adopt (semaphore.h, "Resizing").
void store_permit_count(std::shared_ptr<SemaphoreDriver> d, std::shared_ptr<ClientLink> link, int permits,
                        CallOptions options, Callback<void> done) {
  auto read = link->client().get(d->count->key);
  CallAccess::start_inherited(
      std::move(read), options,
      [d, link, permits, options, done = std::move(done)](Result<GetResponse> r) mutable {
        if (!r.ok()) return done(d->core->named(std::move(r).status()));
        const KeyValue* stored = r->first();
        if (stored && !d->count->parse(stored->value)) {
          return done(d->core->named(d->count->mismatch(stored->value)));  // the other layout's, or not a count
        }
        const std::string value = d->count->text(permits);
        if (stored && stored->version > 1 && stored->value == value) {
          d->count->adopt(stored);
          return done(Status());
        }
        Txn write;
        write.when(stored ? Compare::mod_revision(d->count->key) == stored->mod_revision : Compare::absent(d->count->key))
            .then(Op::put(d->count->key, value));
        const bool again = !stored;  // a first store has version 1: write it once more
        CallAccess::start_inherited(
            link->client().txn(std::move(write)), options,
            [d, link, permits, options, again, done = std::move(done)](Result<TxnResponse> t) mutable {
              if (!t.ok()) return done(d->core->named(std::move(t).status()));
              if (t->succeeded && !again) {
                d->core->metrics().add("etcd_recipes_semaphore_resizes_total", {{"semaphore", d->core->name()}}, 1);
                const KeyValue written{.value = d->count->text(permits), .version = 2};
                d->count->adopt(&written);
                return done(Status());
              }
              // Changed meanwhile, or stored for the first time: look again.
              store_permit_count(std::move(d), std::move(link), permits, std::move(options), std::move(done));
            });
      });
}

}  // namespace detail

DistributedSemaphore::DistributedSemaphore(Client client, std::string name, int permits)
    : DistributedSemaphore(std::move(client), std::move(name), permits, RecipeOptions()) {}

DistributedSemaphore::DistributedSemaphore(Client client, std::string name, int permits, RecipeOptions options) {
  auto core = std::make_shared<detail::RecipeCore>(std::move(client), "DistributedSemaphore", std::move(name),
                                                   std::move(options), detail::check_permits(permits));
  driver_ = std::make_shared<detail::SemaphoreDriver>(core, permits);
  bind_recipe(core);
}

Call<Hold> DistributedSemaphore::acquire() {
  return detail::acquire_call(driver_->core, driver_->contender, nullptr, driver_->core->input());
}

Call<std::optional<Hold>> DistributedSemaphore::try_acquire() {
  return detail::try_acquire_call(driver_->core, driver_->contender, nullptr, driver_->core->input());
}

Call<int> DistributedSemaphore::available_permits() {
  auto& core = driver_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<int>(st);
  auto d = driver_;
  auto call = link->client().txn(
      Txn().then({Op::get(d->count->key), Op::get(d->held, GetOptions{.prefix = true, .count_only = true})}));
  return detail::then_call<int>(std::move(call), std::move(link), [d](Result<TxnResponse> r) -> Result<int> {
    if (!r.ok()) return d->core->named(std::move(r).status());
    const auto* stored = r->responses[0].get().first();
    if (stored && stored->value != d->count->stored() && !d->count->adopt(stored)) {
      return d->core->named(d->count->mismatch(stored->value));
    }
    const int64_t used = r->responses[1].get().count;
    return static_cast<int>(std::max<int64_t>(0, d->count->n() - used));
  });
}

Call<void> DistributedSemaphore::resize(int permits) {
  auto d = driver_;
  if (Status st = detail::check_permits(permits); !st.ok()) return d->core->ready<void>(d->core->named(std::move(st)));
  return d->core->call<void>([d, permits](CallOptions options, Callback<void> done) {
    auto link = d->core->link();
    if (Status st = d->core->usable(link); !st.ok()) return done(st);
    detail::store_permit_count(d, std::move(link), permits, std::move(options), std::move(done));
  });
}

Hold DistributedSemaphore::acquire_blocking() { return acquire().wait().value(); }

std::optional<Hold> DistributedSemaphore::try_acquire_until_steady(Deadline deadline) {
  auto r = acquire().deadline(deadline).wait();
  if (r.ok()) return std::move(r).value();
  if (r.status().code() == StatusCode::kDeadlineExceeded) return std::nullopt;
  throw Error(std::move(r).status());
}

int DistributedSemaphore::permits() const { return driver_->count->n(); }

}  // namespace etcd::recipes
