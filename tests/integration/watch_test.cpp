// Watches: ordering, no loss, history, compaction, filters, cancellation.
#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/client_access.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using WatchTest = SingleMemberTest;

// Records every event a watch delivers, checking the handler is never
// entered concurrently.
struct WatchRecorder {
  std::mutex mu;
  std::vector<Event> events;
  std::vector<WatchResponse> responses;  // every response, in order
  std::vector<int64_t> batch_revisions;
  std::optional<Status> error;
  std::atomic<int> in_handler{0};
  std::atomic<bool> overlapped{false};

  // A Watcher's cancel() lets a handler call that is already running finish
  // (watch.h): the watchers of a test die first, and a call of theirs still
  // running must not outlive this (bounded: a handler returns at once).
  ~WatchRecorder() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (in_handler.load() != 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }

  WatchHandler handler() {
    return [this](Result<WatchResponse> r) {
      if (in_handler.fetch_add(1) != 0) overlapped = true;
      {
        std::lock_guard lock(mu);
        if (!r.ok()) {
          error = r.status();
        } else {
          for (auto& e : r->events) events.push_back(e);
          responses.push_back(std::move(*r));
        }
      }
      in_handler.fetch_sub(1);
    };
  }
  std::vector<WatchResponse> all() {
    std::lock_guard lock(mu);
    return responses;
  }
  size_t count() {
    std::lock_guard lock(mu);
    return events.size();
  }
  std::optional<Status> err() {
    std::lock_guard lock(mu);
    return error;
  }
};

TEST_F(WatchTest, ManyWritesArriveOnceEachInRevisionOrder) {
  WatchRecorder rec;
  auto watcher = client().watch(key(""), {.prefix = true}, rec.handler());
  ASSERT_TRUE(watcher.wait_created(std::chrono::steady_clock::now() + 5s));

  constexpr int kWrites = 2000;
  std::vector<int64_t> revisions;
  std::atomic<int> done{0};
  std::mutex rev_mu;
  // Pipelined writes from several in-flight calls, to stress ordering.
  for (int i = 0; i < kWrites; ++i) {
    // Appending rather than `"k" + std::to_string(..)`: GCC 12 at -O3 warns
    // (-Wrestrict, a known false positive) about operator+(const char*, string&&).
    client()
        .put(key(std::string("k").append(std::to_string(i % 37))), std::to_string(i))
        .then([&](Result<PutResponse> r) {
          if (r.ok()) {
            std::lock_guard lock(rev_mu);
            revisions.push_back(r->header.revision);
          }
          done.fetch_add(1);
        });
  }
  ASSERT_TRUE(eventually([&] { return done.load() == kWrites; }, 30s));
  ASSERT_EQ(revisions.size(), static_cast<size_t>(kWrites));
  ASSERT_TRUE(eventually([&] { return rec.count() >= kWrites; }, 10s)) << rec.count();

  std::sort(revisions.begin(), revisions.end());
  // "Fully delivered" counts once the handler has returned, a moment after
  // it recorded the last event.
  EXPECT_TRUE(eventually([&] { return watcher.delivered_revision() == revisions.back(); }, 5s))
      << watcher.delivered_revision() << " != " << revisions.back();
  std::lock_guard lock(rec.mu);
  ASSERT_EQ(rec.events.size(), static_cast<size_t>(kWrites));
  for (size_t i = 0; i < rec.events.size(); ++i) {
    ASSERT_EQ(rec.events[i].kv.mod_revision, revisions[i]) << "at " << i;
    ASSERT_EQ(rec.events[i].type, Event::Type::kPut);
  }
  EXPECT_FALSE(rec.overlapped.load());
}

TEST_F(WatchTest, HistoryFromARevisionWithPrevKvAndDeletes) {
  auto first = client().put(key("h"), "1").wait();
  ASSERT_TRUE(client().put(key("h"), "2").wait().ok());
  ASSERT_TRUE(client().del(key("h")).wait().ok());

  WatchRecorder rec;
  auto watcher = client().watch(key("h"), {.start_revision = first->header.revision, .prev_kv = true}, rec.handler());
  ASSERT_TRUE(eventually([&] { return rec.count() == 3; }));
  std::lock_guard lock(rec.mu);
  EXPECT_EQ(rec.events[0].kv.value, "1");
  EXPECT_FALSE(rec.events[0].prev_kv.has_value());
  EXPECT_EQ(rec.events[1].kv.value, "2");
  ASSERT_TRUE(rec.events[1].prev_kv.has_value());
  EXPECT_EQ(rec.events[1].prev_kv->value, "1");
  EXPECT_EQ(rec.events[2].type, Event::Type::kDelete);
  EXPECT_EQ(rec.events[2].kv.key, key("h"));
}

