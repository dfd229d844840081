// The recipe conformance suite: one lifecycle and error rule for every
// recipe (docs/recipes.md, "Lifecycle"), checked the same way for each.
// Every recipe — today's and each later one — gets an adapter below and a
// line in `Recipes`.
//
// What each adapter supplies:
//   make(client, name, options)   construct (no I/O)
//   operation(recipe)             a Call<void> that needs the recipe (and
//                                 reports its input errors); parks while
//                                 blocked
//   block(client, name)           something that makes operation() wait
//   timed_wait(recipe, d)         the blocking helper with a timeout: true
//                                 if it got there, false when time ran out
//   listen(recipe, fn, client)    registers a listener that calls fn,
//                                 triggers its event, returns the
//                                 subscription (and what must stay alive)
#include <gtest/gtest.h>

#include <any>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>

#include "client/client_access.h"
#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/barrier.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/keyspace_view.h"
#include "etcd/recipes/group_member.h"
#include "etcd/recipes/multi_lock.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/node_cache.h"
#include "etcd/recipes/path_children_cache.h"
#include "etcd/recipes/priority_queue.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "etcd/recipes/service_discovery.h"
#include "etcd/recipes/shared_value.h"
#include "etcd/recipes/transient.h"
#include "etcd/recipes/work_queue.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using namespace std::chrono_literals;
using recipes::DistributedMutex;
using recipes::DistributedPriorityQueue;
using recipes::DistributedQueue;
using recipes::DistributedReadWriteLock;
using recipes::DistributedSemaphore;
using recipes::Hold;
using recipes::LeaderLatch;
using recipes::LeaderObserver;
using recipes::LeaderSelector;
using recipes::LeaderTerm;
using recipes::RecipeOptions;
using recipes::TypedPriorityQueue;
using recipes::TypedQueue;

template <class T>
Call<void> as_void(Call<T> call, Executor ex) {
  auto shared = std::make_shared<Call<T>>(std::move(call));
  return Call<void>(
      [shared](CallOptions options, Callback<void> done) {
        etcd::detail::CallAccess::start_inherited(std::move(*shared), options, [done](Result<T> r) {
          done(r.ok() ? Result<void>() : Result<void>(std::move(r).status()));
        });
      },
      std::move(ex));
}

std::string thread_name() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

// A listener that records where it ran, then throws.
struct ListenerProbe {
  std::promise<std::string> ran;
  std::atomic<bool> fired{false};
  std::function<void()> fn() {
    return [this] {
      if (!fired.exchange(true)) ran.set_value(thread_name());
      throw std::runtime_error("listener-boom");
    };
  }
};

// --- adapters ---------------------------------------------------------------------------

struct MutexAdapter {
  using Recipe = DistributedMutex;
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, std::move(name), std::move(o)); }
  static Call<void> operation(Recipe& r, Client& c) { return as_void(r.acquire(), c.executor()); }
  static std::any block(Client& c, const std::string& name) {
    auto other = std::make_shared<Recipe>(c, name);
    other->lock();
    return other;
  }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) { return r.try_lock_for(d); }
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    Hold h = r.acquire().wait().value();
    auto sub = std::make_shared<Subscription>(r.on_lost([fn](const Status&) { fn(); }));
    (void)c.lease_revoke(h.lease()).wait();
    return sub;
  }
};

// The mutex with the ordered contender layout.
struct OrderedMutexAdapter : MutexAdapter {
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    return Recipe(c, std::move(name), std::move(o));
  }
  static std::any block(Client& c, const std::string& name) {
    RecipeOptions o;
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    auto other = std::make_shared<Recipe>(c, name, o);
    other->lock();
    return other;
  }
};

// A multi-lock of the one name (its name() is then that name).
struct MultiLockAdapter {
  using Recipe = recipes::MultiLock;
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, {std::move(name)}, std::move(o)); }
  static Call<void> operation(Recipe& r, Client& c) { return as_void(r.acquire(), c.executor()); }
  static std::any block(Client& c, const std::string& name) {
    auto other = std::make_shared<DistributedMutex>(c, name);
    other->lock();
    return other;
  }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) { return r.try_lock_for(d); }
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    recipes::MultiHold h = r.acquire().wait().value();
    auto sub = std::make_shared<Subscription>(r.on_lost([fn](const Status&) { fn(); }));
    (void)c.lease_revoke(h.holds().at(0).lease()).wait();
    return sub;
  }
};

