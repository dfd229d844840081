// SharedValue<T> / SharedCount against a real etcd: set, compare_and_set and
// try_set with their versions, reading one's own writes, listeners, a
// deleted key, values that do not decode, bad input before any write, and
// the resync after a compaction while the client was cut off.
#include "etcd/recipes/shared_value.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"
#include "support/event_log.h"

namespace etcd::test {
namespace {

using recipes::SharedCount;
using recipes::SharedValue;
using recipes::SharedValueEvent;

template <class T>
using SharedValueEvents = EventLog<SharedValueEvent<T>>;

// A codec that refuses to encode negative numbers.
struct NonNegativeCodecForSharedValueTest {
  static Result<std::string> encode(int64_t v) {
    if (v < 0) return InvalidArgument("negative numbers are not stored");
    return std::to_string(v);
  }
  static Result<int64_t> decode(std::string_view bytes, std::string_view key) {
    return recipes::IntegerCodec<int64_t>::decode(bytes, key);
  }
};

class SharedValueTest : public SingleMemberTest {};

TEST_F(SharedValueTest, SetCompareAndSetAndTrySetWithVersions) {
  const std::string k = key("mode");
  SharedValue<std::string> mode(client(), k);
  SharedValueEvents<std::string> events;
  auto sub = mode.on_change(events.listener());
  EXPECT_EQ(mode.wait_initialized().wait().status().code(), StatusCode::kFailedPrecondition) << "before start()";
  mode.start();
  ASSERT_TRUE(mode.wait_initialized().timeout(10s).wait().ok());
  auto v = mode.get();
  EXPECT_FALSE(v.exists);
  EXPECT_FALSE(v.decoded());
  EXPECT_EQ(v.mod_revision, 0);
  EXPECT_GT(v.revision, 0);

  // set: the new mod revision, readable at once.
  auto rev = mode.set("one").wait();
  ASSERT_TRUE(rev.ok()) << rev.status().to_string();
  v = mode.get();
  ASSERT_TRUE(v.exists && v.decoded());
  EXPECT_EQ(*v.value, "one");
  EXPECT_EQ(v.mod_revision, *rev);
  EXPECT_EQ(v.version, 1);
  EXPECT_EQ(client().get(k).wait().value().kvs.at(0).value, "one");
  ASSERT_TRUE(events.wait_for(1));
  EXPECT_FALSE(events.at(0).previous.exists);
  EXPECT_EQ(*events.at(0).current.value, "one");
  EXPECT_EQ(events.at(0).current.mod_revision, *rev);

  // compare_and_set against the version read: wins once, then loses.
  EXPECT_TRUE(mode.compare_and_set(*rev, "two").wait().value());
  EXPECT_FALSE(mode.compare_and_set(*rev, "three").wait().value()) << "a stale version";
  EXPECT_FALSE(mode.compare_and_set(0, "three").wait().value()) << "0 means absent";
  EXPECT_EQ(client().get(k).wait().value().kvs.at(0).value, "two");
  EXPECT_EQ(*mode.get().value, "two");

  // Someone else writes; try_set against the newest version this object saw.
  auto other = client().put(k, "theirs").wait();
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(eventually([&] { return mode.get().mod_revision == other->header.revision; }));
  EXPECT_TRUE(mode.try_set("mine").wait().value());
  EXPECT_EQ(client().get(k).wait().value().kvs.at(0).value, "mine");

  ASSERT_TRUE(events.wait_for(4));
  EXPECT_EQ(*events.at(1).current.value, "two");
  EXPECT_EQ(*events.at(1).previous.value, "one");
  EXPECT_EQ(*events.at(2).current.value, "theirs");
  EXPECT_EQ(*events.at(3).current.value, "mine");
  for (size_t i = 0; i < events.size(); ++i) EXPECT_FALSE(events.at(i).resync);
  EXPECT_FALSE(events.overlapped.load());
  EXPECT_TRUE(mode.errors().empty());
  mode.close();
}

TEST_F(SharedValueTest, OfTwoConcurrentCompareAndSetsOneWinsAndTheLoserSeesTheWinner) {
  const std::string k = key("count");
  ASSERT_TRUE(client().put(k, "10").wait().ok());
  SharedCount a(client(), k);
  SharedCount b(client(), k);
  a.start();
  b.start();
  ASSERT_TRUE(a.wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(b.wait_initialized().timeout(10s).wait().ok());
  const auto seen = a.get();
  ASSERT_TRUE(seen.decoded());
  EXPECT_EQ(*seen.value, 10);
  EXPECT_EQ(b.get().mod_revision, seen.mod_revision);

  auto ca = a.compare_and_set(seen.mod_revision, *seen.value + 1).timeout(10s).future();
  auto cb = b.compare_and_set(seen.mod_revision, *seen.value + 2).timeout(10s).future();
  const bool won_a = ca.get().value();
  const bool won_b = cb.get().value();
  EXPECT_NE(won_a, won_b) << "exactly one wins";
  SharedCount& loser = won_a ? b : a;
  const int64_t stored = won_a ? 11 : 12;
  // The losing call brought the winner's value: the loser knows it at once.
  auto now = loser.get();
  ASSERT_TRUE(now.decoded());
  EXPECT_EQ(*now.value, stored);
  EXPECT_GT(now.mod_revision, seen.mod_revision);
  // ... so its next try_set goes against the winner's version and wins.
  EXPECT_TRUE(loser.try_set(*now.value + 100).wait().value());
  EXPECT_EQ(client().get(k).wait().value().kvs.at(0).value, std::to_string(stored + 100));
}

TEST_F(SharedValueTest, ADeletedKeyIsAnAbsentValueAndCanBeCreatedAgain) {
  const std::string k = key("gone");
  ASSERT_TRUE(client().put(k, "7").wait().ok());
  SharedCount count(client(), k);
  SharedValueEvents<int64_t> events;
  auto sub = count.on_change(events.listener());
  count.start();
  ASSERT_TRUE(count.wait_initialized().timeout(10s).wait().ok());
  ASSERT_EQ(*count.get().value, 7);

  ASSERT_TRUE(client().del(k).wait().ok());
  ASSERT_TRUE(events.wait_for(1));
  auto e = events.at(0);
  EXPECT_TRUE(e.previous.exists);
  EXPECT_EQ(*e.previous.value, 7);
  EXPECT_FALSE(e.current.exists);
  EXPECT_FALSE(e.current.decoded());
  EXPECT_EQ(e.current.mod_revision, 0);
  EXPECT_FALSE(count.get().exists);

  // The old version is stale; "absent" (0) is the version now.
  EXPECT_FALSE(count.compare_and_set(e.previous.mod_revision, 1).wait().value());
  EXPECT_TRUE(count.try_set(1).wait().value());
  ASSERT_TRUE(events.wait_for(2));
  EXPECT_EQ(*events.at(1).current.value, 1);
  EXPECT_EQ(events.at(1).current.version, 1) << "a new incarnation";
}

TEST_F(SharedValueTest, AValueOfAnotherTypeIsAnErrorNamingTheKeyAndSetRepairsIt) {
  const std::string k = key("limit");
  ASSERT_TRUE(client().put(k, "not a number").wait().ok());
  SharedCount count(client(), k);
  Mailbox<Status> reported;
  auto on_error = count.on_error([&](const Status& s) { reported.put(s); });
  count.start();
  ASSERT_TRUE(count.wait_initialized().timeout(10s).wait().ok());
  auto v = count.get();
  EXPECT_TRUE(v.exists);
  EXPECT_FALSE(v.decoded());
  EXPECT_TRUE(v.error.is(Errc::kDecodeFailed)) << v.error.to_string();
  EXPECT_EQ(v.error.code(), StatusCode::kDataLoss);
  EXPECT_NE(v.error.message().find(k), std::string::npos) << "names the key";
  auto st = reported.take();
  ASSERT_TRUE(st.has_value());
  EXPECT_NE(st->message().find(k), std::string::npos);

  // Versions are revisions, not values: compare_and_set still works.
  EXPECT_TRUE(count.compare_and_set(v.mod_revision, 5).wait().value());
  ASSERT_TRUE(eventually([&] { return count.get().decoded(); }));
  EXPECT_EQ(*count.get().value, 5);
  EXPECT_EQ(count.errors().size(), 1u) << "reported once per stored version";
}

TEST_F(SharedValueTest, BadInputIsRefusedBeforeAnyWrite) {
  const std::string k = key("checked");
  SharedValue<int64_t, NonNegativeCodecForSharedValueTest> v(client(), k);
  auto r = v.set(-1).wait();
  EXPECT_TRUE(r.status().is(Errc::kBadArgument)) << r.status().to_string();
  EXPECT_NE(r.status().message().find("negative numbers"), std::string::npos) << r.status().message();
  auto c = v.compare_and_set(0, -1).wait();
  EXPECT_TRUE(c.status().is(Errc::kBadArgument)) << c.status().to_string();
  c = v.try_set(-5).wait();
  EXPECT_TRUE(c.status().is(Errc::kBadArgument));
  c = v.compare_and_set(-3, 1).wait();
  EXPECT_TRUE(c.status().is(Errc::kBadArgument)) << "a negative revision";
  EXPECT_TRUE(client().get(k).wait().value().kvs.empty()) << "nothing written";

  SharedValue<std::string> bad(client(), "");
  EXPECT_TRUE(bad.set("x").wait().status().is(Errc::kBadArgument));
  EXPECT_TRUE(bad.wait_initialized().wait().status().is(Errc::kBadArgument));
  EXPECT_THROW(bad.start(), Error);
  SharedValue<std::string> trailing(client(), key("dir/"));
  EXPECT_TRUE(trailing.try_set("x").wait().status().is(Errc::kBadArgument));

  v.close();
  EXPECT_TRUE(v.set(1).wait().status().is(Errc::kClosed));
  EXPECT_TRUE(v.compare_and_set(0, 1).wait().status().is(Errc::kClosed));
  EXPECT_TRUE(client().get(k).wait().value().kvs.empty());
}

TEST_F(SharedValueTest, AfterACompactionWhileCutOffTheChangeIsOneResyncEvent) {
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions o;
  o.endpoints = {proxy->endpoint()};
  Client cut_off(o);
  const std::string k = key("v");
  ASSERT_TRUE(client().put(k, "before").wait().ok());
  SharedValue<std::string> value(cut_off, k);
  SharedValueEvents<std::string> events;
  auto sub = value.on_change(events.listener());
  value.start();
  ASSERT_TRUE(value.wait_initialized().timeout(10s).wait().ok());
  const int64_t before = value.get().mod_revision;

  proxy->cut();
  ASSERT_TRUE(client().del(k).wait().ok());
  ASSERT_TRUE(client().put(k, "after").wait().ok());
  auto probe = client().put(key("probe"), "x").wait();
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(client().compact(probe->header.revision).wait().ok());
  proxy->restore();

  ASSERT_TRUE(events.wait_for(1));
  EXPECT_TRUE(eventually([&] { return value.resyncs() == 1; }));
  auto e = events.at(0);
  EXPECT_TRUE(e.resync);
  EXPECT_EQ(*e.previous.value, "before");
  EXPECT_EQ(e.previous.mod_revision, before);
  EXPECT_EQ(*e.current.value, "after");
  EXPECT_EQ(e.current.version, 1) << "deleted and created again while cut off: one event";
  EXPECT_GE(e.current.revision, probe->header.revision);
  EXPECT_EQ(*value.get().value, "after");
  // And it follows the key after the resync.
  EXPECT_TRUE(value.try_set("later").wait().value());
  ASSERT_TRUE(events.wait_for(2));
  EXPECT_EQ(*events.at(1).current.value, "later");
  EXPECT_FALSE(events.at(1).resync);
  EXPECT_EQ(events.size(), 2u);
  value.close();
}

}  // namespace
}  // namespace etcd::test
