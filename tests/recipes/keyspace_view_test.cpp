// KeyspaceView (include/etcd/recipes/keyspace_view.h) and the streams
// (include/etcd/stream.h) against a real etcd member: a 1,000-key view cut
// off across a compaction emits exactly the differences as one kReset, and
// a co_await loop over its events sees every event in revision order; a
// consumer that falls behind gets a collapsed reset that still leads to the
// exact state; the start modes; bad input; the raw watch's stream.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <stop_token>

#include "etcd/recipes/election.h"
#include "etcd/recipes/keyspace_view.h"
#include "etcd/recipes/node_cache.h"
#include "etcd/task.h"
#include "etcd/testing/fault_proxy.h"
#include "etcd/txn.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::KeyspaceEvent;
using recipes::KeyspaceView;
using recipes::KeyspaceViewOptions;
using KeyspaceKvMap = std::map<std::string, KeyValue>;
using KeyspaceType = KeyspaceEvent::Type;

// What a consumer of the view's events knows, applied in order.
void keyspace_apply(KeyspaceKvMap& state, const KeyspaceEvent& e) {
  switch (e.type) {
    case KeyspaceType::kAdded:
    case KeyspaceType::kUpdated:
      state[e.key] = *e.current;
      break;
    case KeyspaceType::kRemoved:
      state.erase(e.key);
      break;
    case KeyspaceType::kReset:
      for (const auto& c : e.changes) keyspace_apply(state, c);
      break;
    case KeyspaceType::kInitialized:
      break;
  }
}

KeyspaceKvMap keyspace_truth(Client& c, const std::string& prefix, int64_t* revision = nullptr) {
  auto r = c.get(prefix, {.prefix = true}).timeout(10s).wait();
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  KeyspaceKvMap m;
  if (!r.ok()) return m;
  for (const auto& kv : r->kvs) m[kv.key] = kv;
  if (revision) *revision = r->header.revision;
  return m;
}

KeyspaceKvMap keyspace_map_of(const recipes::KeyspaceSnapshot& s) {
  KeyspaceKvMap m;
  for (const auto& kv : s.kvs) m[kv.key] = kv;
  return m;
}

// Everything a co_await loop pulled from a stream, and how it ended.
struct KeyspacePulled {
  std::mutex mu;
  std::vector<KeyspaceEvent> events;
  std::optional<Status> ended;     // OK: std::nullopt (the end); else the error
  std::atomic<bool> pause{false};  // a slow consumer: no next() while set
  std::vector<KeyspaceEvent> all() {
    std::lock_guard lock(mu);
    return events;
  }
  bool done() {
    std::lock_guard lock(mu);
    return ended.has_value();
  }
};

// The consumer under test: a coroutine that pulls until the stream ends
// (shared: a test that fails early still ends it safely, by the view's close).
Task<void> keyspace_pull(std::shared_ptr<Stream<KeyspaceEvent>> stream, std::shared_ptr<KeyspacePulled> pulled) {
  KeyspacePulled& out = *pulled;
  while (true) {
    while (out.pause.load()) co_await sleep_for(5ms);
    auto next = co_await stream->next();
    std::lock_guard lock(out.mu);
    if (!next.ok()) {
      out.ended = next.status();
      co_return;
    }
    if (!*next) {
      out.ended = Status();
      co_return;
    }
    out.events.push_back(std::move(**next));
  }
}