template <DistributedReadWriteLock::Mode kMode>
struct RwSideAdapter {
  using Recipe = DistributedReadWriteLock;
  static auto& side(Recipe& r) { return kMode == Recipe::Mode::kRead ? r.read_lock() : r.write_lock(); }
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, std::move(name), std::move(o)); }
  static Call<void> operation(Recipe& r, Client& c) { return as_void(side(r).acquire(), c.executor()); }
  // A writer blocks readers; a reader blocks writers.
  static std::any block(Client& c, const std::string& name) {
    auto other = std::make_shared<Recipe>(c, name);
    if (kMode == Recipe::Mode::kRead) {
      other->write_lock().lock();
    } else {
      other->read_lock().lock();
    }
    return other;
  }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) { return side(r).try_lock_for(d); }
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    Hold h = side(r).acquire().wait().value();
    auto sub = std::make_shared<Subscription>(side(r).on_lost([fn](const Status&) { fn(); }));
    (void)c.lease_revoke(h.lease()).wait();
    return sub;
  }
};

// Both sides of the read-write lock with the ordered contender layout.
template <DistributedReadWriteLock::Mode kMode>
struct OrderedRwSideAdapter : RwSideAdapter<kMode> {
  using Recipe = DistributedReadWriteLock;
  static RecipeOptions ordered() {
    RecipeOptions o;
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    return o;
  }
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    return Recipe(c, std::move(name), std::move(o));
  }
  static std::any block(Client& c, const std::string& name) {
    auto other = std::make_shared<Recipe>(c, name, ordered());
    if (kMode == Recipe::Mode::kRead) {
      other->write_lock().lock();
    } else {
      other->read_lock().lock();
    }
    return other;
  }
};

struct SemaphoreAdapter {
  using Recipe = DistributedSemaphore;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(c, std::move(name), 1, std::move(o));
  }
  static Call<void> operation(Recipe& r, Client& c) { return as_void(r.acquire(), c.executor()); }
  static std::any block(Client& c, const std::string& name) {
    auto other = std::make_shared<Recipe>(c, name, 1);
    return std::make_shared<std::pair<std::shared_ptr<Recipe>, Hold>>(other, other->acquire_blocking());
  }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) { return r.try_acquire_for(d).has_value(); }
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    auto permit = std::make_shared<Hold>(r.acquire_blocking());
    auto sub = std::make_shared<Subscription>(permit->on_lost([fn](const Status&) { fn(); }));
    (void)c.lease_revoke(permit->lease()).wait();
    return std::make_shared<std::pair<std::shared_ptr<Hold>, std::shared_ptr<Subscription>>>(permit, sub);
  }
};

// The semaphore with the ordered layout (a queue and N permit slots).
struct OrderedSemaphoreAdapter : SemaphoreAdapter {
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    return Recipe(c, std::move(name), 1, std::move(o));
  }
  static std::any block(Client& c, const std::string& name) {
    RecipeOptions o;
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    auto other = std::make_shared<Recipe>(c, name, 1, o);
    return std::make_shared<std::pair<std::shared_ptr<Recipe>, Hold>>(other, other->acquire_blocking());
  }
};

struct LatchAdapter {
  using Recipe = LeaderLatch;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(c, std::move(name), "me", std::move(o));
  }
  static Call<void> operation(Recipe& r, Client&) {
    try {
      r.start();
    } catch (const Error&) {
    }
    return r.await_leadership();
  }
  static std::any block(Client& c, const std::string& name) {
    auto other = std::make_shared<Recipe>(c, name, "other");
    other->start();
    if (!other->await_for(10s)) throw std::runtime_error("the blocking latch never led");
    return other;
  }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) {
    r.start();
    return r.await_for(d);
  }
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    r.start();
    if (!r.await_for(10s)) throw std::runtime_error("never led");
    auto sub = std::make_shared<Subscription>(r.on_lost([fn](const Status&) { fn(); }));
    (void)c.lease_revoke(r.hold().lease()).wait();
    return sub;
  }
};

// The latch with the ordered contender layout.
struct OrderedLatchAdapter : LatchAdapter {
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    return Recipe(c, std::move(name), "me", std::move(o));
  }
  static std::any block(Client& c, const std::string& name) {
    RecipeOptions o;
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    auto other = std::make_shared<Recipe>(c, name, "other", o);
    other->start();
    if (!other->await_for(10s)) throw std::runtime_error("the blocking latch never led");
    return other;
  }
};

