// DistributedSemaphore: a contender driver for the engine
// (core/contender.h) — the holders layout's (here) or the ordered one's
// (ordered_semaphore.h). Key layouts and waiting rules: semaphore.h.
#include "etcd/recipes/semaphore.h"

#include <algorithm>
#include <atomic>

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
  SemaphoreHoldersDriver(std::shared_ptr<RecipeCore> core_in, PermitCount permits)
      : core(std::move(core_in)),
        count(std::move(permits)),
        scope(core->name() + "/"),
        holders(dir_under(core->name(), semaphore_keys::kHolders)),
        labels_{{"semaphore", core->name()}} {}

  const std::shared_ptr<RecipeCore> core;
  const PermitCount count;
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
    Txn checked;
    checked.when({Compare::value(count.key) == count.stored, Compare::absent(key)})
        .then({put_key, Op::get(holders, newest())})
        .otherwise({Op::get(count.key), Op::get(key, GetOptions{.keys_only = true})});
    Txn txn;
    txn.when({Compare::absent(count.key), Compare::absent(key)})
        .then({Op::put(count.key, count.stored), put_key, Op::get(holders, newest())})
        .otherwise(Op::txn(std::move(checked)));
    return txn;
  }

  Created created(const TxnResponse& r) override {
    Created c;
    const GetResponse* newest_keys;
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
        c.failure = count.mismatch(stored ? stored->value : std::string("nothing"));
        return c;
      }
      newest_keys = &inner.responses[1].get();
    }
    c.rev = r.header.revision;
    // Our key is the newest: it holds iff there are at most N keys.
    const int64_t at = r.header.revision;
    if (newest_keys->count <= count.n) {
      c.verdict = Verdict{.holds = true, .revision = at};
    } else if (newest_keys->count == count.n + 1) {
      c.verdict = Verdict{.wait = first_waiter(c.rev), .revision = at};
    } else {
      c.verdict = Verdict{.wait = later_waiter(newest_keys->kvs.at(1).key, at + 1), .revision = at};
    }
    return c;
  }

  // At one revision: our key, the first N keys before it, the one just
  // before it, and whether any key follows it.
  Txn read(const std::string& key, int64_t rev) override {
    const GetOptions first_n{.prefix = true,
                             .limit = count.n,
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
                       Op::get(holders, last_before), Op::get(holders, any_after)});
  }

  Verdict judge(const TxnResponse& r, int64_t rev) override {
    const auto& before = r.responses[1].get().kvs;
    const int64_t from = r.header.revision + 1;
    if (static_cast<int64_t>(before.size()) < count.n) {
      return Verdict{.holds = true, .waiters_behind = !r.responses[3].get().kvs.empty()};
    }
    const auto* pred = r.responses[2].get().first();
    if (pred->key == before.back().key) return Verdict{.wait = first_waiter(rev)};
    return Verdict{.wait = later_waiter(pred->key, from)};
  }

  HoldSpec hold_spec() override { return HoldSpec{.noun = "permit", .family = family_, .labels = labels_}; }

  // An admitted waiter that has waiters behind it tells the one just behind
  // it (which watches our key) that it is now the first waiter.
  void held(const std::shared_ptr<HoldState>& hold, const Verdict& v) override {
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

  // The first waiter (exactly N keys before it): any deletion of a key
  // created before ours admits us; if the store moved between the read and
  // the watch, one read tells whether fewer than N keys before ours are left.
  WaitFor first_waiter(int64_t rev) const {
    const GetOptions before{.prefix = true, .limit = count.n, .keys_only = true, .max_create_revision = rev - 1};
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
                   .recheck = Recheck{holders, before, [n = count.n](const GetResponse& g) {
                                        return static_cast<int64_t>(g.kvs.size()) < n;
                                      }}};
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
};

// What the facade keeps: the permit count, the layout's contender driver,
// and where its holds are counted.
class SemaphoreDriver {
 public:
  SemaphoreDriver(std::shared_ptr<RecipeCore> core_in, int permits)
      : core(std::move(core_in)),
        ordered(core->options().contender_layout == ContenderLayout::kOrdered),
        count{permits, key_under(core->name(), semaphore_keys::kPermits),
              std::to_string(permits) + std::string(ordered ? semaphore_keys::kOrderedSuffix : "")},
        held(dir_under(core->name(), ordered ? semaphore_keys::kSlots : semaphore_keys::kHolders)),
        contender(ordered ? ordered_semaphore_driver(core, count)
                          : std::static_pointer_cast<ContenderDriver>(
                                std::make_shared<SemaphoreHoldersDriver>(core, count))) {}

  const std::shared_ptr<RecipeCore> core;
  const bool ordered;
  const PermitCount count;
  // The prefix of the keys that take a permit: holders and waiters (the
  // holders layout), or the permits (the ordered one).
  const std::string held;
  const std::shared_ptr<ContenderDriver> contender;
};

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
      Txn().then({Op::get(d->count.key), Op::get(d->held, GetOptions{.prefix = true, .count_only = true})}));
  return detail::then_call<int>(std::move(call), std::move(link), [d](Result<TxnResponse> r) -> Result<int> {
    if (!r.ok()) return d->core->named(std::move(r).status());
    const auto* stored = r->responses[0].get().first();
    if (stored && stored->value != d->count.stored) return d->core->named(d->count.mismatch(stored->value));
    const int64_t used = r->responses[1].get().count;
    return static_cast<int>(std::max<int64_t>(0, d->count.n - used));
  });
}

Hold DistributedSemaphore::acquire_blocking() { return acquire().wait().value(); }

std::optional<Hold> DistributedSemaphore::try_acquire_until_steady(Deadline deadline) {
  auto r = acquire().deadline(deadline).wait();
  if (r.ok()) return std::move(r).value();
  if (r.status().code() == StatusCode::kDeadlineExceeded) return std::nullopt;
  throw Error(std::move(r).status());
}

int DistributedSemaphore::permits() const { return driver_->count.n; }

}  // namespace etcd::recipes