TEST_F(WatchTest, StartingAtACompactedRevisionReportsTheError) {
  auto first = client().put(key("c"), "1").wait();
  auto second = client().put(key("c"), "2").wait();
  ASSERT_TRUE(client().compact(second->header.revision).wait().ok());

  WatchRecorder rec;
  auto watcher = client().watch(key("c"), {.start_revision = first->header.revision}, rec.handler());
  ASSERT_TRUE(eventually([&] { return rec.err().has_value(); }));
  auto err = *rec.err();
  EXPECT_EQ(err.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(err.is(Errc::kCompacted)) << err.to_string();
  EXPECT_EQ(err.revision(), second->header.revision);
  EXPECT_EQ(rec.count(), 0u);
  EXPECT_FALSE(watcher.active());
}

TEST_F(WatchTest, FiltersDropEventTypes) {
  WatchRecorder puts_only, deletes_only;
  auto w1 = client().watch(key("f"), {.filter_deletes = true}, puts_only.handler());
  auto w2 = client().watch(key("f"), {.filter_puts = true}, deletes_only.handler());
  ASSERT_TRUE(w1.wait_created(std::chrono::steady_clock::now() + 5s));
  ASSERT_TRUE(w2.wait_created(std::chrono::steady_clock::now() + 5s));
  ASSERT_TRUE(client().put(key("f"), "x").wait().ok());
  ASSERT_TRUE(client().del(key("f")).wait().ok());
  ASSERT_TRUE(eventually([&] { return puts_only.count() == 1 && deletes_only.count() == 1; }));
  EXPECT_EQ(puts_only.events[0].type, Event::Type::kPut);
  EXPECT_EQ(deletes_only.events[0].type, Event::Type::kDelete);
}

TEST_F(WatchTest, CancelStopsDeliveryAndManyWatchesShareOneStream) {
  WatchRecorder rec;
  std::vector<Watcher> watchers;
  for (int i = 0; i < 200; ++i) {
    watchers.push_back(client().watch(key(std::string("w").append(std::to_string(i))), {}, rec.handler()));
  }
  for (auto& w : watchers) ASSERT_TRUE(w.wait_created(std::chrono::steady_clock::now() + 10s));
  EXPECT_EQ(client().stats().watches_open, 200u);
  ASSERT_TRUE(client().put(key("w7"), "x").wait().ok());
  ASSERT_TRUE(eventually([&] { return rec.count() == 1; }));
  for (auto& w : watchers) w.cancel();
  EXPECT_EQ(client().stats().watches_open, 0u);
  ASSERT_TRUE(client().put(key("w7"), "y").wait().ok());
  // Prove the absence of delivery with a later, still-active watch seeing its event first.
  WatchRecorder later;
  auto probe = client().watch(key("w7"), {}, later.handler());
  ASSERT_TRUE(probe.wait_created(std::chrono::steady_clock::now() + 5s));
  ASSERT_TRUE(client().put(key("w7"), "z").wait().ok());
  ASSERT_TRUE(eventually([&] { return later.count() == 1; }));
  EXPECT_EQ(rec.count(), 1u);
}

TEST_F(WatchTest, ProgressNotificationsKeepIdleWatchesCurrent) {
  // etcd sends progress notifications on an interval (10 minutes by
  // default); this only checks that asking for them is accepted and that
  // events still flow.
  WatchRecorder rec;
  auto watcher = client().watch(key("p"), {.progress_notify = true}, rec.handler());
  ASSERT_TRUE(watcher.wait_created(std::chrono::steady_clock::now() + 5s));
  ASSERT_TRUE(client().put(key("p"), "1").wait().ok());
  ASSERT_TRUE(eventually([&] { return rec.count() == 1; }));
  EXPECT_FALSE(rec.err().has_value());
}

TEST_F(WatchTest, AProgressAnswerNeverClaimsARevisionWhoseEventsAreStillToCome) {
  // The client asks an idle stream for progress (its liveness probe). etcd
  // before 3.4.25 / 3.5.8 answers such a request from a queue of its own,
  // with the store's current revision, and the answer can overtake events
  // still queued for the watch (etcd-io/etcd#15220). A watch that took
  // that answer as "everything up to here was delivered" would skip those
  // events (a view dropping them as already seen) or resume after them on
  // a new stream. Writes pipelined from one thread, progress asked for
  // from another, as fast as the stream takes them: no progress the watch
  // is told of may claim a revision whose events come after it.
  std::mutex mu;
  std::vector<int64_t> event_revisions;
  int64_t claimed = 0;  // the highest revision a progress answer claimed
  int overtaken = 0;    // events that came after a claim covering them
  auto watcher = client().watch(key(""), {.prefix = true}, [&](Result<WatchResponse> r) {
    if (!r.ok()) return;
    std::lock_guard lock(mu);
    if (r->progress) claimed = std::max(claimed, r->header.revision);
    for (const auto& ev : r->events) {
      if (ev.kv.mod_revision <= claimed) ++overtaken;
      event_revisions.push_back(ev.kv.mod_revision);
    }
  });
  ASSERT_TRUE(watcher.wait_created(std::chrono::steady_clock::now() + 5s));

  constexpr int kWrites = 4000;
  std::atomic<bool> writing{true};
  std::thread prober([&] {
    while (writing.load()) {
      detail::ClientAccess::request_watch_progress(client());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::atomic<int> failed{0};
  std::atomic<int> done{0};
  std::atomic<int> next{0};
  std::function<void()> issue = [&] {
    const int i = next.fetch_add(1);
    if (i >= kWrites) return;
    client().put(key("k" + std::to_string(i % 50)), std::to_string(i)).then([&](Result<PutResponse> r) {
      if (!r.ok()) failed.fetch_add(1);
      done.fetch_add(1);
      issue();
    });
  };
  for (int i = 0; i < 32; ++i) issue();
  const bool all_done = eventually([&] { return done.load() == kWrites; }, 60s);
  writing = false;
  prober.join();
  ASSERT_TRUE(all_done);
  ASSERT_EQ(failed.load(), 0);
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return event_revisions.size() == static_cast<size_t>(kWrites);
  }, 20s));
  std::lock_guard lock(mu);
  EXPECT_EQ(overtaken, 0) << "events delivered after a progress answer that claimed their revision";
  EXPECT_TRUE(std::is_sorted(event_revisions.begin(), event_revisions.end()));
}

TEST_F(WatchTest, AWatchAcrossAPartitionSeesEveryEventOnceItHeals) {
  // The watch's link is partitioned (the proxy holds its bytes, as TCP
  // does) while the writes go on; once it heals, every event arrives, in
  // order, once, and no error ends the watch.
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions o = options();
  o.endpoints = {proxy->endpoint()};
  Client watching(o);
  WatchRecorder rec;
  auto watcher = watching.watch(key(""), {.prefix = true}, rec.handler());
  ASSERT_TRUE(watcher.wait_created(std::chrono::steady_clock::now() + 5s));
  constexpr int kWrites = 300;
  std::vector<int64_t> written;
  for (int i = 0; i < kWrites; ++i) {
    if (i == 100) proxy->blackhole();
    if (i == 200) proxy->restore();
    auto r = client().put(key("k" + std::to_string(i % 10)), std::to_string(i)).wait();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    written.push_back(r->header.revision);
  }
  ASSERT_TRUE(eventually([&] { return rec.count() >= static_cast<size_t>(kWrites); }, 20s)) << rec.count();
  std::lock_guard lock(rec.mu);
  EXPECT_FALSE(rec.error.has_value()) << rec.error->to_string();
  std::vector<int64_t> seen;
  for (const auto& e : rec.events) seen.push_back(e.kv.mod_revision);
  EXPECT_EQ(seen, written);
  EXPECT_FALSE(rec.overlapped.load());
}

TEST_F(WatchTest, NotifyCreatedReportsTheCreationWithItsRevisionBeforeAnyEvent) {
  // History the watch starts behind: the store is at r1 + 1 when it is created.
  auto first = client().put(key("n"), "1").wait();
  ASSERT_TRUE(first.ok());
  const int64_t r1 = first->header.revision;
  ASSERT_TRUE(client().put(key("n"), "2").wait().ok());

  WatchRecorder with, without;
  auto w = client().watch(key("n"), {.start_revision = r1, .notify_created = true}, with.handler());
  auto plain = client().watch(key("n"), {.start_revision = r1}, without.handler());
  ASSERT_TRUE(w.wait_created(std::chrono::steady_clock::now() + 5s));
  ASSERT_TRUE(plain.wait_created(std::chrono::steady_clock::now() + 5s));
  auto third = client().put(key("n"), "3").wait();
  ASSERT_TRUE(third.ok());
  ASSERT_TRUE(eventually([&] { return with.count() == 3 && without.count() == 3; }));

  auto got = with.all();
  ASSERT_GE(got.size(), 2u);
  EXPECT_TRUE(got[0].created);
  EXPECT_TRUE(got[0].events.empty());
  EXPECT_FALSE(got[0].progress);
  // The store revision at creation: at or past the start revision, so the
  // watch started behind the store.
  EXPECT_EQ(got[0].header.revision, r1 + 1);
  std::vector<int64_t> revisions;
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_FALSE(got[i].created) << "at " << i;
    for (const auto& ev : got[i].events) revisions.push_back(ev.kv.mod_revision);
  }
  EXPECT_EQ(revisions, (std::vector<int64_t>{r1, r1 + 1, third->header.revision}));
  // The created response delivers nothing: it moves no revision.
  EXPECT_TRUE(eventually([&] { return w.delivered_revision() == third->header.revision; }));

  // Without the option there is no created response.
  for (const auto& r : without.all()) EXPECT_FALSE(r.created);
  EXPECT_FALSE(with.err().has_value());
  EXPECT_FALSE(with.overlapped.load());
}

