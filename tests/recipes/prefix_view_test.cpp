// The prefix view (src/recipes/core/prefix_view.h) against a real etcd
// member: an initial read plus the watch deliver every write exactly once,
// in revision order, even while writes land during the paged read; after a
// compaction while the client was cut off, the view reports exactly the
// differences; a large prefix loads in pages within seconds.
#include <malloc.h>
#include "client/client_access.h"
#include "recipes/core/recipe_core.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "../../src/recipes/core/prefix_view.h"
#include "etcd/testing/fault_proxy.h"
#include "etcd/txn.h"
#include "support/etcd_fixture.h"
#include "support/view_replay.h"

namespace etcd::test {
namespace {

using recipes::RecipeOptions;
using recipes::detail::PrefixView;
using recipes::detail::RecipeCore;
using recipes::detail::ViewBatch;
using recipes::detail::ViewEntry;
using recipes::detail::ViewEvent;
using recipes::detail::ViewMap;
using Type = ViewEvent::Type;

// Every batch the view delivered, copied, with the view's state after each.
struct Recorder {
  struct Copy {
    ViewBatch::Kind kind;
    int64_t revision;
    std::vector<ViewEvent> events;
    Status cause;
    size_t state_size;
  };
  std::mutex mu;
  std::vector<Copy> batches;
  std::atomic<int> in_handler{0};
  std::atomic<bool> overlapped{false};

