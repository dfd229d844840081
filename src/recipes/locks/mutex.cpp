// DistributedMutex: a driver for the contender engine (core/contender.h).
#include "etcd/recipes/mutex.h"

#include "../core/contender.h"
#include "../core/keys.h"
#include "../core/recipe_core.h"

namespace etcd::recipes {

namespace detail {

// Key layout of etcd's Go concurrency.Mutex: NAME/<lease hex>; the lowest
// create revision holds; a waiter watches the deletion of the key created
// just before its own.
class MutexDriver : public ContenderDriver {
 public:
  MutexDriver(std::shared_ptr<RecipeCore> core_in)
      : core(std::move(core_in)),
        slot(std::make_shared<HolderSlot>(core)),
        prefix(core->name() + "/"),
        labels_{{"lock", core->name()}} {}

  const std::shared_ptr<RecipeCore> core;
  const std::shared_ptr<HolderSlot> slot;
  const std::string prefix;

  std::string key(const Session& s) override { return prefix + lease_hex(s.lease_id()); }
  std::string batch_scope() const override { return prefix; }

  // One round trip. When nothing is queued under the prefix, our key is the
  // only one and so the lowest: create it, no owner read needed (a Txn with
  // a range read in its branch costs etcd 3.4 measurably more). Otherwise
  // create ours unless it exists (a key of ours whose release did not get
  // through is adopted, as Go's mutex does), and read the owner.
  Txn create(const std::string& key, int64_t lease) override {
    const Op put = Op::put(key, core->client_id(), PutOptions{.lease = lease});
    Txn queued;
    queued.when(Compare::absent(key))
        .then({put, Op::get(prefix, first_created())})
        .otherwise({Op::get(key), Op::get(prefix, first_created())});
    Txn txn;
    txn.when(Compare::create_revision(prefix).with_prefix() == 0).then(put).otherwise(Op::txn(std::move(queued)));
    return txn;
  }

  Created created(const TxnResponse& r) override {
    Created c;
    if (r.succeeded) {  // the prefix was empty: ours is the only key
      c.rev = r.header.revision;
      c.verdict = Verdict{.holds = true, .revision = r.header.revision};
      return c;
    }
    const TxnResponse& inner = r.responses.at(0).txn();
    if (inner.succeeded) {
      c.rev = r.header.revision;
    } else if (const auto* kv = inner.responses[0].get().first()) {
      c.rev = kv->create_revision;
    }
    const auto* first = inner.responses[1].get().first();
    // Not the owner: the engine reads the predecessor before it waits.
    if (c.rev != 0 && first && first->create_revision == c.rev) {
      c.verdict = Verdict{.holds = true, .revision = r.header.revision};
    }
    return c;
  }

  // Our key, and the last key created before it, at one revision.
  Txn read(const std::string& key, int64_t rev) override {
    const GetOptions predecessor{.prefix = true,
                                 .limit = 1,
                                 .sort_order = SortOrder::kDescend,
                                 .sort_target = SortTarget::kCreate,
                                 .keys_only = true,
                                 .max_create_revision = rev - 1};
    return Txn().then({Op::get(key, GetOptions{.keys_only = true}), Op::get(prefix, predecessor)});
  }

  Verdict judge(const TxnResponse& r, int64_t) override {
    const auto* pred = r.responses[1].get().first();
    if (!pred) return Verdict{.holds = true};
    const int64_t from = r.header.revision + 1;
    return Verdict{.wait = WaitFor{.key = pred->key,
                                   .options = WatchOptions{.filter_puts = true},
                                   .recheck = key_changed(pred->key, from, /*puts=*/false)}};
  }

  HoldSpec hold_spec() override { return HoldSpec{.noun = "lock", .family = "lock", .labels = labels_}; }
  const std::string& family() const override { return family_; }
  const Labels& labels() const override { return labels_; }
  std::string waiting_for() const override { return "the lock"; }

 private:
  static GetOptions first_created() {
    return GetOptions{.prefix = true, .limit = 1, .sort_order = SortOrder::kAscend, .sort_target = SortTarget::kCreate};
  }
  const std::string family_ = "lock";
  const Labels labels_;
};

}  // namespace detail

DistributedMutex::DistributedMutex(Client client, std::string name)
    : DistributedMutex(std::move(client), std::move(name), RecipeOptions()) {}

DistributedMutex::DistributedMutex(Client client, std::string name, RecipeOptions options) {
  auto core = std::make_shared<detail::RecipeCore>(std::move(client), "DistributedMutex", std::move(name),
                                                   std::move(options));
  driver_ = std::make_shared<detail::MutexDriver>(core);
  std::weak_ptr<detail::HolderSlot> slot = driver_->slot;
  core->set_close_action([slot] {
    if (auto s = slot.lock()) s->release(false, [](Result<bool>) {});  // fire and forget
  });
  bind_recipe(core);
  bind_holder(driver_->slot);
}

Call<Hold> DistributedMutex::acquire() {
  return detail::acquire_call(driver_->core, driver_, driver_->slot, driver_->core->input());
}

Call<std::optional<Hold>> DistributedMutex::try_acquire() {
  return detail::try_acquire_call(driver_->core, driver_, driver_->slot, driver_->core->input());
}

Call<bool> DistributedMutex::release() {
  auto slot = driver_->slot;
  return Call<bool>([slot](CallOptions options, Callback<bool> done) { slot->release(options.caller_waits, std::move(done)); },
                    driver_->core->client().executor());
}

}  // namespace etcd::recipes