struct SelectorAdapter {
  using Recipe = LeaderSelector;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(
        c, std::move(name), "me",
        [](std::stop_token stop, LeaderTerm&) {
          while (!stop.stop_requested()) std::this_thread::sleep_for(5ms);
        },
        std::move(o));
  }
  // Its one waiting operation: reading the candidates (it has no waiter of
  // its own: terms run in its callback).
  static Call<void> operation(Recipe& r, Client& c) { return as_void(r.participants(), c.executor()); }
  static constexpr bool kParks = false;
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    auto sub = std::make_shared<Subscription>(r.on_term_end([fn](LeaderSelector::TermEnd, const Status&) { fn(); }));
    r.start();
    for (int i = 0; i < 1000 && !r.is_held(); ++i) std::this_thread::sleep_for(10ms);
    (void)c.lease_revoke(r.hold().lease()).wait();
    return sub;
  }
};

// Recipes whose operation is their first read (the observer, the caches):
// nothing on a live member keeps it from completing, so their waiting tests
// run them against an endpoint where nothing listens, where they keep
// retrying it.
template <class R>
struct FirstReadAdapterOf {
  using Recipe = R;
  static constexpr bool kBlockedByUnreachableEtcd = true;
  static Call<void> operation(Recipe& r, Client&) {
    try {
      r.start();
    } catch (const Error&) {
    }
    return r.wait_initialized();
  }
  static std::any block(Client&, const std::string&) { return {}; }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) {
    r.start();
    auto st = r.wait_initialized().timeout(d).wait().status();
    if (st.ok()) return true;
    if (st.code() == StatusCode::kDeadlineExceeded) return false;
    throw Error(st);
  }
};
struct ObserverAdapter : FirstReadAdapterOf<LeaderObserver> {
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, std::move(name), std::move(o)); }
  static std::any listen(Recipe& r, std::function<void()> fn, Client&) {
    auto sub = std::make_shared<Subscription>(r.on_change([fn](const std::optional<recipes::LeaderInfo>&) { fn(); }));
    r.start();
    return sub;
  }
};

// Queues: a dequeue waits while the queue is empty (nothing to block with);
// prepare() gives it an item where it must succeed.
template <class Q>
struct QueueAdapterOf {
  using Recipe = Q;
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, std::move(name), std::move(o)); }
  static Call<void> operation(Recipe& r, Client& c) { return as_void(r.dequeue(), c.executor()); }
  static std::any block(Client&, const std::string&) { return {}; }
  static void prepare(Client& c, const std::string& name) { (void)c.put(name + "/items/x", "7").wait().value(); }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) { return r.dequeue_for(d).has_value(); }
};

template <class Q>
struct UntypedQueueAdapterOf : QueueAdapterOf<Q> {
  using Recipe = Q;
  // Its only listeners are those of every recipe (errors, connection
  // state), which it has no event of its own to trigger.
  static constexpr bool kListens = false;
  static std::any listen(Recipe&, std::function<void()>, Client&) { return {}; }
};

template <class Q>
struct TypedQueueAdapterOf : QueueAdapterOf<Q> {
  using Recipe = Q;
  // on_poison: a value that does not decode, met by a take.
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    auto sub = std::make_shared<Subscription>(r.on_poison([fn](const std::string&, const Status&) { fn(); }));
    (void)c.put(r.name() + "/items/poison", "not a number").wait().value();
    (void)r.try_dequeue().wait();
    return sub;
  }
};

