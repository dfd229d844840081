// A Client's lifetime: the last handle may be dropped anywhere, including
// inside one of its own callbacks, with streams still open.
#include <atomic>

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

}  // namespace
}  // namespace etcd::test
