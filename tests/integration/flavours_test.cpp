// The three flavours of a call (blocking, callback/future, co_await) over
// one core; deadlines; stop_token cancellation; where callbacks run.
#include <pthread.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <coroutine>

#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using FlavoursTest = SingleMemberTest;

// A minimal eager coroutine type, standing in for "whatever coroutine
// framework the user has": Call<T> must be awaitable from it as is.
struct Detached {
  struct promise_type {
    Detached get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

// An executor of the test's own: one thread whose id we know.
struct OwnExecutor {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~OwnExecutor() {
    work.reset();
    thread.join();
  }
};

std::string thread_name() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

TEST_F(FlavoursTest, BlockingCallbackFutureAndCoroutineAgree) {
  ASSERT_TRUE(client().put(key("f"), "v").wait().ok());

  auto blocking = client().get(key("f")).wait();
  ASSERT_TRUE(blocking.ok());

  Mailbox<Result<GetResponse>> box;
  client().get(key("f")).then([&](Result<GetResponse> r) { box.put(std::move(r)); });
  auto via_callback = box.take();
  ASSERT_TRUE(via_callback.has_value());

  auto via_future = client().get(key("f")).future().get();

  Mailbox<Result<GetResponse>> co_box;
  [](Client& c, std::string k, Mailbox<Result<GetResponse>>& out) -> Detached {
    auto r = co_await c.get(k);
    out.put(std::move(r));
  }(client(), key("f"), co_box);
  auto via_coroutine = co_box.take();
  ASSERT_TRUE(via_coroutine.has_value());

  for (const auto* r : {&blocking, &*via_callback, &via_future, &*via_coroutine}) {
    ASSERT_TRUE(r->ok()) << r->status().to_string();
    EXPECT_EQ((*r)->kvs.at(0).value, "v");
  }
}

TEST_F(FlavoursTest, CallbacksCoroutinesAndWatchesRunOnTheChosenExecutor) {
  OwnExecutor own;
  auto opts = options();
  opts.executor = own.io.get_executor();
  Client c(opts);
  const auto own_id = own.thread.get_id();

  Mailbox<std::thread::id> cb_thread, co_thread, watch_thread;
  auto watcher = c.watch(key("x"), {}, [&](Result<WatchResponse>) { watch_thread.put(std::this_thread::get_id()); });
  ASSERT_TRUE(watcher.wait_created(std::chrono::steady_clock::now() + 5s));
  c.put(key("x"), "1").then([&](Result<PutResponse>) { cb_thread.put(std::this_thread::get_id()); });
  [](Client& cl, std::string k, Mailbox<std::thread::id>& out) -> Detached {
    (void)co_await cl.get(k);
    out.put(std::this_thread::get_id());
  }(c, key("x"), co_thread);

  EXPECT_EQ(cb_thread.take(), own_id);
  EXPECT_EQ(co_thread.take(), own_id);
  EXPECT_EQ(watch_thread.take(), own_id);
  c.close();
}

TEST_F(FlavoursTest, DefaultExecutorIsTheClientsPoolNotAGrpcThread) {
  Mailbox<std::string> name;
  client().get(key("n")).then([&](Result<GetResponse>) { name.put(thread_name()); });
  auto n = name.take();
  ASSERT_TRUE(n.has_value());
  // gRPC names its threads (grpc_global_tim, default-executo, nexting_thread);
  // the client's callback pool names its own.
  EXPECT_EQ(*n, "etcd-callback");
}

// After close() the client's callback pool is gone; a call made then still
// completes (with kClosed) for every flavour: a callback that never ran, a
// coroutine never resumed, would hang the caller's shutdown path.
TEST_F(FlavoursTest, CallsOnAClosedClientStillCompleteInEveryFlavour) {
  Client c(options());
  ASSERT_TRUE(c.put(key("closed"), "v").wait().ok());
  c.close();

  EXPECT_TRUE(c.get(key("closed")).wait().status().is(Errc::kClosed));
  Mailbox<Result<GetResponse>> via_callback;
  c.get(key("closed")).then([&](Result<GetResponse> r) { via_callback.put(std::move(r)); });
  auto r1 = via_callback.take(5s);
  ASSERT_TRUE(r1.has_value()) << "the callback never ran";
  EXPECT_TRUE(r1->status().is(Errc::kClosed)) << r1->status().to_string();

  Mailbox<Result<GetResponse>> via_coroutine;
  [](Client& cl, std::string k, Mailbox<Result<GetResponse>>& out) -> Detached {
    auto r = co_await cl.get(k);
    out.put(std::move(r));
  }(c, key("closed"), via_coroutine);
  auto r2 = via_coroutine.take(5s);
  ASSERT_TRUE(r2.has_value()) << "the coroutine was never resumed";
  EXPECT_TRUE(r2->status().is(Errc::kClosed)) << r2->status().to_string();
}

class ProxiedTest : public SingleMemberTest {
 protected:
  void SetUp() override {
    SingleMemberTest::SetUp();
    proxy_ = etcd::testing::FaultProxy::start(cluster().endpoint(0));
    ClientOptions o;
    o.endpoints = {proxy_->endpoint()};
    o.retry.max_attempts = 1;
    proxied_ = std::make_unique<Client>(o);
    ASSERT_TRUE(proxied_->put(key("warm"), "up").wait().ok());  // connection established
  }
  void TearDown() override {
    proxied_.reset();
    proxy_.reset();
    SingleMemberTest::TearDown();
  }
  std::unique_ptr<etcd::testing::FaultProxy> proxy_;
  std::unique_ptr<Client> proxied_;
};

TEST_F(ProxiedTest, BlockingCallHonoursItsDeadline) {
  proxy_->blackhole();
  const auto start = std::chrono::steady_clock::now();
  auto r = proxied_->get(key("warm")).timeout(300ms).wait();
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().to_string();
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 1500ms);
}

TEST_F(ProxiedTest, AWriteThatTimesOutHasAnUnknownOutcome) {
  proxy_->blackhole();
  auto r = proxied_->put(key("w"), "v").timeout(300ms).wait();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kOutcomeUnknown)) << r.status().to_string();
}

TEST_F(ProxiedTest, StopTokenCancelsAWaitingCall) {
  proxy_->blackhole();
  std::stop_source stop;
  auto fut = proxied_->get(key("warm")).timeout(30s).stop_token(stop.get_token()).future();
  EXPECT_EQ(fut.wait_for(200ms), std::future_status::timeout);
  const auto start = std::chrono::steady_clock::now();
  stop.request_stop();
  ASSERT_EQ(fut.wait_for(2s), std::future_status::ready);
  auto r = fut.get();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);

  std::stop_source already;
  already.request_stop();
  auto pre = proxied_->get(key("warm")).stop_token(already.get_token()).wait();
  EXPECT_EQ(pre.status().code(), StatusCode::kCancelled);
}

TEST_F(ProxiedTest, CloseCancelsInFlightCallsAndRefusesNewOnes) {
  proxy_->blackhole();
  auto fut = proxied_->get(key("warm")).timeout(30s).future();
  EXPECT_EQ(fut.wait_for(100ms), std::future_status::timeout);
  const auto start = std::chrono::steady_clock::now();
  proxied_->close();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  ASSERT_EQ(fut.wait_for(1s), std::future_status::ready);
  EXPECT_TRUE(fut.get().status().is(Errc::kClosed));
  EXPECT_TRUE(proxied_->put(key("x"), "y").wait().status().is(Errc::kClosed));
  proxied_->close();  // idempotent
}

}  // namespace
}  // namespace etcd::test