// Work queues: a receive waits while no item is ready.
template <class Q>
struct WorkQueueAdapterOf {
  using Recipe = Q;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(c, std::move(name), recipes::WorkQueueOptions{.recipe = std::move(o)});
  }
  static Call<void> operation(Recipe& r, Client& c) { return as_void(r.receive(), c.executor()); }
  static std::any block(Client&, const std::string&) { return {}; }
  static void prepare(Client& c, const std::string& name) { (void)c.put(name + "/items/x", "7").wait().value(); }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) { return r.receive_for(d).has_value(); }
  // Its only listeners are those of every recipe.
  static constexpr bool kListens = false;
  static std::any listen(Recipe&, std::function<void()>, Client&) { return {}; }
};
struct WorkQueueAdapter : WorkQueueAdapterOf<recipes::DistributedWorkQueue> {};
struct TypedWorkQueueAdapter : WorkQueueAdapterOf<recipes::TypedWorkQueue<int64_t>> {};
// Transient key/values: creating the key never waits (another owner's key
// is refused at once); on_lost is heard when the key's lease is revoked.
template <class R, class V>
struct TransientAdapterOf {
  using Recipe = R;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(c, std::move(name), V::value(), std::move(o));
  }
  static Call<void> operation(Recipe& r, Client&) { return r.create(); }
  static constexpr bool kParks = false;
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    r.create().wait().value();
    auto sub = std::make_shared<Subscription>(r.on_lost([fn](const Status&) { fn(); }));
    (void)c.lease_revoke(r.lease()).wait();
    return sub;
  }
};
struct TransientText {
  static std::string value() { return "here"; }
};
struct TransientNumber {
  static int64_t value() { return 7; }
};
using TransientAdapter = TransientAdapterOf<recipes::TransientKeyValue, TransientText>;
using TypedTransientAdapter = TransientAdapterOf<recipes::TypedTransientKeyValue<int64_t>, TransientNumber>;
// A counter never parks: its operations are single Txns (and retries).
struct AtomicLongAdapter {
  using Recipe = recipes::DistributedAtomicLong;
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, std::move(name), std::move(o)); }
  static Call<void> operation(Recipe& r, Client& c) { return as_void(r.increment(), c.executor()); }
  static constexpr bool kParks = false;
  static constexpr bool kListens = false;
  static std::any listen(Recipe&, std::function<void()>, Client&) { return {}; }
};
// A gate: waiting parks while another object holds it set.
struct GateAdapter {
  using Recipe = recipes::DistributedBarrier;
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, std::move(name), std::move(o)); }
  static Call<void> operation(Recipe& r, Client&) { return r.wait(); }
  static std::any block(Client& c, const std::string& name) {
    auto setter = std::make_shared<Recipe>(c, name);
    (void)setter->set().wait().value();
    return setter;
  }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) { return r.wait_for(d); }
  // The setter hears of its gate key's lost lease through its state.
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    (void)r.set().wait().value();
    auto sub = std::make_shared<Subscription>(r.on_state_change([fn](ConnectionState s) {
      if (s == ConnectionState::kLost) fn();
    }));
    const int64_t lease = c.get(r.name()).wait().value().kvs.at(0).lease;
    (void)c.lease_revoke(lease).wait();
    return sub;
  }
};
// A lone party of a two-party rendezvous parks.
template <class R>
struct CountedBarrierAdapterOf {
  using Recipe = R;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(c, std::move(name), 2, std::move(o));
  }
  static Call<void> operation(Recipe& r, Client&) {
    if constexpr (requires { r.enter(); }) {
      return r.enter();
    } else {
      return r.wait();
    }
  }
  static std::any block(Client&, const std::string&) { return {}; }
  // A second party, on a client of its own, so that the operation succeeds.
  static void prepare(Client& c, const std::string& name) {
    std::thread([options = c.options(), name] {
      Client other(options);
      Recipe party(other, name, 2);
      (void)operation(party, other).timeout(10s).wait();
    }).detach();
  }
  static bool timed_wait(Recipe& r, std::chrono::milliseconds d) {
    if constexpr (requires { r.enter_for(d); }) {
      return r.enter_for(d);
    } else {
      return r.wait_for(d);
    }
  }
  // Their parties' losses are reported through state() and errors(), as the
  // gate's are (checked there); waiting for one needs a parked party.
  static constexpr bool kListens = false;
  static std::any listen(Recipe&, std::function<void()>, Client&) { return {}; }
};
using CountBarrierAdapter = CountedBarrierAdapterOf<recipes::DistributedBarrierWithCount>;
using DoubleBarrierAdapter = CountedBarrierAdapterOf<recipes::DistributedDoubleBarrier>;
// kInitialized, once the first read is done.
template <class T>
struct NodeCacheAdapterOf : FirstReadAdapterOf<recipes::NodeCache<T>> {
  using Recipe = recipes::NodeCache<T>;
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, std::move(name), std::move(o)); }
  static std::any listen(Recipe& r, std::function<void()> fn, Client&) {
    auto sub = std::make_shared<Subscription>(r.on_change([fn](const recipes::NodeEvent<T>&) { fn(); }));
    r.start();
    return sub;
  }
};
// kAdded, for a child that the first read finds.
template <class T>
struct ChildrenCacheAdapterOf : FirstReadAdapterOf<recipes::TypedPathChildrenCache<T>> {
  using Recipe = recipes::TypedPathChildrenCache<T>;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    recipes::PathChildrenCacheOptions options;
    options.recipe = std::move(o);
    return Recipe(c, std::move(name), std::move(options));
  }
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    (void)c.put(r.path() + "/child", "1").wait().value();
    auto sub = std::make_shared<Subscription>(r.on_event([fn](const recipes::ChildEvent<T>&) { fn(); }));
    r.start();
    return sub;
  }
};
// The view of the prefix NAME/ (so a bad name stays bad: "" stays empty, a
// name ending in '/' ends in "//"); kInitialized once the first read is done.
struct KeyspaceViewAdapter : FirstReadAdapterOf<recipes::KeyspaceView> {
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    recipes::KeyspaceViewOptions options;
    options.recipe = std::move(o);
    return Recipe(c, name.empty() ? name : name + "/", std::move(options));
  }
  static std::string name_of(const std::string& name) { return name + "/*"; }
  static std::any listen(Recipe& r, std::function<void()> fn, Client&) {
    auto sub = std::make_shared<Subscription>(r.on_event([fn](const recipes::KeyspaceEvent&) { fn(); }));
    r.start();
    return sub;
  }
};
// Service discovery. A recipe name "BASE/SERVICE" is split into the base
// path and the service, so that every bad name is bad input.
inline std::pair<std::string, std::string> base_and_service(const std::string& name) {
  const auto slash = name.rfind('/');
  if (slash == std::string::npos) return {std::string(), name};
  return {name.substr(0, slash), name.substr(slash + 1)};
}
inline recipes::ServiceInstance conformance_instance() {
  return recipes::ServiceInstance{.name = "svc", .id = "i1", .address = "127.0.0.1", .port = 1};
}
// A registry never parks: a registration is one Txn (another owner's key is
// refused at once); on_lost is heard when a registration's lease is revoked.
// A change after the first read (a put by someone else).
template <class T>
struct SharedValueAdapterOf : FirstReadAdapterOf<recipes::SharedValue<T>> {
  using Recipe = recipes::SharedValue<T>;
  static Recipe make(Client c, std::string name, RecipeOptions o) { return Recipe(c, std::move(name), std::move(o)); }
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    auto sub =
        std::make_shared<Subscription>(r.on_change([fn](const recipes::SharedValueEvent<T>&) { fn(); }));
    r.start();
    r.wait_initialized().wait().value();
    (void)c.put(r.key(), "5").wait().value();
    return sub;
  }
};
// kJoined for the member itself, once it joined.
struct GroupMemberAdapter : FirstReadAdapterOf<recipes::GroupMember> {
  using Recipe = recipes::GroupMember;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(c, std::move(name), "m", "payload", std::move(o));
  }
  static std::any listen(Recipe& r, std::function<void()> fn, Client&) {
    auto sub = std::make_shared<Subscription>(r.on_change([fn](const recipes::GroupEvent&) { fn(); }));
    r.start();
    return sub;
  }
};
struct RegistryAdapter {
  using Recipe = recipes::ServiceRegistry;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(c, recipes::ServiceRegistryOptions{.base_path = std::move(name), .recipe = std::move(o)});
  }
  static Call<void> operation(Recipe& r, Client&) { return r.register_instance(conformance_instance()); }
  static constexpr bool kParks = false;
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    r.register_instance(conformance_instance()).wait().value();
    auto sub =
        std::make_shared<Subscription>(r.on_lost([fn](const recipes::ServiceInstance&, const Status&) { fn(); }));
    auto kv = c.get(r.key_of(conformance_instance())).wait().value();
    (void)c.lease_revoke(kv.kvs.at(0).lease).wait();
    return sub;
  }
};
// kAdded, for an instance that the first read finds.
struct ServiceCacheAdapter : FirstReadAdapterOf<recipes::ServiceCache> {
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    auto [base, service] = base_and_service(name);
    return Recipe(c, service, recipes::ServiceCacheOptions{.base_path = base, .recipe = std::move(o)});
  }
  static std::any listen(Recipe& r, std::function<void()> fn, Client& c) {
    (void)c.put(r.path() + "/i1", recipes::ServiceInstanceCodec::encode(conformance_instance()).value()).wait().value();
    auto sub = std::make_shared<Subscription>(r.on_event([fn](const recipes::ServiceCache::Event&) { fn(); }));
    r.start();
    return sub;
  }
};
// Its only listeners are those of every recipe.
struct ServiceProviderAdapter : FirstReadAdapterOf<recipes::ServiceProvider> {
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    auto [base, service] = base_and_service(name);
    return Recipe(c, service, recipes::ServiceProviderOptions{.base_path = base, .recipe = std::move(o)});
  }
  static constexpr bool kListens = false;
  static std::any listen(Recipe&, std::function<void()>, Client&) { return {}; }
};
// The facade's own operations are single reads; its listeners are those of
// every recipe.
struct ServiceDiscoveryAdapter {
  using Recipe = recipes::ServiceDiscovery;
  static Recipe make(Client c, std::string name, RecipeOptions o) {
    return Recipe(c, recipes::ServiceDiscoveryOptions{.base_path = std::move(name), .recipe = std::move(o)});
  }
  static Call<void> operation(Recipe& r, Client& c) { return as_void(r.query_names(), c.executor()); }
  static constexpr bool kParks = false;
  static constexpr bool kListens = false;
  static std::any listen(Recipe&, std::function<void()>, Client&) { return {}; }
};
using NodeCacheAdapter = NodeCacheAdapterOf<std::string>;
using TypedNodeCacheAdapter = NodeCacheAdapterOf<int64_t>;
using PathChildrenCacheAdapter = ChildrenCacheAdapterOf<std::string>;
using TypedPathChildrenCacheAdapter = ChildrenCacheAdapterOf<int64_t>;
using QueueAdapter = UntypedQueueAdapterOf<DistributedQueue>;
using TypedQueueAdapter = TypedQueueAdapterOf<TypedQueue<int64_t>>;
// A foreign item (prepare's) is an item of the lowest priority.
using PriorityQueueAdapter = UntypedQueueAdapterOf<DistributedPriorityQueue>;
using TypedPriorityQueueAdapter = TypedQueueAdapterOf<TypedPriorityQueue<int64_t>>;

