// A Client's lifetime: the last handle may be dropped anywhere, including
// inside one of its own callbacks, with streams still open.
#include <atomic>
#include <thread>

#include "client/client_access.h"
#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/queue.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using LifecycleTest = SingleMemberTest;

TEST_F(LifecycleTest, TheLastHandleMayBeDroppedInsideItsOwnCallbackWithAWatchOpen) {
  for (int round = 0; round < 20; ++round) {
    auto owned = std::make_unique<Client>(options());
    {
      Watcher w = owned->watch(key("w"), {}, [](Result<WatchResponse>) {});
      ASSERT_TRUE(w.wait_created(Clock::now() + 5s));
    }
    auto lease = owned->lease(10s).wait();  // a kept lease: the keep-alive stream is open too
    ASSERT_TRUE(lease.ok());
    Mailbox<bool> dropped;
    owned->put(key("k"), "v").then([copy = std::make_shared<Client>(*owned), &dropped](Result<PutResponse>) mutable {
      copy.reset();  // the last handle once `owned` is gone: destroyed on the client's own thread
      dropped.put(true);
    });
    lease->detach();
    owned.reset();
    ASSERT_TRUE(dropped.take(10s).has_value()) << "round " << round;
  }
  // Under ASan a stream completing into a destroyed client is reported
  // here or at exit; without it, the test still must not crash or hang.
  EXPECT_TRUE(client().put(key("after"), "ok").wait().ok());
}

// Internal continuations (start_inline) run on gRPC's callback threads, and
// one may hold the last handle (a presence lease's revoke holds its Client).
// close() there must not wait for what it cancelled: the call whose
// continuation runs is itself in flight until it returns (the wait always
// ran out, after 5 s), and gRPC has only a few callback threads for every
// client in the process (two on two cores): two such closes at once stalled
// them all for as long as their waits lasted (barrier tests, after sixteen
// clients were dropped, saw their next client get nothing done for over a
// minute).
TEST_F(LifecycleTest, TheLastHandleDroppedInsideAGrpcCallbackDoesNotWaitThere) {
  auto owned = std::make_shared<Client>(options());
  {
    Watcher w = owned->watch(key("w"), {}, [](Result<WatchResponse>) {});
    ASSERT_TRUE(w.wait_created(Clock::now() + 5s));
  }  // the watch stream stays open: its last callback is one more for close() to wait for
  struct Released {
    std::thread::id thread;
    Clock::duration took;
  };
  Mailbox<Released> released;
  auto call = owned->get(key("k"));
  // The continuation holds the only handle from the start: dropping it
  // there closes the client on the thread that completed the call.
  detail::CallAccess::start_inline(std::move(call), [copy = std::move(owned), &released](Result<GetResponse>) mutable {
    const auto start = Clock::now();
    copy.reset();
    released.put({std::this_thread::get_id(), Clock::now() - start});
  });
  auto r = released.take(30s);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->thread, std::this_thread::get_id()) << "completed on a gRPC thread, not inline here";
  EXPECT_LT(r->took, 2s) << "close() waited inside the gRPC callback";
  EXPECT_TRUE(client().put(key("after"), "ok").wait().ok());
}

// A recipe's close() starts its clean-up (here: deleting the counter's
// receipt, the queue's producer key) without waiting; the client's close()
// right after must still send it and wait for it, or a short-lived program
// leaves the key behind. Many rounds: the loss was a race.
TEST_F(LifecycleTest, CleanUpStartedByARecipesCloseIsDoneBeforeTheClientsCloseReturns) {
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    Client other(options());
    {
      recipes::DistributedAtomicLong counter(other, key("counter"));
      ASSERT_TRUE(counter.add(1).wait().ok()) << "round " << round;
    }
    other.close();
    auto left = client().get(key("counter/receipts/"), GetOptions{.prefix = true, .keys_only = true}).wait();
    ASSERT_TRUE(left.ok());
    ASSERT_TRUE(left->kvs.empty()) << "round " << round << ": " << left->kvs.front().key << " left behind";
  }
  EXPECT_EQ(client().get(key("counter")).wait().value().kvs.at(0).value, std::to_string(kRounds));
}

TEST_F(LifecycleTest, AQueueProducersKeyIsDeletedBeforeTheClientsCloseReturns) {
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    Client other(options());
    {
      recipes::DistributedQueue queue(other, key("queue"));
      ASSERT_TRUE(queue.enqueue("x").wait().ok()) << "round " << round;
    }
    other.close();
    auto left = client().get(key("queue/producers/"), GetOptions{.prefix = true, .keys_only = true}).wait();
    ASSERT_TRUE(left.ok());
    ASSERT_TRUE(left->kvs.empty()) << "round " << round << ": " << left->kvs.front().key << " left behind";
  }
}

}  // namespace
}  // namespace etcd::test
