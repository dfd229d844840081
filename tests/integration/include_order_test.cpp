// asio first, then the library: a user's file may include in any order.
// Before the build fixed asio's allocation choice for every TU, objects that
// asio allocated in one order and freed in the other made ASan report
// alloc-dealloc-mismatch when the client shut down (heap corruption without
// ASan). This file exercises every asio-backed path of the client (unary
// calls with callbacks and coroutines, the watch and keep-alive streams,
// timers) and shuts the client down.
#include <asio.hpp>
// (the order above is the point of this file)
#include "etcd/client.h"
#include "etcd/task.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using IncludeOrderTest = SingleMemberTest;

TEST_F(IncludeOrderTest, AsioIncludedBeforeTheLibraryShutsDownCleanly) {
  for (int round = 0; round < 3; ++round) {
    Client c(options());
    Mailbox<bool> seen;
    Watcher w = c.watch(key("w"), WatchOptions{}, [&](Result<WatchResponse> r) {
      if (r.ok() && !r->events.empty()) seen.put(true);
    });
    ASSERT_TRUE(w.wait_created(Clock::now() + 5s));
    auto lease = c.lease(std::chrono::seconds(5)).wait();
    ASSERT_TRUE(lease.ok()) << lease.status().to_string();
    ASSERT_TRUE(c.put(key("w"), "v", PutOptions{.lease = lease->id()}).wait().ok());
    ASSERT_TRUE(seen.take(5s).has_value());
    Mailbox<bool> called;
    c.get(key("w")).then([&](Result<GetResponse> r) { called.put(r.ok()); });
    EXPECT_EQ(called.take(5s), true);
    auto task = [](Client cl, std::string k) -> Task<bool> {
      co_await sleep_for(std::chrono::milliseconds(5));
      co_return (co_await cl.get(k)).ok();
    };
    EXPECT_TRUE(sync_wait(task(c, key("w"))));
    // A timer of the user's own on the client's executor, too.
    asio::steady_timer timer(c.executor(), std::chrono::milliseconds(1));
    Mailbox<bool> fired;
    timer.async_wait([&](const std::error_code& ec) { fired.put(!ec); });
    EXPECT_EQ(fired.take(5s), true);
    c.close();
  }
}

}  // namespace
}  // namespace etcd::test