template <class A>
constexpr bool listens() {
  if constexpr (requires { A::kListens; }) {
    return A::kListens;
  } else {
    return true;
  }
}

template <class A>
constexpr bool parks() {
  if constexpr (requires { A::kParks; }) {
    return A::kParks;
  } else {
    return true;
  }
}

// The client a waiting test uses: the member's, or one whose endpoint
// nobody listens on.
template <class A>
constexpr bool blocked_by_unreachable_etcd() {
  if constexpr (requires { A::kBlockedByUnreachableEtcd; }) {
    return A::kBlockedByUnreachableEtcd;
  } else {
    return false;
  }
}

// --- the suite -------------------------------------------------------------------------

template <class A>
class Conformance : public SingleMemberTest {
 protected:
  Client& waiting_client() {
    if constexpr (!blocked_by_unreachable_etcd<A>()) {
      return this->client();
    } else {
      if (!unreachable_) {
        ClientOptions o;
        o.endpoints = {"127.0.0.1:1"};
        unreachable_ = std::make_unique<Client>(o);
      }
      return *unreachable_;
    }
  }
  void TearDown() override {
    unreachable_.reset();
    SingleMemberTest::TearDown();
  }
  std::unique_ptr<Client> unreachable_;
};

using Recipes = ::testing::Types<
    MutexAdapter, OrderedMutexAdapter, RwSideAdapter<DistributedReadWriteLock::Mode::kRead>,
    RwSideAdapter<DistributedReadWriteLock::Mode::kWrite>, OrderedRwSideAdapter<DistributedReadWriteLock::Mode::kRead>,
    OrderedRwSideAdapter<DistributedReadWriteLock::Mode::kWrite>, SemaphoreAdapter, OrderedSemaphoreAdapter, LatchAdapter,
    OrderedLatchAdapter,
    SelectorAdapter, ObserverAdapter, QueueAdapter, TypedQueueAdapter, PriorityQueueAdapter, TypedPriorityQueueAdapter,
    WorkQueueAdapter, TypedWorkQueueAdapter, TransientAdapter, TypedTransientAdapter, AtomicLongAdapter, GateAdapter,
    CountBarrierAdapter, DoubleBarrierAdapter, NodeCacheAdapter, TypedNodeCacheAdapter, PathChildrenCacheAdapter,
    TypedPathChildrenCacheAdapter, RegistryAdapter, ServiceCacheAdapter, ServiceProviderAdapter,
    ServiceDiscoveryAdapter, KeyspaceViewAdapter, SharedValueAdapterOf<std::string>, SharedValueAdapterOf<int64_t>,
    GroupMemberAdapter, MultiLockAdapter>;
