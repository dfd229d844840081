// DistributedMutex: a contender driver for the engine (core/contender.h) —
// the Go layout's (core/lowest_key.h) or the ordered one's
// (core/ordered_key.h) — and a slot for its current hold.
#include "etcd/recipes/mutex.h"

#include "../core/calls.h"
#include "../core/lowest_key.h"
#include "../core/ordered_key.h"
#include "../core/recipe_core.h"

namespace etcd::recipes {

namespace detail {

class MutexDriver {
 public:
  explicit MutexDriver(const std::shared_ptr<RecipeCore>& core_in)
      : core(core_in), contender(make_contender(core_in)), slot(std::make_shared<HolderSlot>(core_in)) {}

  const std::shared_ptr<RecipeCore> core;
  const std::shared_ptr<ContenderDriver> contender;
  const std::shared_ptr<HolderSlot> slot;

 private:
  static std::shared_ptr<ContenderDriver> make_contender(const std::shared_ptr<RecipeCore>& core) {
    return lowest_key_driver(core, LowestKeySettings{.noun = "lock",
                                                     .family = "lock",
                                                     .labels = {{"lock", core->name()}},
                                                     .value = [id = core->client_id()] { return id; },
                                                     .release_requests = true});
  }
};

namespace {

// One attempt of request_release(): read the holder (the lowest create
// revision under NAME/), then mark its key unless it changed meanwhile.
void ask_mutex_holder(std::shared_ptr<RecipeCore> core, std::shared_ptr<ClientLink> link, CallOptions options,
                      Callback<bool> done) {
  const std::string prefix = core->name() + "/";
  auto read = link->client().get(prefix, GetOptions{.prefix = true,
                                                    .limit = 1,
                                                    .sort_order = SortOrder::kAscend,
                                                    .sort_target = SortTarget::kCreate});
  CallAccess::start_inherited(
      std::move(read), options,
      [core, link, options, done = std::move(done)](Result<GetResponse> r) mutable {
        if (!r.ok()) return done(core->named(std::move(r).status()));
        const KeyValue* holder = r->first();
        if (!holder) return done(false);
        if (is_release_request(holder->value)) return done(true);
        Txn mark;
        mark.when(Compare::create_revision(holder->key) == holder->create_revision,
                  Compare::mod_revision(holder->key) == holder->mod_revision)
            .then(Op::put(holder->key, holder->value + std::string(kReleaseRequestMark),
                          PutOptions{.ignore_lease = true}));
        CallAccess::start_inherited(link->client().txn(std::move(mark)), options,
                                    [core, link, options, done = std::move(done)](Result<TxnResponse> t) mutable {
                                      if (!t.ok()) return done(core->named(std::move(t).status()));
                                      if (t->succeeded) return done(true);
                                      // The holder changed (or released): ask again.
                                      ask_mutex_holder(std::move(core), std::move(link), std::move(options),
                                                       std::move(done));
                                    });
      });
}

}  // namespace

}  // namespace detail

DistributedMutex::DistributedMutex(Client client, std::string name)
    : DistributedMutex(std::move(client), std::move(name), RecipeOptions()) {}

DistributedMutex::DistributedMutex(Client client, std::string name, RecipeOptions options) {
  auto core =
      std::make_shared<detail::RecipeCore>(std::move(client), "DistributedMutex", std::move(name), std::move(options));
  driver_ = std::make_shared<detail::MutexDriver>(core);
  std::weak_ptr<detail::HolderSlot> slot = driver_->slot;
  core->set_close_action([slot] {
    if (auto s = slot.lock()) s->release(false, [](Result<bool>) {});  // fire and forget
  });
  bind_recipe(core);
  bind_holder(driver_->slot);
}

Call<Hold> DistributedMutex::acquire() {
  return detail::acquire_call(driver_->core, driver_->contender, driver_->slot, driver_->core->input());
}

Call<std::optional<Hold>> DistributedMutex::try_acquire() {
  return detail::try_acquire_call(driver_->core, driver_->contender, driver_->slot, driver_->core->input());
}

Call<bool> DistributedMutex::release() {
  auto slot = driver_->slot;
  return driver_->core->call<bool>(
      [slot](CallOptions options, Callback<bool> done) { slot->release(options.caller_waits, std::move(done)); });
}

Call<bool> DistributedMutex::request_release() {
  auto core = driver_->core;
  return core->call<bool>([core](CallOptions options, Callback<bool> done) {
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) return done(st);
    detail::ask_mutex_holder(core, std::move(link), std::move(options), std::move(done));
  });
}

Subscription DistributedMutex::on_release_requested(std::function<void()> listener) {
  return driver_->slot->release_request_listeners().add(std::move(listener));
}

}  // namespace etcd::recipes
