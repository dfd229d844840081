// DistributedReadWriteLock and DistributedSemaphore metrics: the
// uncontended cycle of each, one at a time, measured like lock_cycle_seq
// (paired with put_seq's puts: see measure_sequential_paired).
#include <stdexcept>
#include <string>

#include "bench.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"

namespace bench::metrics_rwlock_semaphore {
namespace {

using etcd::recipes::DistributedReadWriteLock;
using etcd::recipes::DistributedSemaphore;

// More than one permit, so that an acquisition takes the "one of N" path
// rather than the mutex-like N = 1.
constexpr int kSemaphorePermits = 3;

// Uncontended read-lock acquire + release: two etcd writes, two round trips.
double rwlock_read_cycle_seq(Context& ctx) {
  DistributedReadWriteLock rw(ctx.client, Context::key_prefix("rwlock_read_cycle_seq") + "lock");
  auto& read = rw.read_lock();
  return measure_cycle_paired(ctx, [&] {
    read.acquire().timeout(kCallBound).wait().value();
    if (!read.release().timeout(kCallBound).wait().value()) throw std::runtime_error("rwlock_read_cycle_seq: release reported a lost hold");
  });
}

// Uncontended acquire + release of one of 3 permits: two etcd writes, two
// round trips. release().timeout(kCallBound).wait() on the permit, which surfaces an
// error into `false`.
double semaphore_cycle_seq(Context& ctx) {
  DistributedSemaphore sem(ctx.client, Context::key_prefix("semaphore_cycle_seq") + "sem", kSemaphorePermits);
  return measure_cycle_paired(ctx, [&] {
    auto permit = sem.acquire().timeout(kCallBound).wait().value();
    if (!permit.release().timeout(kCallBound).wait().value()) {
      throw std::runtime_error("semaphore_cycle_seq: release reported a lost permit");
    }
  });
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "rwlock_read_cycle_seq", .unit = "cycles/s", .order = 430, .run = rwlock_read_cycle_seq},
    {.name = "semaphore_cycle_seq", .unit = "cycles/s", .order = 440, .run = semaphore_cycle_seq},
});

}  // namespace
}  // namespace bench::metrics_rwlock_semaphore