class Names {
 public:
  template <class T>
  static std::string GetName(int i) {
    static const char* names[] = {"Mutex",
                                  "OrderedMutex",
                                  "RwRead",
                                  "RwWrite",
                                  "OrderedRwRead",
                                  "OrderedRwWrite",
                                  "Semaphore",
                                  "OrderedSemaphore",
                                  "LeaderLatch",
                                  "OrderedLeaderLatch",
                                  "LeaderSelector",
                                  "LeaderObserver",
                                  "DistributedQueue",
                                  "TypedQueue",
                                  "DistributedPriorityQueue",
                                  "TypedPriorityQueue",
                                  "DistributedWorkQueue",
                                  "TypedWorkQueue",
                                  "TransientKeyValue",
                                  "TypedTransientKeyValue",
                                  "DistributedAtomicLong",
                                  "DistributedBarrier",
                                  "DistributedBarrierWithCount",
                                  "DistributedDoubleBarrier",
                                  "NodeCache",
                                  "TypedNodeCache",
                                  "PathChildrenCache",
                                  "TypedPathChildrenCache",
                                  "ServiceRegistry",
                                  "ServiceCache",
                                  "ServiceProvider",
                                  "ServiceDiscovery",
                                  "KeyspaceView",
                                  "SharedValue",
                                  "SharedCount",
                                  "GroupMember",
                                  "MultiLock"};
    return names[i];
  }
};
TYPED_TEST_SUITE(Conformance, Recipes, Names);

