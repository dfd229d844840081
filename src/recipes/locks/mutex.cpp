// DistributedMutex: the Go layout's driver (core/lowest_key.h) for the contender
// engine (core/contender.h), and a slot for its current hold.
#include "etcd/recipes/mutex.h"

#include "../core/lowest_key.h"
#include "../core/recipe_core.h"

namespace etcd::recipes {

namespace detail {

// The Go mutex layout (core/lowest_key.h), plus the slot that keeps the
// mutex's current hold.
class MutexDriver : public LowestKeyDriver {
 public:
  explicit MutexDriver(const std::shared_ptr<RecipeCore>& core_in)
      : LowestKeyDriver(core_in, LowestKeySettings{.noun = "lock",
                                                   .family = "lock",
                                                   .labels = {{"lock", core_in->name()}},
                                                   .value = [id = core_in->client_id()] { return id; }}),
        slot(std::make_shared<HolderSlot>(core_in)) {}

  const std::shared_ptr<HolderSlot> slot;
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
  return detail::acquire_call(driver_->core, driver_, driver_->slot, driver_->core->input());
}

Call<std::optional<Hold>> DistributedMutex::try_acquire() {
  return detail::try_acquire_call(driver_->core, driver_, driver_->slot, driver_->core->input());
}

Call<bool> DistributedMutex::release() {
  auto slot = driver_->slot;
  return driver_->core->call<bool>(
      [slot](CallOptions options, Callback<bool> done) { slot->release(options.caller_waits, std::move(done)); });
}

}  // namespace etcd::recipes
