// lock, semaphore, rwlock: hold a lock (or a permit) while a command runs,
// in the style of `etcdctl lock NAME [CMD]`, with the contract of hold.h.

#include <memory>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "etcd/session.h"
#include "hold.h"

namespace etcd_cli {
namespace {

constexpr const char* kLockKeyEnv = "ETCD_RECIPES_LOCK_KEY";
constexpr const char* kPermitKeyEnv = "ETCD_RECIPES_PERMIT_KEY";

// Holds `acquire()` of a recipe (a mutex, a side of a rwlock, a semaphore)
// kept alive by `recipe`.
template <class Recipe, class Acquire>
Holdable holdable(std::shared_ptr<Recipe> recipe, Acquire acquire) {
  return Holdable{.acquire =
                      [r = recipe.get(), acquire](std::optional<etcd::Deadline> deadline, std::stop_token stop) {
                        return bounded(acquire(*r), deadline, std::move(stop)).wait();
                      },
                  .recipe = std::move(recipe)};
}

void add_lock(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto* cmd = commands.root().add_subcommand(
      "lock",
      "Acquire the distributed lock NAME (compatible with `etcdctl lock NAME`), run CMD while holding it, release it");
  cmd->add_option("name", a->name, "The lock's name (a key prefix)")->required()->check(name_validator("lock"));
  add_hold_options(cmd, *a, "the lock");
  cmd->footer(hold_footer("the lock", kLockKeyEnv));
  commands.on_run(cmd, [a](Context& ctx) {
    return hold_with_session(ctx, *a, {"lock " + a->name, "the lock", kLockKeyEnv},
                             [&](etcd::Client client, etcd::recipes::RecipeOptions options) {
                               return holdable(std::make_shared<etcd::recipes::DistributedMutex>(
                                                   std::move(client), a->name, std::move(options)),
                                               [](etcd::recipes::DistributedMutex& m) { return m.acquire(); });
                             });
  });
}

void add_semaphore(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto permits = std::make_shared<int>(0);
  auto* cmd = commands.root().add_subcommand(
      "semaphore",
      "Acquire one of the N permits of the distributed semaphore NAME, run CMD while holding it, release it");
  cmd->add_option("name", a->name, "The semaphore's name (a key prefix)")
      ->required()
      ->check(name_validator("semaphore"));
  cmd->add_option("permits", *permits, "N: how many holders at most; every user of NAME must give the same N")
      ->required()
      ->check(int_range(1, INT32_MAX));
  add_hold_options(cmd, *a, "a permit");
  cmd->footer(hold_footer("the permit", kPermitKeyEnv) +
              "\n\nN is stored once in NAME/permits (without a lease, it stays); a different N is refused (exit 1) "
              "until that key is deleted while nobody uses the semaphore.");
  commands.on_run(cmd, [a, permits](Context& ctx) {
    return hold_with_session(ctx, *a, {"semaphore " + a->name, "the permit", kPermitKeyEnv},
                             [&](etcd::Client client, etcd::recipes::RecipeOptions options) {
                               return holdable(std::make_shared<etcd::recipes::DistributedSemaphore>(
                                                   std::move(client), a->name, *permits, std::move(options)),
                                               [](etcd::recipes::DistributedSemaphore& s) { return s.acquire(); });
                             });
  });
}

void add_rwlock(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto mode = std::make_shared<std::string>();
  auto* cmd = commands.root().add_subcommand(
      "rwlock",
      "Acquire the distributed read/write lock NAME for reading (shared) or writing (exclusive; queued writers go "
      "before later readers), run CMD while holding it, release it");
  cmd->add_option("name", a->name, "The lock's name (a key prefix)")->required()->check(name_validator("lock"));
  cmd->add_option("mode", *mode, "read or write")->required()->check(CLI::IsMember({"read", "write"}));
  add_hold_options(cmd, *a, "the lock");
  cmd->footer(hold_footer("the lock", kLockKeyEnv) +
              "\n\nEvery holder gets a fencing token of its own, readers too: readers that hold at once have "
              "different tokens, none of which excludes another. A reader's token is greater than the token of "
              "every write lock released before it was acquired and smaller than that of every later write lock; "
              "a resource that remembers the highest write token it saw should accept any token above it from "
              "readers.");
  commands.on_run(cmd, [a, mode](Context& ctx) {
    const bool write = *mode == "write";
    return hold_with_session(ctx, *a, {"rwlock " + a->name + " " + *mode, cat("the ", *mode, " lock"), kLockKeyEnv},
                             [&](etcd::Client client, etcd::recipes::RecipeOptions options) {
                               return holdable(std::make_shared<etcd::recipes::DistributedReadWriteLock>(
                                                   std::move(client), a->name, std::move(options)),
                                               [write](etcd::recipes::DistributedReadWriteLock& rw) {
                                                 return write ? rw.write_lock().acquire() : rw.read_lock().acquire();
                                               });
                             });
  });
}

}  // namespace

void add_lock_commands(Commands& commands) {
  add_lock(commands);
  add_semaphore(commands);
  add_rwlock(commands);
}

}  // namespace etcd_cli