TYPED_TEST(Conformance, HandlesAreMovableNotCopyable) {
  using R = typename TypeParam::Recipe;
  static_assert(std::is_nothrow_move_constructible_v<R>);
  static_assert(std::is_nothrow_move_assignable_v<R>);
  static_assert(!std::is_copy_constructible_v<R>);
  auto r = TypeParam::make(this->client(), this->key("moved"), RecipeOptions());
  R moved(std::move(r));
  std::string named = this->key("moved");
  if constexpr (requires { TypeParam::name_of(named); }) named = TypeParam::name_of(named);
  EXPECT_EQ(moved.name(), named);
  auto status = TypeParam::operation(moved, this->client()).timeout(200ms).wait().status();
  EXPECT_NE(status.code(), StatusCode::kInvalidArgument) << status.to_string();
  moved.close();
}  // the moved-from object is destroyed safely

TYPED_TEST(Conformance, TheConstructorDoesNoIo) {
  const auto before = this->client().stats().rpcs_started;
  {
    auto r = TypeParam::make(this->client(), this->key("quiet"), RecipeOptions());
    EXPECT_FALSE(r.closed());
    EXPECT_TRUE(r.errors().empty());
  }  // nor does closing a recipe that never started
  EXPECT_EQ(this->client().stats().rpcs_started, before);
}

TYPED_TEST(Conformance, BadInputIsOneErrorAtOnePointBeforeAnyWrite) {
  const auto before = this->client().stats().rpcs_started;
  RecipeOptions zero_ttl;
  zero_ttl.session_ttl = std::chrono::seconds(0);
  struct Case {
    std::string name;
    RecipeOptions options;
  };
  for (const auto& c : {Case{std::string(), {}}, Case{this->key("trailing/"), {}},
                        Case{std::string("nul\0byte", 8), {}}, Case{this->key("ttl"), zero_ttl}}) {
    auto r = TypeParam::make(this->client(), c.name, c.options);  // never throws
    try {
      r.start();
      ADD_FAILURE() << "start() accepted bad input for '" << c.name << "'";
    } catch (const Error& e) {
      EXPECT_TRUE(e.status().is(Errc::kBadArgument)) << e.what();
      EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << e.what();
    }
    auto st = TypeParam::operation(r, this->client()).timeout(2s).wait().status();
    EXPECT_TRUE(st.is(Errc::kBadArgument)) << st.to_string();
    EXPECT_NE(st.message().find(r.identity().substr(0, r.identity().find('['))), std::string::npos)
        << "names the recipe: " << st.message();
  }
  EXPECT_EQ(this->client().stats().rpcs_started, before) << "nothing was sent";
}