TEST_F(WatchTest, NotifyCreatedReportsAReCreationOnANewStreamBeforeItsEvents) {
  auto first = client().put(key("r"), "1").wait();
  ASSERT_TRUE(first.ok());
  WatchRecorder rec;
  auto w = client().watch(key("r"), {.notify_created = true}, rec.handler());
  ASSERT_TRUE(w.wait_created(std::chrono::steady_clock::now() + 5s));
  auto second = client().put(key("r"), "2").wait();
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(eventually([&] { return rec.count() == 1; }));

  // The member goes away and comes back: the watch is re-created on a new
  // stream from the revision after its last event.
  cluster().kill(0);
  cluster().restart(0);
  cluster().wait_healthy(std::chrono::seconds(20));
  ASSERT_TRUE(eventually([&] { return client().put(key("r"), "3").wait().ok(); }, 20s, 200ms));
  ASSERT_TRUE(eventually([&] { return rec.count() >= 2; }, 20s));

  auto got = rec.all();
  std::vector<size_t> created;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].created) created.push_back(i);
  }
  ASSERT_GE(created.size(), 2u) << "one created response per creation";
  EXPECT_EQ(created[0], 0u);
  EXPECT_EQ(got[0].header.revision, first->header.revision);
  // The re-creation is reported before the event that follows it, with the
  // store revision at that moment.
  size_t event3 = got.size();
  for (size_t i = 0; i < got.size(); ++i) {
    for (const auto& ev : got[i].events) {
      if (ev.kv.value == "3") event3 = i;
    }
  }
  ASSERT_LT(event3, got.size());
  EXPECT_LT(created[1], event3);
  EXPECT_GE(got[created[1]].header.revision, second->header.revision);
  size_t events2 = 0;
  for (const auto& r : got) {
    for (const auto& ev : r.events) events2 += ev.kv.value == "2" ? 1 : 0;
  }
  EXPECT_EQ(events2, 1u) << "no event repeated across the re-creation";
}

