// lock, semaphore, rwlock: hold a lock (or a permit) while a command runs,
// in the style of `etcdctl lock NAME [CMD]`, with the contract of hold.h.

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/multi_lock.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "etcd/session.h"
#include "hold.h"
#include "recipe_actions.h"

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

// `lock NAME...`: CLI11 gives every positional word to `names` (CMD's
// words too): the words after -- are CMD.
std::vector<std::string> split_lock_names(std::vector<std::string>& names, HoldArgs& a) {
  const std::size_t cmd_words = std::min(words_after_dashes(), names.size() - 1);
  a.command.assign(names.end() - static_cast<std::ptrdiff_t>(cmd_words), names.end());
  names.resize(names.size() - cmd_words);
  for (const auto& n : names) {
    if (auto st = etcd::recipes::validate_name("lock", n); !st.ok()) throw UsageError("lock: " + st.message());
  }
  if (names.size() > 1 && !command_line_has_dashes()) {
    // Words after a name without --: CMD's (as for every hold command), or
    // more names, which -- must end.
    throw UsageError("lock: put -- before the command: " + std::string(kProgram) +
                     " lock NAME -- CMD [ARGS...]; several names are held as one when -- ends them: " +
                     std::string(kProgram) + " lock NAME NAME... -- [CMD [ARGS...]]");
  }
  return names;
}

// `lock --revoke NAME`: asks the holder to release; exit 0 if one was asked,
// 1 if the lock is free.
int revoke_lock(Context& ctx, const std::string& name) {
  etcd::recipes::DistributedMutex mutex(ctx.client(), name);
  auto asked = mutex.request_release().timeout(ctx.timeout()).stop_token(ctx.stop()).wait();
  if (!asked.ok()) throw Failure("lock " + name, asked.status());
  if (!*asked) {
    std::cerr << kProgram << ": lock " << name << ": nobody holds it" << std::endl;
    return kExitFailed;
  }
  std::cerr << kProgram << ": lock " << name << ": asked the holder to release" << std::endl;
  return kExitOk;
}

// `lock --force-release NAME`: deletes the current holder's key, guarded
// on its fencing token (recipe_actions.h); exit 0 if it was deleted, 1 if
// the lock is free or changed hands meanwhile.
int force_release_lock(Context& ctx, const std::string& name) {
  etcd::GetOptions first{.prefix = true,
                         .limit = 1,
                         .sort_order = etcd::SortOrder::kAscend,
                         .sort_target = etcd::SortTarget::kCreate};
  auto got = check(ctx.client().get(name + "/", first).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(),
                   "lock --force-release " + name);
  if (got.kvs.empty()) {
    std::cerr << kProgram << ": lock " << name << ": nobody holds it" << std::endl;
    return kExitFailed;
  }
  const ActionOutcome done = force_release(ctx, name, got.kvs.front().key, got.kvs.front().create_revision);
  std::cerr << kProgram << ": lock " << name << ": " << done.message << std::endl;
  return done.done ? kExitOk : kExitFailed;
}