TYPED_TEST(Conformance, CloseIsIdempotentWakesParkedWaitersAndRefusesNewWork) {
  if constexpr (!parks<TypeParam>()) GTEST_SKIP() << "no parked waiters";
  const std::string name = this->key("close");
  std::any blocker;
  if constexpr (parks<TypeParam>()) blocker = TypeParam::block(this->client(), name);
  auto r = TypeParam::make(this->waiting_client(), name, RecipeOptions());
  auto parked = TypeParam::operation(r, this->client()).future();
  EXPECT_EQ(parked.wait_for(300ms), std::future_status::timeout) << "it waits while blocked";
  r.close();
  r.close();  // idempotent
  EXPECT_TRUE(r.closed());
  ASSERT_EQ(parked.wait_for(5s), std::future_status::ready);
  auto st = parked.get().status();
  EXPECT_TRUE(st.is(Errc::kClosed)) << st.to_string();
  auto after = TypeParam::operation(r, this->client()).timeout(2s).wait().status();
  EXPECT_TRUE(after.is(Errc::kClosed)) << "use after close: " << after.to_string();
  EXPECT_THROW(r.start(), Error);
}

TYPED_TEST(Conformance, BlockingHelpersGiveFalseOnTimeoutAndThrowOtherwise) {
  if constexpr (!parks<TypeParam>()) {
    GTEST_SKIP() << "no blocking wait";
  } else {
    const std::string name = this->key("timed");
    auto blocker = TypeParam::block(this->client(), name);
    auto r = TypeParam::make(this->waiting_client(), name, RecipeOptions());
    const auto t0 = Clock::now();
    EXPECT_FALSE(TypeParam::timed_wait(r, 300ms));
    EXPECT_GE(Clock::now() - t0, 250ms);
    r.close();
    EXPECT_THROW((void)TypeParam::timed_wait(r, 300ms), Error) << "closed is not a timeout";
  }
}

TYPED_TEST(Conformance, ListenersRunOnTheClientsExecutorAndAThrowIsRecorded) {
  if constexpr (!listens<TypeParam>()) GTEST_SKIP() << "no listener of its own";
  auto r = TypeParam::make(this->client(), this->key("listen"), RecipeOptions());
  ListenerProbe probe;
  auto ran = probe.ran.get_future();
  auto keep = TypeParam::listen(r, probe.fn(), this->client());
  ASSERT_EQ(ran.wait_for(15s), std::future_status::ready) << "the listener never ran";
  EXPECT_EQ(ran.get().rfind("etcd-callback", 0), 0u) << "not on the client's executor";
  ASSERT_TRUE(eventually([&] {
    for (const auto& e : r.errors()) {
      if (e.message().find("listener-boom") != std::string::npos) return true;
    }
    return false;
  }));
  r.close();
}

TYPED_TEST(Conformance, AClosedRecipeLetsGoOfItsClient) {
  const auto baseline = etcd::detail::ClientAccess::core(this->client()).use_count();
  {
    auto r = TypeParam::make(this->client(), this->key("release"), RecipeOptions());
    (void)TypeParam::operation(r, this->client()).timeout(2s).wait();
    r.close();
  }
  EXPECT_TRUE(eventually([&] { return etcd::detail::ClientAccess::core(this->client()).use_count() <= baseline; }, 15s))
      << "still held: " << etcd::detail::ClientAccess::core(this->client()).use_count() << " > " << baseline;
}

// Closed but still in the caller's hands, a recipe holds no share of its
// client: once the work close() started is done, the client goes with the
// caller's last handle, and the recipe answers every later call with
// kClosed without touching it.
TYPED_TEST(Conformance, AClosedRecipeKeptAliveLetsGoOfItsClient) {
  std::weak_ptr<etcd::detail::ClientCore> core;
  std::optional<typename TypeParam::Recipe> r;
  {
    Client c(this->options());
    core = etcd::detail::ClientAccess::core(c);
    r.emplace(TypeParam::make(c, this->key("kept"), RecipeOptions()));
    if constexpr (requires { TypeParam::prepare(c, this->key("kept")); }) TypeParam::prepare(c, this->key("kept"));
    r->start();
    auto st = TypeParam::operation(*r, c).timeout(10s).wait().status();
    EXPECT_TRUE(st.ok()) << st.to_string();
    r->close();
  }  // the caller's Client goes; the recipe stays
  EXPECT_TRUE(eventually([&] { return core.expired(); }, 15s)) << "the closed recipe still holds its client";
  auto after = TypeParam::operation(*r, this->client()).timeout(2s).wait().status();
  EXPECT_TRUE(after.is(Errc::kClosed)) << "use after close: " << after.to_string();
  EXPECT_THROW(r->start(), Error);
  EXPECT_TRUE(r->closed());
  r.reset();  // destroyed after its client: nothing of the client is left to touch
}

}  // namespace
}  // namespace etcd::test
