// Recipes: one object over a client that makes every recipe with the same
// options — client id, session (or session factory, session TTL), metrics —
// so that a service states them once.
//
//   etcd::recipes::RecipeOptions shared;
//   shared.client_id = "billing-7";
//   shared.metrics = my_metrics;
//   etcd::recipes::Recipes recipes(client, shared);
//
//   auto lock = recipes.mutex("/locks/invoices");
//   auto leader = recipes.leader_latch("/elections/billing", "billing-7");
//   auto jobs = recipes.work_queue("/queues/invoices");
//   auto jobs_typed = recipes.typed_work_queue<Invoice, JsonCodec<Invoice>>("/queues/typed");
//   auto limit = recipes.node_cache<std::int64_t>("/config/limit");
//   auto discovery = recipes.discovery();
//
// Each method constructs the recipe and returns it by value: no I/O, the
// recipe's own lifecycle (recipe.h) from there on. The facade keeps no
// recipe and closes none; it holds a share of the client. Recipes whose
// options carry more than RecipeOptions (the work queue, the children
// cache, discovery) take those options too; their `recipe` member is
// replaced by the facade's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "etcd/client.h"
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
#include "etcd/recipes/reaper.h"
#include "etcd/recipes/recipe.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "etcd/recipes/service_discovery.h"
#include "etcd/recipes/shared_value.h"
#include "etcd/recipes/transient.h"
#include "etcd/recipes/work_queue.h"

namespace etcd::recipes {

class Recipes {
 public:
  explicit Recipes(Client client) : Recipes(std::move(client), RecipeOptions()) {}
  Recipes(Client client, RecipeOptions options) : client_(std::move(client)), options_(std::move(options)) {}

  Client& client() { return client_; }
  const RecipeOptions& options() const { return options_; }

  // --- locks ---------------------------------------------------------------------------------
  DistributedMutex mutex(std::string name) { return DistributedMutex(client_, std::move(name), options_); }
  DistributedReadWriteLock read_write_lock(std::string name) {
    return DistributedReadWriteLock(client_, std::move(name), options_);
  }
  DistributedSemaphore semaphore(std::string name, int permits) {
    return DistributedSemaphore(client_, std::move(name), permits, options_);
  }

  // --- leader election ------------------------------------------------------------------------
  LeaderLatch leader_latch(std::string name, std::string value) {
    return LeaderLatch(client_, std::move(name), std::move(value), options_);
  }
  LeaderSelector leader_selector(std::string name, std::string value, LeaderSelector::Callback callback) {
    return LeaderSelector(client_, std::move(name), std::move(value), std::move(callback), options_);
  }
  LeaderSelector leader_selector(std::string name, std::string value, LeaderSelector::StopCallback callback) {
    return LeaderSelector(client_, std::move(name), std::move(value), std::move(callback), options_);
  }
  LeaderObserver leader_observer(std::string name) { return LeaderObserver(client_, std::move(name), options_); }

  // --- queues ----------------------------------------------------------------------------------
  DistributedQueue queue(std::string name) { return DistributedQueue(client_, std::move(name), options_); }
  template <class T, Codec<T> C = DefaultCodec<T>>
  TypedQueue<T, C> typed_queue(std::string name) {
    return TypedQueue<T, C>(client_, std::move(name), options_);
  }
  DistributedPriorityQueue priority_queue(std::string name) {
    return DistributedPriorityQueue(client_, std::move(name), options_);
  }
  template <class T, Codec<T> C = DefaultCodec<T>>
  TypedPriorityQueue<T, C> typed_priority_queue(std::string name) {
    return TypedPriorityQueue<T, C>(client_, std::move(name), options_);
  }
  DistributedWorkQueue work_queue(std::string name) { return work_queue(std::move(name), WorkQueueOptions()); }
  DistributedWorkQueue work_queue(std::string name, WorkQueueOptions options) {
    options.recipe = options_;
    return DistributedWorkQueue(client_, std::move(name), std::move(options));
  }
  template <class T, Codec<T> C = DefaultCodec<T>>
  TypedWorkQueue<T, C> typed_work_queue(std::string name) {
    return typed_work_queue<T, C>(std::move(name), WorkQueueOptions());
  }
  template <class T, Codec<T> C = DefaultCodec<T>>
  TypedWorkQueue<T, C> typed_work_queue(std::string name, WorkQueueOptions options) {
    options.recipe = options_;
    return TypedWorkQueue<T, C>(client_, std::move(name), std::move(options));
  }

  // --- barriers, counter, transient keys -----------------------------------------------------------
  DistributedBarrier barrier(std::string name) { return DistributedBarrier(client_, std::move(name), options_); }
  DistributedBarrierWithCount barrier_with_count(std::string name, int64_t parties) {
    return DistributedBarrierWithCount(client_, std::move(name), parties, options_);
  }
  DistributedDoubleBarrier double_barrier(std::string name, int64_t parties) {
    return DistributedDoubleBarrier(client_, std::move(name), parties, options_);
  }
  DistributedAtomicLong counter(std::string name) { return DistributedAtomicLong(client_, std::move(name), options_); }
  TransientKeyValue transient(std::string key, std::string value) {
    return TransientKeyValue(client_, std::move(key), std::move(value), options_);
  }
  template <class T, Codec<T> C = DefaultCodec<T>>
  TypedTransientKeyValue<T, C> typed_transient(std::string key, T value) {
    return TypedTransientKeyValue<T, C>(client_, std::move(key), std::move(value), options_);
  }

  // --- caches, discovery -------------------------------------------------------------------------
  template <class T = std::string>
  NodeCache<T> node_cache(std::string key) {
    return NodeCache<T>(client_, std::move(key), options_);
  }
  PathChildrenCache path_children_cache(std::string path) {
    return path_children_cache(std::move(path), PathChildrenCacheOptions());
  }
  PathChildrenCache path_children_cache(std::string path, PathChildrenCacheOptions options) {
    options.recipe = options_;
    return PathChildrenCache(client_, std::move(path), std::move(options));
  }
  template <class T, Codec<T> C = DefaultCodec<T>>
  TypedPathChildrenCache<T, C> typed_path_children_cache(std::string path, PathChildrenCacheOptions options) {
    options.recipe = options_;
    return TypedPathChildrenCache<T, C>(client_, std::move(path), std::move(options));
  }
  ServiceDiscovery discovery() { return discovery(ServiceDiscoveryOptions()); }
  ServiceDiscovery discovery(ServiceDiscoveryOptions options) {
    options.recipe = options_;
    return ServiceDiscovery(client_, std::move(options));
  }
  KeyspaceView keyspace_view(std::string key) { return keyspace_view(std::move(key), KeyspaceViewOptions()); }
  KeyspaceView keyspace_view(std::string key, KeyspaceViewOptions options) {
    options.recipe = options_;
    return KeyspaceView(client_, std::move(key), std::move(options));
  }

  // --- shared value, group membership ----------------------------------------------------------------
  template <class T = std::string, Codec<T> C = DefaultCodec<T>>
  SharedValue<T, C> shared_value(std::string key) {
    return SharedValue<T, C>(client_, std::move(key), options_);
  }
  SharedCount shared_count(std::string key) { return SharedCount(client_, std::move(key), options_); }
  GroupMember group_member(std::string group, std::string id, std::string payload) {
    return GroupMember(client_, std::move(group), std::move(id), std::move(payload), options_);
  }

 private:
  Client client_;
  RecipeOptions options_;
};

}  // namespace etcd::recipes