// A Watcher kept after its Client is gone (closed and destroyed): its
// handler has heard kClosed, and destroying it later returns at once.
TEST_F(WatchTest, AWatcherOutlivingItsClientIsDestroyedWithoutWaiting) {
  WatchRecorder rec;
  std::optional<Watcher> watcher;
  {
    Client c(options());
    watcher.emplace(c.watch(key("outlive"), {}, rec.handler()));
    ASSERT_TRUE(watcher->wait_created(std::chrono::steady_clock::now() + 5s));
  }
  ASSERT_TRUE(eventually([&] { return rec.err().has_value(); }));
  EXPECT_TRUE(rec.err()->is(Errc::kClosed)) << rec.err()->to_string();
  EXPECT_FALSE(watcher->active());
  const auto start = std::chrono::steady_clock::now();
  watcher.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST_F(WatchTest, ClosingTheClientEndsWatchesWithClosed) {
  WatchRecorder rec;
  auto watcher = client().watch(key("z"), {}, rec.handler());
  ASSERT_TRUE(watcher.wait_created(std::chrono::steady_clock::now() + 5s));
  client().close();
  ASSERT_TRUE(eventually([&] { return rec.err().has_value(); }));
  EXPECT_TRUE(rec.err()->is(Errc::kClosed)) << rec.err()->to_string();
  auto after = client().get(key("z")).wait();
  EXPECT_TRUE(after.status().is(Errc::kClosed));
}

}  // namespace
}  // namespace etcd::test
