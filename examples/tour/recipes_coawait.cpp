// The documented co_await forms of the recipes: a mutex hold and its
// guarded write, a semaphore permit, a leader's term. Built by GCC 12 with
// ASan against the installed package (tests/consumer), where temporaries
// destroyed twice inside a co_await expression would show.
#include "etcd/recipes/election.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/semaphore.h"
#include "tour.h"

ETCD_TOUR_TASK(recipes_coawait) {
  // A mutex: the hold, a write guarded by it, the release.
  etcd::recipes::DistributedMutex mutex(client, prefix + "lock");
  etcd::recipes::Hold hold = (co_await mutex.acquire()).value();
  tour::expect(hold.token() > 0 && mutex.is_held(), "the mutex is held, with a fencing token");
  auto written = co_await hold.guarded(etcd::Txn().then(etcd::Op::put(prefix + "owner", "me")));
  tour::expect(written.ok(), "a guarded write while held");
  auto deleted = co_await hold.guarded(etcd::Txn().then(etcd::Op::del(prefix + "owner")));
  tour::expect(deleted.ok(), "a guarded delete while held");
  tour::expect((co_await mutex.release()).value(), "the release reports an intact hold");
  auto refused = co_await hold.guarded(etcd::Txn().then(etcd::Op::put(prefix + "owner", "late")));
  tour::expect(refused.status().is(etcd::Errc::kHoldLost), "a released hold guards nothing");

  // A semaphore permit (a Hold too), released when its last copy goes.
  etcd::recipes::DistributedSemaphore sem(client, prefix + "sem", 2);
  {
    etcd::recipes::Hold permit = (co_await sem.acquire()).value();
    tour::expect((co_await sem.available_permits()).value() == 1, "one of two permits left");
    auto g = co_await permit.guarded(etcd::Txn().then(etcd::Op::put(prefix + "download", "1")));
    tour::expect(g.ok(), "a write guarded by the permit");
    auto none = co_await sem.try_acquire();
    tour::expect(none.ok() && none->has_value(), "the second permit is free");
    tour::expect((co_await (*none)->release()).value(), "released");
  }

  // Leadership: start, await, the term's Hold, proclaim, resign.
  etcd::recipes::LeaderLatch latch(client, prefix + "election", "me");
  latch.start();
  tour::expect((co_await latch.await_leadership()).ok(), "leads");
  etcd::recipes::Hold term = latch.hold();
  tour::expect(term.token() > 0, "the term token");
  tour::expect((co_await latch.proclaim("me, again")).ok(), "proclaims while leading");
  tour::expect((co_await latch.resign()).value(), "resigns with its key intact");
  tour::expect(term.stop_token().stop_requested(), "the term's stop token is requested");
  co_return;
}