void add_lock(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto names = std::make_shared<std::vector<std::string>>();
  auto revoke = std::make_shared<bool>(false);
  auto* cmd = commands.root().add_subcommand(
      "lock",
      "Acquire the distributed lock NAME (compatible with `etcdctl lock NAME`), run CMD while holding it, release it; "
      "several names (ended by --) are held as one, without deadlock whatever their order");
  // Checked after the split (CMD's words land here too).
  cmd->add_option("name", *names, "The lock's name (a key prefix); several: held as one (a multi-lock)")->required();
  add_hold_options(cmd, *a, "the lock");
  cmd->add_flag("--release-on-request", a->release_on_request,
                "When another process asks the holder to release (lock --revoke NAME), stop CMD as a loss would "
                "(SIGTERM, SIGKILL after --kill-after), then release; exit with CMD's status. With several names, "
                "a request for any of them releases all");
  cmd->add_flag("--revoke", *revoke,
                "Ask the current holder of NAME to release (it hears of it; a holder run with --release-on-request "
                "stops its CMD and releases) and exit: 0 if a holder was asked, 1 if NAME is free. Takes no CMD");
  auto force = std::make_shared<bool>(false);
  cmd->add_flag("--force-release", *force,
                "Delete the key of NAME's current holder (only if it is still the same hold: guarded on its token) "
                "and exit: the holder loses the lock at once. 0 if deleted, 1 if NAME is free or changed hands. "
                "Takes no CMD")
      ->excludes("--revoke");
  cmd->footer(hold_footer("the lock", kLockKeyEnv) +
              "\n\nSeveral names (lock A B C -- CMD) are taken in one global order (sorted), so two commands sharing "
              "names never deadlock; CMD gets ETCD_RECIPES_FENCING_TOKENS (each name's token, space-separated), "
              "ETCD_RECIPES_LOCK_KEYS and ETCD_RECIPES_LOCK_NAMES (one per line), all in that order. Losing any name "
              "stops CMD (exit 75).");
  commands.on_run(cmd, [a, names, revoke, force](Context& ctx) {
    auto list = split_lock_names(*names, *a);
    if (*force) {
      if (list.size() != 1 || !a->command.empty()) throw UsageError("lock --force-release: one NAME and no CMD");
      return force_release_lock(ctx, list.front());
    }
    if (*revoke) {
      if (list.size() != 1 || !a->command.empty()) throw UsageError("lock --revoke: one NAME and no CMD");
      return revoke_lock(ctx, list.front());
    }
    a->name = list.front();
    if (list.size() > 1) {
      std::string joined;
      for (const auto& n : list) joined += (joined.empty() ? "" : " ") + n;
      return hold_with_session(
          ctx, *a, {"lock " + joined, "the locks", kLockKeyEnv},
          [&](etcd::Client client, etcd::recipes::RecipeOptions options) {
            auto lock = std::make_shared<etcd::recipes::MultiLock>(std::move(client), list, std::move(options));
            return Holdable{.acquire = nullptr,
                            .recipe = lock,
                            .acquire_multi = [l = lock.get()](std::optional<etcd::Deadline> deadline,
                                                              std::stop_token stop) {
                              return bounded(l->acquire(), deadline, std::move(stop)).wait();
                            }};
          });
    }
    return hold_with_session(ctx, *a, {"lock " + a->name, "the lock", kLockKeyEnv},
                             [&](etcd::Client client, etcd::recipes::RecipeOptions options) {
                               return holdable(std::make_shared<etcd::recipes::DistributedMutex>(
                                                   std::move(client), a->name, std::move(options)),
                                               [](etcd::recipes::DistributedMutex& m) { return m.acquire(); });
                             });
  });
}

// `semaphore NAME N --resize`: N becomes the permit count for everyone.
int resize_semaphore(Context& ctx, const std::string& name, int permits) {
  etcd::recipes::DistributedSemaphore semaphore(ctx.client(), name, permits);
  auto resized = semaphore.resize(permits).timeout(ctx.timeout()).stop_token(ctx.stop()).wait();
  if (!resized.ok()) throw Failure("semaphore " + name + " --resize", resized.status());
  std::cerr << kProgram << ": semaphore " << name << ": " << permits << " permits" << std::endl;
  return kExitOk;
}

void add_semaphore(Commands& commands) {
  auto a = std::make_shared<HoldArgs>();
  auto permits = std::make_shared<int>(0);
  auto resize = std::make_shared<bool>(false);
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
  cmd->add_flag("--resize", *resize,
                "Make N the permit count of NAME for everyone using it and exit (no CMD): growing admits waiters at "
                "once; shrinking revokes no permit, but admits nobody until fewer than N hold");
  cmd->footer(hold_footer("the permit", kPermitKeyEnv) +
              "\n\nN is stored once in NAME/permits (without a lease, it stays); a different N is refused (exit 1) "
              "until that key is deleted while nobody uses the semaphore, or until --resize changes it: a resized "
              "count is then taken by every user, whatever N it gives.");
  commands.on_run(cmd, [a, permits, resize](Context& ctx) {
    if (*resize) {
      if (!a->command.empty()) throw UsageError("semaphore --resize: NAME N and no CMD");
      return resize_semaphore(ctx, a->name, *permits);
    }
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