void keyspace_put_many(Client& c, const std::string& p, int from, int to, const std::string& value) {
  for (int first = from; first < to; first += 100) {
    Txn txn;
    for (int i = first; i < std::min(first + 100, to); ++i) {
      char k[16];
      std::snprintf(k, sizeof k, "%04d", i);
      txn.then(Op::put(p + k, value, PutOptions()));
    }
    auto r = c.txn(std::move(txn)).timeout(30s).wait();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
}

std::string keyspace_key(const std::string& p, int i) {
  char k[16];
  std::snprintf(k, sizeof k, "%04d", i);
  return p + k;
}

class KeyspaceViewTest : public ProxiedSingleMemberTest {};

TEST_F(KeyspaceViewTest, AThousandKeyViewCutOffAcrossACompactionEmitsExactlyTheDifferencesInRevisionOrder) {
  const std::string p = key("big/");
  keyspace_put_many(client(), p, 0, 1000, "v0");

  KeyspaceViewOptions o;
  o.start = KeyspaceViewOptions::Start::kWithSnapshot;
  o.page_size = 97;  // many pages
  KeyspaceView view(proxied_client(), p, o);
  // Before start(): from the first event on.
  auto stream = std::make_shared<Stream<KeyspaceEvent>>(view.events({.capacity = 100'000}));
  auto pulled_ptr = std::make_shared<KeyspacePulled>();
  KeyspacePulled& pulled = *pulled_ptr;
  spawn(client(), keyspace_pull(stream, pulled_ptr));
  std::vector<KeyspaceEvent> heard;
  std::mutex heard_mu;
  auto sub = view.on_event([&](const KeyspaceEvent& e) {
    std::lock_guard lock(heard_mu);
    heard.push_back(e);
  });
  view.start();
  ASSERT_TRUE(view.wait_initialized().timeout(20s).wait().ok());
  EXPECT_EQ(view.size(), 1000u);
  // One change through the watch first.
  ASSERT_TRUE(client().put(keyspace_key(p, 5), "v1").wait().ok());
  ASSERT_TRUE(eventually([&] { return view.get(keyspace_key(p, 5))->value == "v1"; }));
  const KeyspaceKvMap before = keyspace_map_of(view.snapshot());

  proxy_->cut();
  // Removed: 0100..0199; updated: 0200..0299; deleted and created again:
  // 0300..0349; added: 1000..1099; added and removed (no event): 2000..2019.
  for (int i = 100; i < 200; ++i) ASSERT_TRUE(client().del(keyspace_key(p, i)).wait().ok());
  keyspace_put_many(client(), p, 200, 300, "v2");
  for (int i = 300; i < 350; ++i) ASSERT_TRUE(client().del(keyspace_key(p, i)).wait().ok());
  keyspace_put_many(client(), p, 300, 350, "v0");  // same value: only the incarnation differs
  keyspace_put_many(client(), p, 1000, 1100, "new");
  keyspace_put_many(client(), p, 2000, 2020, "tmp");
  for (int i = 2000; i < 2020; ++i) ASSERT_TRUE(client().del(keyspace_key(p, i)).wait().ok());
  auto probe = client().put(key("probe"), "x").wait();
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(client().compact(probe->header.revision).wait().ok());
  proxy_->restore();

  ASSERT_TRUE(eventually([&] { return view.resyncs() == 1; }, 30s));
  // The counter moves when the view resyncs; listeners hear the kReset
  // afterwards, on the client's executor.
  ASSERT_TRUE(eventually(
      [&] {
        std::lock_guard lock(heard_mu);
        return heard.size() >= 1003u;
      },
      30s));
  int64_t truth_rev = 0;
  const KeyspaceKvMap truth = keyspace_truth(client(), p, &truth_rev);
  ASSERT_EQ(truth.size(), 1000u - 100u + 100u);

  // The listener: 1,000 kAdded, kInitialized, the one change, one kReset.
  std::vector<KeyspaceEvent> events;
  {
    std::lock_guard lock(heard_mu);
    events = heard;
  }
  ASSERT_EQ(events.size(), 1003u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(events[static_cast<size_t>(i)].type, KeyspaceType::kAdded);
  EXPECT_EQ(events[1000].type, KeyspaceType::kInitialized);
  EXPECT_EQ(events[1001].type, KeyspaceType::kUpdated);
  EXPECT_EQ(events[1001].previous->value, "v0");
  EXPECT_EQ(events[1001].current->value, "v1");
  const auto& reset = events[1002];
  ASSERT_EQ(reset.type, KeyspaceType::kReset);
  EXPECT_TRUE(reset.cause.is(Errc::kResyncNeeded) || reset.cause.is(Errc::kCompacted)) << reset.cause.to_string();
  EXPECT_GE(reset.revision, probe->header.revision);

  // Exactly the differences, in key order, each with what the view had.
  ASSERT_EQ(reset.changes.size(), 100u + 100u + 50u + 100u);
  std::map<KeyspaceType, int> kinds;
  for (size_t i = 0; i < reset.changes.size(); ++i) {
    const auto& c = reset.changes[i];
    ++kinds[c.type];
    if (i > 0) {
      EXPECT_LT(reset.changes[i - 1].key, c.key);
    }
    if (c.type != KeyspaceType::kAdded) {
      ASSERT_TRUE(c.previous);
      EXPECT_EQ(*c.previous, before.at(c.key));
    }
    if (c.type != KeyspaceType::kRemoved) {
      ASSERT_TRUE(c.current);
      EXPECT_EQ(*c.current, truth.at(c.key));
    }
  }
  EXPECT_EQ(kinds[KeyspaceType::kRemoved], 100);
  EXPECT_EQ(kinds[KeyspaceType::kUpdated], 150);
  EXPECT_EQ(kinds[KeyspaceType::kAdded], 100);
  KeyspaceKvMap replayed = before;
  keyspace_apply(replayed, reset);
  EXPECT_EQ(replayed, truth);
  EXPECT_EQ(keyspace_map_of(view.snapshot()), truth);

  // The co_await loop saw the same events, in revision order.
  ASSERT_TRUE(eventually([&] { return pulled.all().size() == events.size(); }, 10s));
  const auto got = pulled.all();
  EXPECT_EQ(got, events);
  for (size_t i = 1; i < got.size(); ++i) ASSERT_LE(got[i - 1].revision, got[i].revision) << "at " << i;
  KeyspaceKvMap from_stream;
  for (const auto& e : got) keyspace_apply(from_stream, e);
  EXPECT_EQ(from_stream, truth);

  // It keeps following; closing the view ends the stream.
  ASSERT_TRUE(client().put(keyspace_key(p, 7), "after").wait().ok());
  ASSERT_TRUE(eventually([&] { return pulled.all().size() == events.size() + 1; }));
  EXPECT_EQ(pulled.all().back().current->value, "after");
  EXPECT_GT(pulled.all().back().revision, reset.revision);
  EXPECT_TRUE(view.errors().empty());
  view.close();
  ASSERT_TRUE(eventually([&] { return pulled.done(); }));
  EXPECT_TRUE(pulled.ended->ok()) << pulled.ended->to_string();
  std::printf("1,000-key view: reset of %zu differences after the compaction, %zu events in revision order\n",
              reset.changes.size(), got.size());
}

TEST_F(KeyspaceViewTest, AConsumerThatFallsBehindGetsOneCollapsedResetAndStillEndsExact) {
  const std::string p = key("slow/");
  keyspace_put_many(client(), p, 0, 50, "v0");
  KeyspaceView view(client(), p);
  view.start();
  ASSERT_TRUE(view.wait_initialized().timeout(10s).wait().ok());
  KeyspaceKvMap seen = keyspace_map_of(view.snapshot());
  auto stream = std::make_shared<Stream<KeyspaceEvent>>(view.events({.capacity = 8}));
  auto pulled_ptr = std::make_shared<KeyspacePulled>();
  KeyspacePulled& pulled = *pulled_ptr;
  pulled.pause = true;
  spawn(client(), keyspace_pull(stream, pulled_ptr));
  // 300 writes while the consumer does not pull: far past 8 events.
  for (int i = 0; i < 300; ++i) {
    const int k = (i * 7) % 80;
    if (i % 4 == 3) {
      ASSERT_TRUE(client().del(keyspace_key(p, k)).wait().ok());
    } else {
      ASSERT_TRUE(client().put(keyspace_key(p, k), "w" + std::to_string(i)).wait().ok());
    }
  }
  int64_t truth_rev = 0;
  const KeyspaceKvMap truth = keyspace_truth(client(), p, &truth_rev);
  ASSERT_TRUE(eventually([&] { return view.revision() >= truth_rev; }));
  EXPECT_LE(stream->buffered(), 8u) << "the buffer grew past its capacity";
  EXPECT_GT(stream->overflows(), 0u);
  pulled.pause = false;
  ASSERT_TRUE(eventually([&] {
    auto got = pulled.all();
    return !got.empty() && got.back().revision >= truth_rev;
  }));
  const auto got = pulled.all();
  EXPECT_LE(got.size(), 8u);
  EXPECT_EQ(got.front().type, KeyspaceType::kReset);
  EXPECT_EQ(got.front().cause.code(), StatusCode::kResourceExhausted);
  for (size_t i = 1; i < got.size(); ++i) ASSERT_LE(got[i - 1].revision, got[i].revision);
  for (const auto& e : got) keyspace_apply(seen, e);
  EXPECT_EQ(seen, truth);
  stream->close();
  ASSERT_TRUE(eventually([&] { return pulled.done(); }));
  EXPECT_TRUE(pulled.ended->ok());
}

TEST_F(KeyspaceViewTest, StartFromARevisionHearsEveryChangeSinceAndACompactedOneFails) {
  const std::string p = key("from/");
  auto first = client().put(p + "a", "1").wait();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(client().put(p + "a", "2").wait().ok());
  ASSERT_TRUE(client().put(p + "b", "1").wait().ok());
  ASSERT_TRUE(client().del(p + "a").wait().ok());

  KeyspaceViewOptions o;
  o.start = KeyspaceViewOptions::Start::kFromRevision;
  o.start_revision = first->header.revision;
  KeyspaceView view(client(), p, o);
  auto stream = view.events();
  view.start();
  ASSERT_TRUE(view.wait_initialized().timeout(10s).wait().ok());
  std::vector<KeyspaceEvent> got;
  while (got.size() < 4) {
    auto e = stream.next().timeout(5s).wait();
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    ASSERT_TRUE(e->has_value());
    got.push_back(std::move(**e));
  }
  EXPECT_EQ(got[0].type, KeyspaceType::kInitialized);
  EXPECT_EQ(got[0].revision, first->header.revision);
  EXPECT_EQ(got[1].type, KeyspaceType::kUpdated);
  EXPECT_EQ(got[1].previous->value, "1");
  EXPECT_EQ(got[1].current->value, "2");
  EXPECT_EQ(got[2].type, KeyspaceType::kAdded);
  EXPECT_EQ(got[2].key, p + "b");
  EXPECT_EQ(got[3].type, KeyspaceType::kRemoved);
  EXPECT_EQ(got[3].previous->value, "2");
  EXPECT_EQ(view.size(), 1u);
  view.close();

  // Compacted: a clear failure, no silent fallback to a newer revision.
  auto probe = client().put(key("probe"), "x").wait();
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(client().compact(probe->header.revision).wait().ok());
  KeyspaceView gone(client(), p, o);
  auto gone_events = gone.events();
  gone.start();
  auto init = gone.wait_initialized().timeout(10s).wait();
  EXPECT_TRUE(init.status().is(Errc::kCompacted)) << init.status().to_string();
  EXPECT_FALSE(gone.initialized());
  auto end = gone_events.next().timeout(5s).wait();
  EXPECT_TRUE(end.status().is(Errc::kCompacted)) << end.status().to_string();
  EXPECT_TRUE(gone.wait_initialized().timeout(1s).wait().status().is(Errc::kCompacted));
}

TEST_F(KeyspaceViewTest, ARangeViewKeepsOnlyItsRangeAndFromNowIsSilentUntilAChange) {
  ASSERT_TRUE(client().put(key("r/a"), "1").wait().ok());
  ASSERT_TRUE(client().put(key("r/m"), "1").wait().ok());
  ASSERT_TRUE(client().put(key("r/z"), "1").wait().ok());
  KeyspaceViewOptions o;
  o.range_end = key("r/n");
  KeyspaceView view(client(), key("r/"), o);
  EXPECT_EQ(view.range_end(), key("r/n"));
  auto stream = view.events();
  view.start();
  ASSERT_TRUE(view.wait_initialized().timeout(10s).wait().ok());
  EXPECT_EQ(view.size(), 2u);
  auto init = stream.next().timeout(5s).wait();
  ASSERT_TRUE(init.ok() && init->has_value());
  EXPECT_EQ((*init)->type, KeyspaceType::kInitialized);  // kFromNow: no kAdded for the first read
  ASSERT_TRUE(client().put(key("r/y"), "out").wait().ok());
  ASSERT_TRUE(client().put(key("r/b"), "in").wait().ok());
  auto next = stream.next().timeout(5s).wait();
  ASSERT_TRUE(next.ok() && next->has_value()) << next.status().to_string();
  EXPECT_EQ((*next)->key, key("r/b"));
  EXPECT_FALSE(view.get(key("r/y")).has_value());
  EXPECT_FALSE(view.get(key("r/z")).has_value());
}

TEST_F(KeyspaceViewTest, BadInputIsRefusedBeforeAnyIo) {
  const auto refused = [&](KeyspaceViewOptions o, std::string k = "/x/") {
    KeyspaceView v(client(), std::move(k), std::move(o));
    auto r = v.wait_initialized().timeout(1s).wait();
    EXPECT_TRUE(r.status().is(Errc::kBadArgument)) << r.status().to_string();
    EXPECT_THROW(v.start(), Error);
  };
  KeyspaceViewOptions o;
  o.page_size = 0;
  refused(o);
  o = {};
  o.start = KeyspaceViewOptions::Start::kFromRevision;
  refused(o);
  o = {};
  o.start_revision = 5;
  refused(o);
  o = {};
  o.range_end = "/a";
  refused(o);
  o = {};
  o.range_end = "/z";
  refused(o, "");
  refused({}, "");
  refused({}, "/x//");
  KeyspaceView named(client(), "/cfg/");
  EXPECT_EQ(named.key(), "/cfg/");
  EXPECT_EQ(named.name(), "/cfg/*");
  EXPECT_EQ(named.identity(), "KeyspaceView[/cfg/*]");
}

TEST_F(KeyspaceViewTest, NextEndsByStopTokenAndDeadlineWithoutLosingAnEvent) {
  const std::string p = key("stop/");
  KeyspaceView view(client(), p);
  auto stream = view.events();
  view.start();
  ASSERT_TRUE(view.wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(stream.next().timeout(5s).wait().ok());  // kInitialized
  EXPECT_EQ(stream.next().timeout(100ms).wait().status().code(), StatusCode::kDeadlineExceeded);
  std::stop_source stop;
  auto pending = stream.next().stop_token(stop.get_token()).future();
  stop.request_stop();
  ASSERT_EQ(pending.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(pending.get().status().code(), StatusCode::kCancelled);
  ASSERT_TRUE(client().put(p + "a", "1").wait().ok());
  auto e = stream.next().timeout(5s).wait();
  ASSERT_TRUE(e.ok() && e->has_value()) << e.status().to_string();
  EXPECT_EQ((*e)->key, p + "a");
  // A second next() while one is in flight is refused.
  auto first = stream.next().future();
  auto second = stream.next().timeout(1s).wait();
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  stream.close();
  ASSERT_EQ(first.wait_for(5s), std::future_status::ready);
  auto closed = first.get();
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->has_value());
}

TEST_F(KeyspaceViewTest, ARawWatchStreamDeliversInOrderAndFailsClearlyWhenItsConsumerFallsBehind) {
  const std::string p = key("watch/");
  auto created = client().put(p + "0", "x").wait();
  ASSERT_TRUE(created.ok());
  // From that put's revision: the watch sees it and every later one, however
  // late the server creates it.
  auto s = watch_stream(client(), p, {.prefix = true, .start_revision = created->header.revision});
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(client().put(p + std::to_string(i), "x").wait().ok());
  int64_t last = 0;
  int seen = 0;
  while (seen < 6) {
    auto r = s.next().timeout(5s).wait();
    ASSERT_TRUE(r.ok() && r->has_value()) << r.status().to_string();
    for (const auto& ev : (*r)->events) {
      EXPECT_GT(ev.kv.mod_revision, last);
      last = ev.kv.mod_revision;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 6);
  s.close();
  auto end = s.next().wait();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());

  // Once the server has created it (a catch-up from an older revision would
  // come as one response), each put is one response: 20 of them overflow 2.
  auto small = watch_stream(client(), p, {.prefix = true, .notify_created = true}, {.capacity = 2});
  auto made = small.next().timeout(10s).wait();
  ASSERT_TRUE(made.ok() && made->has_value() && (*made)->created) << made.status().to_string();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client().put(p + "w" + std::to_string(i), "x").wait().ok());
  ASSERT_TRUE(eventually([&] { return small.overflows() > 0; }));
  Status failed;
  for (int i = 0; i < 5 && failed.ok(); ++i) {
    auto r = small.next().timeout(5s).wait();
    if (!r.ok()) failed = r.status();
  }
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted) << failed.to_string();

  auto states = state_stream(client());
  EXPECT_EQ(states.next().timeout(50ms).wait().status().code(), StatusCode::kDeadlineExceeded);
}

TEST_F(KeyspaceViewTest, TheCachesAndLeadershipHaveStreamsThatEndWhenTheyClose) {
  // A node cache: its events, in order; closing the cache ends the stream.
  recipes::NodeCache<std::string> node(client(), key("node"));
  auto node_events = node.events();
  node.start();
  auto first = node_events.next().timeout(10s).wait();
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status().to_string();
  EXPECT_EQ((*first)->type, recipes::NodeEvent<std::string>::Type::kInitialized);
  ASSERT_TRUE(client().put(key("node"), "v").wait().ok());
  auto created = node_events.next().timeout(5s).wait();
  ASSERT_TRUE(created.ok() && created->has_value());
  EXPECT_EQ((*created)->type, recipes::NodeEvent<std::string>::Type::kCreated);
  EXPECT_EQ(*(*created)->current->value, "v");
  node.close();
  auto node_end = node_events.next().timeout(5s).wait();
  ASSERT_TRUE(node_end.ok());
  EXPECT_FALSE(node_end->has_value());

  // A latch: the term it won, then that term's end (resign: OK), then the end.
  recipes::LeaderLatch latch(client(), key("elect"), "me");
  recipes::LeaderObserver observer(client(), key("elect"));
  auto leadership = latch.leadership_stream();
  auto leaders = observer.leader_stream();
  observer.start();
  auto none = leaders.next().timeout(10s).wait();  // the first read: no leader yet
  ASSERT_TRUE(none.ok() && none->has_value()) << none.status().to_string();
  EXPECT_FALSE(none->value().has_value());
  latch.start();
  auto won = leadership.next().timeout(10s).wait();
  ASSERT_TRUE(won.ok() && won->has_value()) << won.status().to_string();
  EXPECT_TRUE((*won)->leader);
  EXPECT_GT((*won)->term, 0);
  auto seen = leaders.next().timeout(10s).wait();
  ASSERT_TRUE(seen.ok() && seen->has_value() && seen->value().has_value());
  EXPECT_EQ(seen->value()->term, (*won)->term);
  EXPECT_EQ(seen->value()->value, "me");
  ASSERT_TRUE(latch.resign().timeout(5s).wait().ok());
  auto ended = leadership.next().timeout(10s).wait();
  ASSERT_TRUE(ended.ok() && ended->has_value());
  EXPECT_FALSE((*ended)->leader);
  EXPECT_EQ((*ended)->term, (*won)->term);
  EXPECT_TRUE((*ended)->why.ok()) << (*ended)->why.to_string();
  latch.close();
  observer.close();
  auto latch_end = leadership.next().timeout(5s).wait();
  ASSERT_TRUE(latch_end.ok());
  EXPECT_FALSE(latch_end->has_value());
  // The observer may have seen the resignation before its close.
  for (int i = 0; i < 3; ++i) {
    auto r = leaders.next().timeout(5s).wait();
    ASSERT_TRUE(r.ok());
    if (!r->has_value()) return;
  }
  ADD_FAILURE() << "the observer's stream did not end with its close()";
}

}  // namespace
}  // namespace etcd::test
