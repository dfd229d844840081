// DistributedMutex: a contender driver for the engine (core/contender.h) —
// the Go layout's (core/lowest_key.h) or the ordered one's
// (core/ordered_key.h) — and a slot for its current hold.
#include "etcd/recipes/mutex.h"

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
                                                     .value = [id = core->client_id()] { return id; }});
  }
};

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

}  // namespace etcd::recipes