  PrefixView::Handler handler() {
    return [this](const ViewBatch& b) {
      if (in_handler.fetch_add(1) != 0) overlapped = true;
      {
        std::lock_guard lock(mu);
        batches.push_back({b.kind, b.revision, b.events, b.cause, b.state->size()});
      }
      in_handler.fetch_sub(1);
    };
  }
  std::vector<Copy> all() {
    std::lock_guard lock(mu);
    return batches;
  }
  size_t count(ViewBatch::Kind kind) {
    std::lock_guard lock(mu);
    return static_cast<size_t>(
        std::count_if(batches.begin(), batches.end(), [&](const Copy& c) { return c.kind == kind; }));
  }
};

// etcd's current content under `prefix`, as a view map, and its revision.
std::pair<ViewMap, int64_t> read_all(Client& c, const std::string& prefix) {
  GetOptions o;
  o.prefix = true;
  auto r = c.get(prefix, o).wait();
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  ViewMap map;
  for (const auto& kv : r->kvs) map[kv.key] = recipes::detail::to_entry(kv);
  return {map, r->header.revision};
}

class PrefixViewTest : public SingleMemberTest {
 protected:
  void SetUp() override {
    SingleMemberTest::SetUp();
    baseline_ = etcd::detail::ClientAccess::core(client()).use_count();
  }
  void TearDown() override {
    // The view lets go of the client once its owner's core is closed.
    EXPECT_TRUE(eventually([&] { return etcd::detail::ClientAccess::core(client()).use_count() <= baseline_; }, 15s))
        << "the view still holds the client";
    SingleMemberTest::TearDown();
  }
  std::shared_ptr<RecipeCore> make_core(Client c) {
    return std::make_shared<RecipeCore>(std::move(c), "PrefixViewTest", prefix_, RecipeOptions());
  }
  long baseline_ = 0;
};

TEST_F(PrefixViewTest, InitialPagedReadAndWatchMissNoWriteUnderConcurrentWriters) {
  const std::string p = key("live/");
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(client().put(p + "k" + std::to_string(i), "0").wait().ok());

  // Writers put, overwrite and delete keys the whole time, including while
  // the view reads its (small) pages; each write is one revision.
  std::mutex mu;
  std::set<int64_t> written;
  struct Writers {
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    void join() {
      stop = true;
      for (auto& t : threads) t.join();
      threads.clear();
    }
    ~Writers() { join(); }
  } writers;
  for (int w = 0; w < 3; ++w) {
    writers.threads.emplace_back([&, w] {
      for (int i = 0; !writers.stop.load(); ++i) {
        const std::string k = p + "k" + std::to_string((i * 7 + w * 101) % 400);
        int64_t rev = 0;
        if (i % 5 == 4) {
          auto r = client().del(k).wait();
          if (r.ok() && r->deleted > 0) rev = r->header.revision;
        } else {
          auto r = client().put(k, std::to_string(w) + ":" + std::to_string(i)).wait();
          if (r.ok()) rev = r->header.revision;
        }
        std::lock_guard lock(mu);
        if (rev) written.insert(rev);
      }
    });
  }
  std::this_thread::sleep_for(100ms);  // let writes flow before the view reads

  Recorder rec;
  auto core = make_core(client());
  PrefixView::Options opts;
  opts.page_size = 7;  // ~43 pages, with writes landing between them
  auto view = PrefixView::create(core, p, opts, rec.handler());
  EXPECT_EQ(view->wait_initialized().wait().status().code(), StatusCode::kFailedPrecondition);
  view->start();
  auto init = view->wait_initialized().timeout(10s).wait();
  ASSERT_TRUE(init.ok()) << init.status().to_string() << "; pages " << view->pages_read() << ", errors "
                         << core->errors().size();
  EXPECT_GE(view->pages_read(), 40u);
  std::this_thread::sleep_for(300ms);
  writers.join();
  auto [truth, truth_rev] = read_all(client(), p);
  ASSERT_TRUE(eventually([&] { return view->revision() >= truth_rev; }));

  const auto batches = rec.all();
  ASSERT_FALSE(batches.empty());
  ASSERT_EQ(batches[0].kind, ViewBatch::Kind::kInitialized);
  const int64_t r0 = batches[0].revision;
  // The initial state is etcd's at r0; every later write arrives exactly once,
  // one batch per revision, in revision order.
  GetOptions at_r0;
  at_r0.prefix = true;
  at_r0.revision = r0;
  auto initial = client().get(p, at_r0).wait();
  ASSERT_TRUE(initial.ok()) << initial.status().to_string();
  ViewMap state;
  for (const auto& kv : initial->kvs) state[kv.key] = recipes::detail::to_entry(kv);
  EXPECT_EQ(batches[0].state_size, state.size());
  std::vector<int64_t> delivered;
  for (size_t i = 1; i < batches.size(); ++i) {
    ASSERT_EQ(batches[i].kind, ViewBatch::Kind::kChanged);
    ASSERT_GT(batches[i].revision, batches[i - 1].revision) << "out of revision order";
    for (const auto& ev : batches[i].events) {
      if (ev.type != Type::kRemoved) {
        EXPECT_EQ(ev.entry.mod_revision, batches[i].revision);
      }
    }
    delivered.push_back(batches[i].revision);
    state = replay(std::move(state), batches[i].events);
    EXPECT_EQ(state.size(), batches[i].state_size);
  }
  std::vector<int64_t> expected;
  {
    std::lock_guard lock(mu);
    for (int64_t rev : written) {
      if (rev > r0) expected.push_back(rev);
    }
  }
  EXPECT_GT(expected.size(), 20u) << "the writers did not overlap the view";
  EXPECT_EQ(delivered, expected);
  EXPECT_EQ(state, truth);
  EXPECT_EQ(view->snapshot().entries, truth);
  EXPECT_FALSE(rec.overlapped.load()) << "two batches ran at once";
  EXPECT_TRUE(core->errors().empty());
  core->close();
}

TEST_F(PrefixViewTest, LargePrefixLoadsInPagesWithinSeconds) {
  const std::string p = key("big/");
  constexpr int kKeys = 100'000;
  constexpr int kPerTxn = 100;  // below etcd's default --max-txn-ops (128)
  const std::string value(32, 'v');
  const auto batch = [&](int t) {
    Txn txn;
    for (int i = 0; i < kPerTxn; ++i) {
      char k[32];
      std::snprintf(k, sizeof k, "%06d", t * kPerTxn + i);
      txn.then(Op::put(p + k, value, PutOptions()));
    }
    return txn;
  };
  // 32 Txns in flight; one that fails (a slow, e.g. sanitized, build can
  // meet the default deadline) is simply written again: puts are idempotent.
  for (int first = 0; first < kKeys / kPerTxn; first += 32) {
    std::vector<std::pair<int, std::future<Result<TxnResponse>>>> inflight;
    for (int t = first; t < std::min(first + 32, kKeys / kPerTxn); ++t) {
      inflight.emplace_back(t, client().txn(batch(t)).future());
    }
    for (auto& [t, f] : inflight) {
      if (f.get().ok()) continue;
      auto again = client().txn(batch(t)).timeout(30s).wait();
      ASSERT_TRUE(again.ok()) << again.status().to_string();
    }
  }

  Recorder rec;
  auto core = make_core(client());
  const size_t heap_before = mallinfo2().uordblks;
  auto view = PrefixView::create(core, p, PrefixView::Options(), rec.handler());
  const auto started = std::chrono::steady_clock::now();
  view->start();
  ASSERT_TRUE(view->wait_initialized().timeout(30s).wait().ok());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double heap_per_key =
      static_cast<double>(mallinfo2().uordblks - std::min(heap_before, mallinfo2().uordblks)) / kKeys;
  std::printf("100k keys (%zu-byte keys, 32-byte values): loaded in %.2f s, %llu pages, ~%.0f heap bytes per key\n",
              (p + "000000").size(), secs, static_cast<unsigned long long>(view->pages_read()), heap_per_key);
  EXPECT_EQ(view->size(), static_cast<size_t>(kKeys));
  EXPECT_GE(view->pages_read(), static_cast<uint64_t>(kKeys / 1000));  // never one huge response
  EXPECT_LT(secs, 10.0);
  // A change still arrives after the big read.
  ASSERT_TRUE(client().put(p + "000007", "changed").wait().ok());
  ASSERT_TRUE(eventually([&] {
    auto e = view->get(p + "000007");
    return e && e->value == "changed";
  }));
  core->close();
  view.reset();
  ASSERT_TRUE(client().del(p, {.prefix = true}).wait().ok());
}

class PrefixViewProxyTest : public PrefixViewTest {
 protected:
  void SetUp() override {
    PrefixViewTest::SetUp();
    proxy_ = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  }
  void TearDown() override {
    if (cut_off_) {
      EXPECT_TRUE(
          eventually([&] { return etcd::detail::ClientAccess::core(*cut_off_).use_count() <= cut_off_baseline_; }, 15s))
          << "the view still holds the proxied client";
      cut_off_.reset();
    }
    proxy_.reset();
    PrefixViewTest::TearDown();
  }
  // A client whose only way to etcd is the proxy.
  Client& cut_off() {
    if (!cut_off_) {
      ClientOptions o;
      o.endpoints = {proxy_->endpoint()};
      cut_off_ = std::make_unique<Client>(o);
      cut_off_baseline_ = etcd::detail::ClientAccess::core(*cut_off_).use_count();
    }
    return *cut_off_;
  }
  std::unique_ptr<etcd::testing::FaultProxy> proxy_;
  std::unique_ptr<Client> cut_off_;
  long cut_off_baseline_ = 0;
};

TEST_F(PrefixViewProxyTest, AfterACompactionWhileCutOffItEmitsExactlyTheDifferences) {
  const std::string p = key("gap/");
  for (const char* k : {"a", "b", "c", "d"}) ASSERT_TRUE(client().put(p + k, std::string("v-") + k).wait().ok());

  Recorder rec;
  auto core = make_core(cut_off());
  auto view = PrefixView::create(core, p, PrefixView::Options(), rec.handler());
  view->start();
  ASSERT_TRUE(view->wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(client().put(p + "c", "v-c2").wait().ok());  // one change through the watch first
  ASSERT_TRUE(eventually([&] { return rec.count(ViewBatch::Kind::kChanged) == 1; }));
  const auto before = view->snapshot();

  proxy_->cut();
  ASSERT_TRUE(client().del(p + "a").wait().ok());          // removed
  ASSERT_TRUE(client().put(p + "b", "v-b2").wait().ok());  // updated
  ASSERT_TRUE(client().del(p + "d").wait().ok());          // deleted and created again: updated
  ASSERT_TRUE(client().put(p + "d", "v-d").wait().ok());
  ASSERT_TRUE(client().put(p + "e", "v-e").wait().ok());  // added
  ASSERT_TRUE(client().put(p + "x", "tmp").wait().ok());  // added and removed: no event
  ASSERT_TRUE(client().del(p + "x").wait().ok());
  auto probe = client().put(key("probe"), "x").wait();
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(client().compact(probe->header.revision).wait().ok());
  proxy_->restore();

  ASSERT_TRUE(eventually([&] { return rec.count(ViewBatch::Kind::kResynced) == 1; }, 20s));
  const auto batches = rec.all();
  ASSERT_EQ(batches.size(), 3u) << "nothing but the differences after the gap";
  const auto& resync = batches[2];
  EXPECT_TRUE(resync.cause.is(Errc::kResyncNeeded) || resync.cause.is(Errc::kCompacted)) << resync.cause.to_string();
  auto [truth, truth_rev] = read_all(client(), p);
  EXPECT_GE(resync.revision, probe->header.revision);
  ASSERT_EQ(resync.events.size(), 4u);
  EXPECT_EQ(resync.events[0].type, Type::kRemoved);
  EXPECT_EQ(resync.events[0].key, p + "a");
  EXPECT_EQ(resync.events[0].entry, before.entries.at(p + "a"));  // what the view had shown
  EXPECT_EQ(resync.events[1].type, Type::kUpdated);
  EXPECT_EQ(resync.events[1].key, p + "b");
  EXPECT_EQ(resync.events[1].entry.value, "v-b2");
  EXPECT_EQ(resync.events[1].previous->value, "v-b");
  EXPECT_EQ(resync.events[2].type, Type::kUpdated);
  EXPECT_EQ(resync.events[2].key, p + "d");
  EXPECT_GT(resync.events[2].entry.create_revision, resync.events[2].previous->create_revision);
  EXPECT_EQ(resync.events[3].type, Type::kAdded);
  EXPECT_EQ(resync.events[3].key, p + "e");
  EXPECT_EQ(replay(before.entries, resync.events), truth);
  EXPECT_EQ(view->snapshot().entries, truth);
  EXPECT_EQ(view->resyncs(), 1u);

  // And it keeps following after the resync.
  ASSERT_TRUE(client().put(p + "f", "v-f").wait().ok());
  ASSERT_TRUE(eventually([&] { return view->get(p + "f").has_value(); }));
  EXPECT_FALSE(rec.overlapped.load());
  core->close();
}

TEST_F(PrefixViewProxyTest, ReadsThatCannotGetThroughAreRetriedUntilTheFirstReadSucceeds) {
  const std::string p = key("retry/");
  ASSERT_TRUE(client().put(p + "a", "1").wait().ok());
  proxy_->cut();  // every connection attempt is refused: reads fail as UNAVAILABLE
  Recorder rec;
  auto core = make_core(cut_off());
  auto view = PrefixView::create(core, p, PrefixView::Options(), rec.handler());
  view->start();
  EXPECT_FALSE(view->wait_initialized().timeout(1500ms).wait().ok());
  EXPECT_FALSE(view->initialized());
  EXPECT_EQ(view->pages_read(), 0u);
  ASSERT_TRUE(client().put(p + "b", "1").wait().ok());
  proxy_->restore();
  auto init = view->wait_initialized().timeout(15s).wait();
  ASSERT_TRUE(init.ok()) << init.status().to_string();
  EXPECT_EQ(view->size(), 2u);
  EXPECT_EQ(rec.all().at(0).kind, ViewBatch::Kind::kInitialized);
  // A link that was down is not a failure of the view worth recording.
  for (const auto& e : core->errors()) ADD_FAILURE() << "recorded: " << e.to_string();
  core->close();
}

TEST_F(PrefixViewTest, OneKeyModeAndAFilter) {
  ASSERT_TRUE(client().put(key("node"), "1").wait().ok());
  ASSERT_TRUE(client().put(key("node2"), "x").wait().ok());  // shares the key as a prefix: not followed
  Recorder one;
  auto core = make_core(client());
  PrefixView::Options single;
  single.single_key = true;
  auto node = PrefixView::create(core, key("node"), single, one.handler());
  // Only direct children of kids/, each reported once at initialization.
  Recorder kids;
  PrefixView::Options children;
  const std::string k = key("kids/");
  children.accept = [k](std::string_view key) { return key.substr(k.size()).find('/') == std::string_view::npos; };
  children.initial_events = true;
  ASSERT_TRUE(client().put(k + "a", "1").wait().ok());
  ASSERT_TRUE(client().put(k + "a/deep", "1").wait().ok());
  auto kid_view = PrefixView::create(core, k, children, kids.handler());
  node->start();
  kid_view->start();
  ASSERT_TRUE(node->wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(kid_view->wait_initialized().timeout(10s).wait().ok());
  EXPECT_EQ(node->size(), 1u);
  EXPECT_EQ(node->get(key("node"))->value, "1");
  ASSERT_EQ(kids.all().at(0).events.size(), 1u);
  EXPECT_EQ(kids.all()[0].events[0].key, k + "a");

  ASSERT_TRUE(client().put(key("node2"), "y").wait().ok());
  ASSERT_TRUE(client().put(k + "b/deep", "1").wait().ok());
  ASSERT_TRUE(client().put(k + "b", "1").wait().ok());
  ASSERT_TRUE(client().del(key("node")).wait().ok());
  ASSERT_TRUE(eventually([&] { return one.count(ViewBatch::Kind::kChanged) == 1; }));
  ASSERT_TRUE(eventually([&] { return kids.count(ViewBatch::Kind::kChanged) == 1; }));
  EXPECT_EQ(one.all().back().events.at(0).type, Type::kRemoved);
  EXPECT_EQ(kids.all().back().events.at(0).key, k + "b");
  EXPECT_EQ(node->size(), 0u);
  EXPECT_EQ(kid_view->size(), 2u);
  // Nothing else arrived (node2 and the deep keys were never reported).
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(one.all().size(), 2u);
  EXPECT_EQ(kids.all().size(), 2u);
  core->close();
}

TEST_F(PrefixViewTest, AThrowingHandlerIsRecordedAndCloseStopsDelivery) {
  const std::string p = key("close/");
  auto core = make_core(client());
  std::atomic<int> calls{0};
  auto view = PrefixView::create(core, p, PrefixView::Options(), [&](const ViewBatch& b) {
    ++calls;
    if (b.kind == ViewBatch::Kind::kChanged) throw std::runtime_error("boom");
  });
  view->start();
  ASSERT_TRUE(view->wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(client().put(p + "a", "1").wait().ok());
  ASSERT_TRUE(eventually([&] { return !core->errors().empty(); }));
  EXPECT_NE(core->errors().back().message().find("boom"), std::string::npos) << core->errors().back().to_string();
  ASSERT_TRUE(client().put(p + "b", "1").wait().ok());
  ASSERT_TRUE(eventually([&] { return view->size() == 2; }));  // the view itself went on

  core->close();
  const int after_close = calls.load();
  ASSERT_TRUE(client().put(p + "c", "1").wait().ok());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(calls.load(), after_close) << "a batch was delivered after close";
  EXPECT_TRUE(view->wait_initialized().wait().status().is(Errc::kClosed));
}

TEST_F(PrefixViewTest, WaitersOfAViewThatCannotReadEndByStopTokenDeadlineAndClose) {
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  proxy->blackhole();  // connections open, nothing ever answers
  ClientOptions o;
  o.endpoints = {proxy->endpoint()};
  o.default_timeout = 500ms;
  Client dead(o);
  auto core = make_core(dead);
  auto view = PrefixView::create(core, key("never/"), PrefixView::Options(), [](const ViewBatch&) {});
  EXPECT_EQ(view->wait_initialized().wait().status().code(), StatusCode::kFailedPrecondition);  // not started
  view->start();
  std::stop_source stop;
  auto by_token = view->wait_initialized().stop_token(stop.get_token()).future();
  auto by_deadline = view->wait_initialized().timeout(300ms).future();
  auto by_close = view->wait_initialized().timeout(30s).future();
  stop.request_stop();
  ASSERT_EQ(by_token.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(by_token.get().status().code(), StatusCode::kCancelled);
  ASSERT_EQ(by_deadline.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(by_deadline.get().status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(by_close.wait_for(700ms), std::future_status::timeout);  // retried reads keep failing meanwhile
  EXPECT_FALSE(view->initialized());
  core->close();
  ASSERT_EQ(by_close.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(by_close.get().status().is(Errc::kClosed));
}

}  // namespace
}  // namespace etcd::test
