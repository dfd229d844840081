// TransientKeyValue and TypedTransientKeyValue against a real etcd: the key
// lives with its owner, is never taken from another owner, and heals after
// a lease loss only where it is free (the fault proxy cuts the owner off).
#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>

#include "etcd/recipes/transient.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::RecipeOptions;
using recipes::TransientKeyValue;
using recipes::TypedTransientKeyValue;

RecipeOptions ttl(std::chrono::seconds s) {
  RecipeOptions o;
  o.session_ttl = s;
  return o;
}

struct Unencodable {
  static std::string encode(int64_t v) {
    if (v < 0) throw std::runtime_error("negative");
    return std::to_string(v);
  }
  static Result<int64_t> decode(std::string_view bytes, std::string_view key) {
    return recipes::IntegerCodec<int64_t>::decode(bytes, key);
  }
};

class TransientTest : public SingleMemberTest {
 protected:
  std::optional<KeyValue> get(const std::string& k) {
    auto r = client().get(k).wait().value();
    if (r.kvs.empty()) return std::nullopt;
    return r.kvs.front();
  }
  static bool has_error(const recipes::detail::TransientBase& t, StatusCode code, const std::string& text) {
    for (const auto& e : t.errors()) {
      if (e.code() == code && e.message().find(text) != std::string::npos) return true;
    }
    return false;
  }
};

TEST_F(TransientTest, CreatesUpdatesAndRemovesItsKey) {
  const std::string k = key("marker");
  TransientKeyValue t(client(), k, "job-42");
  EXPECT_FALSE(get(k).has_value()) << "the constructor does no I/O";
  t.create().wait().value();
  auto kv = get(k);
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->value, "job-42");
  EXPECT_NE(kv->lease, 0);
  EXPECT_EQ(kv->lease, t.lease());
  EXPECT_EQ(kv->create_revision, t.create_revision());
  EXPECT_TRUE(t.is_held());
  t.create().wait().value();  // idempotent

  t.set_value("job-43").wait().value();
  EXPECT_EQ(get(k)->value, "job-43");
  EXPECT_EQ(get(k)->create_revision, t.create_revision()) << "updated in place";
  EXPECT_EQ(t.value(), "job-43");

  EXPECT_TRUE(t.release().wait().value());
  EXPECT_FALSE(get(k).has_value()) << "gone when release() completes";
  EXPECT_TRUE(t.closed());
  EXPECT_TRUE(t.create().wait().status().is(Errc::kClosed));
  EXPECT_TRUE(t.release().wait().value()) << "release() answers again";
}

TEST_F(TransientTest, FirstUseCreatesAndCloseOrTheDestructorRemoves) {
  const std::string a = key("a");
  const std::string b = key("b");
  {
    TransientKeyValue t(client(), a, "1");
    t.set_value("2").wait().value();  // first use: created with the new value
    EXPECT_EQ(get(a)->value, "2");
    t.close();
    EXPECT_TRUE(eventually([&] { return !get(a).has_value(); }));
  }
  {
    TransientKeyValue t(client(), b, "x");
    t.start();  // in the background
    ASSERT_TRUE(eventually([&] { return get(b).has_value(); }));
    EXPECT_EQ(get(b)->value, "x");
  }
  EXPECT_TRUE(eventually([&] { return !get(b).has_value(); })) << "the destructor removes the key";
}

TEST_F(TransientTest, AnotherOwnersKeyIsRefusedAndNeverOverwritten) {
  const std::string k = key("owned");
  TransientKeyValue first(client(), k, "first");
  first.create().wait().value();
  TransientKeyValue second(client(), k, "second");
  auto st = second.create().wait().status();
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.to_string();
  EXPECT_NE(st.message().find(k), std::string::npos) << "names the key: " << st.message();
  EXPECT_FALSE(second.is_held());
  st = second.set_value("second, again").wait().status();
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.to_string();
  EXPECT_EQ(get(k)->value, "first");
  EXPECT_FALSE(second.release().wait().value()) << "it was never ours";
  EXPECT_EQ(get(k)->value, "first") << "its release deleted nothing";

  // Once the first owner is gone, a new object gets the key.
  EXPECT_TRUE(first.release().wait().value());
  TransientKeyValue third(client(), k, "third");
  third.create().wait().value();
  EXPECT_EQ(get(k)->value, "third");

  // A plain key (no lease) is another owner's too.
  const std::string plain = key("plain");
  (void)client().put(plain, "operator's").wait().value();
  TransientKeyValue t(client(), plain, "mine");
  EXPECT_EQ(t.create().wait().status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(get(plain)->value, "operator's");
  t.close();
  EXPECT_EQ(get(plain)->value, "operator's");
}

TEST_F(TransientTest, ACutOffOwnerLosesItsKeyAndNeverOverwritesAKeyPutMeanwhile) {
  const std::string k = key("cut");
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions via_proxy = options();
  via_proxy.endpoints = {proxy->endpoint()};
  Client flaky(via_proxy);
  TransientKeyValue owner(flaky, k, "v1", ttl(2s));
  std::atomic<int> lost{0};
  std::atomic<int> restored{0};
  auto l = owner.on_lost([&](const Status&) { ++lost; });
  auto r = owner.on_restored([&] { ++restored; });
  owner.create().wait().value();

  proxy->blackhole();
  ASSERT_TRUE(eventually([&] { return !get(k).has_value(); }, 20s)) << "the lease expired: the key is gone";
  ASSERT_TRUE(eventually([&] { return lost.load() == 1; }, 20s)) << "the owner noticed";
  EXPECT_FALSE(owner.is_held());
  EXPECT_EQ(owner.state(), ConnectionState::kLost);
  // Someone else takes the key meanwhile.
  (void)client().put(k, "someone else's").wait().value();
  // While lost, set_value keeps the value for the heal and says it was not written.
  auto st = owner.set_value("v2").wait().status();
  EXPECT_TRUE(st.is(Errc::kHoldLost)) << st.to_string();
  EXPECT_EQ(owner.value(), "v2");

  proxy->pass();
  ASSERT_TRUE(eventually([&] { return has_error(owner, StatusCode::kAlreadyExists, k); }, 20s))
      << "the owner reports that another owner has its key";
  // It keeps trying (a Txn per try, at most 1 s apart), and never overwrites.
  const int64_t others_revision = get(k)->mod_revision;
  const auto rpcs = flaky.stats().rpcs_started;
  ASSERT_TRUE(eventually([&] { return flaky.stats().rpcs_started >= rpcs + 2; }, 10s));
  EXPECT_EQ(get(k)->value, "someone else's");
  EXPECT_EQ(get(k)->mod_revision, others_revision);
  EXPECT_FALSE(owner.is_held());
  EXPECT_EQ(restored.load(), 0);
  EXPECT_FALSE(owner.release().wait().value()) << "not ours: nothing deleted";
  EXPECT_EQ(get(k)->value, "someone else's");
}

TEST_F(TransientTest, ACutOffOwnerRecreatesItsKeyWithTheCurrentValueOnceFree) {
  const std::string k = key("heal");
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions via_proxy = options();
  via_proxy.endpoints = {proxy->endpoint()};
  Client flaky(via_proxy);
  TransientKeyValue owner(flaky, k, "v1", ttl(2s));
  std::atomic<int> restored{0};
  auto r = owner.on_restored([&] { ++restored; });
  owner.create().wait().value();
  const int64_t first_revision = owner.create_revision();

  proxy->blackhole();
  ASSERT_TRUE(eventually([&] { return !get(k).has_value(); }, 20s));
  ASSERT_TRUE(eventually([&] { return owner.state() == ConnectionState::kLost; }, 20s));
  EXPECT_TRUE(owner.set_value("v2").wait().status().is(Errc::kHoldLost));
  proxy->pass();
  // Free when the link returns: re-created at once, with the current value.
  ASSERT_TRUE(eventually([&] { return owner.is_held(); }, 20s));
  auto kv = get(k);
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->value, "v2");
  EXPECT_EQ(kv->lease, owner.lease());
  EXPECT_GT(kv->create_revision, first_revision);
  EXPECT_TRUE(eventually([&] { return restored.load() == 1; }));
  EXPECT_EQ(owner.state(), ConnectionState::kReconnected);
  owner.set_value("v3").wait().value();
  EXPECT_EQ(get(k)->value, "v3");

  // Taken while cut off, freed later: the owner gets it back then.
  proxy->blackhole();
  ASSERT_TRUE(eventually([&] { return !get(k).has_value(); }, 20s));
  (void)client().put(k, "someone else's").wait().value();
  proxy->pass();
  ASSERT_TRUE(eventually([&] { return has_error(owner, StatusCode::kAlreadyExists, k); }, 20s));
  EXPECT_EQ(get(k)->value, "someone else's");
  (void)client().del(k).wait().value();
  ASSERT_TRUE(eventually([&] { return owner.is_held(); }, 10s)) << "re-created once free";
  EXPECT_EQ(get(k)->value, "v3");
  EXPECT_TRUE(eventually([&] { return restored.load() == 2; }));
  EXPECT_TRUE(owner.release().wait().value());
  EXPECT_FALSE(get(k).has_value());
}

TEST_F(TransientTest, AKeyDeletedBySomeoneElseIsFoundBySetValueAndHealed) {
  const std::string k = key("deleted");
  TransientKeyValue owner(client(), k, "v1");
  std::atomic<int> lost{0};
  auto l = owner.on_lost([&](const Status& why) {
    if (why.is(Errc::kHoldLost)) ++lost;
  });
  owner.create().wait().value();
  (void)client().del(k).wait().value();
  (void)client().put(k, "operator's").wait().value();
  auto st = owner.set_value("v2").wait().status();
  EXPECT_TRUE(st.is(Errc::kHoldLost)) << st.to_string();
  EXPECT_TRUE(eventually([&] { return lost.load() == 1; }));
  EXPECT_EQ(get(k)->value, "operator's") << "not overwritten";
  EXPECT_TRUE(eventually([&] { return has_error(owner, StatusCode::kAlreadyExists, k); }));
  (void)client().del(k).wait().value();
  ASSERT_TRUE(eventually([&] { return owner.is_held(); }, 10s));
  EXPECT_EQ(get(k)->value, "v2");
}

TEST_F(TransientTest, KeysOfOneClientShareOneLeaseAndLeaveItOneByOne) {
  const std::string a = key("a"), b = key("b"), c = key("c");
  Client own_client(options());
  TransientKeyValue first(own_client, a, "1");
  TransientKeyValue second(own_client, b, "2");
  RecipeOptions separate;
  separate.own_presence_lease = true;
  TransientKeyValue alone(own_client, c, "3", separate);
  first.create().wait().value();
  second.create().wait().value();
  alone.create().wait().value();
  EXPECT_NE(first.lease(), 0);
  EXPECT_EQ(first.lease(), second.lease()) << "one presence lease for the client's keys of one TTL";
  EXPECT_NE(alone.lease(), first.lease()) << "own_presence_lease: a lease of its own";
  const int64_t shared = first.lease();

  // Closing one deletes its key; the other's key and the lease live on.
  EXPECT_TRUE(first.release().wait().value());
  EXPECT_FALSE(get(a).has_value());
  ASSERT_TRUE(get(b).has_value());
  EXPECT_EQ(get(b)->lease, shared);
  EXPECT_GT(client().lease_time_to_live(shared).wait().value().ttl, 0);
  // The last one to leave revokes it.
  EXPECT_TRUE(second.release().wait().value());
  EXPECT_FALSE(get(b).has_value());
  EXPECT_TRUE(eventually([&] { return client().lease_time_to_live(shared).wait().value().ttl == -1; }, 10s))
      << "revoked with its last user";
  ASSERT_TRUE(get(c).has_value()) << "a key on its own lease is not touched";
}

TEST_F(TransientTest, AfterASharedLeaseIsLostEachKeyHealsAloneWhereItIsFree) {
  const std::string a = key("free"), b = key("taken");
  Client own_client(options());
  TransientKeyValue free_key(own_client, a, "1", ttl(2s));
  TransientKeyValue taken_key(own_client, b, "2", ttl(2s));
  std::atomic<int> restored_free{0}, restored_taken{0};
  auto r1 = free_key.on_restored([&] { ++restored_free; });
  auto r2 = taken_key.on_restored([&] { ++restored_taken; });
  free_key.create().wait().value();
  taken_key.create().wait().value();
  const int64_t old_lease = free_key.lease();
  ASSERT_EQ(taken_key.lease(), old_lease);

  // The lease is revoked (both keys go); someone else puts b before the heal can.
  (void)client().lease_revoke(old_lease).wait().value();
  (void)client().put(b, "someone else's").wait().value();
  ASSERT_TRUE(eventually([&] { return restored_free.load() == 1; }, 20s)) << "the free key heals";
  EXPECT_NE(free_key.lease(), old_lease);
  ASSERT_TRUE(get(a).has_value());
  EXPECT_EQ(get(a)->lease, free_key.lease());
  ASSERT_TRUE(eventually([&] { return has_error(taken_key, StatusCode::kAlreadyExists, b); }, 20s));
  EXPECT_FALSE(taken_key.is_held());
  EXPECT_EQ(get(b)->value, "someone else's") << "never overwritten";
  EXPECT_EQ(restored_taken.load(), 0);

  // Once b is free, it heals by itself, on the same shared lease.
  (void)client().del(b).wait().value();
  ASSERT_TRUE(eventually([&] { return restored_taken.load() == 1; }, 20s));
  EXPECT_EQ(taken_key.lease(), free_key.lease());
  ASSERT_TRUE(get(b).has_value());
  EXPECT_EQ(get(b)->value, "2");
  EXPECT_EQ(restored_free.load(), 1) << "the other key was not disturbed";
}

TEST_F(TransientTest, TwoObjectsOfOneClientOnOneKeyAreTwoOwners) {
  // A shared lease must not make a second object take the first one's key for its own.
  const std::string k = key("same");
  TransientKeyValue first(client(), k, "first");
  TransientKeyValue second(client(), k, "second");
  first.create().wait().value();
  const Status st = second.create().wait().status();
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.to_string();
  EXPECT_FALSE(second.is_held());
  // Not sticky: once the first is gone, the second can have it.
  EXPECT_TRUE(first.release().wait().value());
  second.create().wait().value();
  EXPECT_EQ(get(k)->value, "second");
  TransientKeyValue third(client(), k, "third");
  EXPECT_EQ(third.create().wait().status().code(), StatusCode::kAlreadyExists);
  EXPECT_FALSE(third.release().wait().value()) << "never its: nothing deleted";
  ASSERT_TRUE(get(k).has_value());
  EXPECT_EQ(get(k)->value, "second");
}

TEST_F(TransientTest, TypedValuesGoThroughTheCodec) {
  const std::string k = key("port");
  TypedTransientKeyValue<int64_t> port(client(), k, 8080);
  port.create().wait().value();
  EXPECT_EQ(get(k)->value, "8080");
  port.set_value(9090).wait().value();
  EXPECT_EQ(get(k)->value, "9090");
  EXPECT_EQ(port.value(), 9090);

  // An unencodable value: kBadArgument before any write.
  const std::string u = key("unencodable");
  TypedTransientKeyValue<int64_t, Unencodable> typed(client(), u, 1, RecipeOptions(), Unencodable());
  typed.create().wait().value();
  const auto before = client().stats().rpcs_started;
  auto st = typed.set_value(-1).wait().status();
  EXPECT_TRUE(st.is(Errc::kBadArgument)) << st.to_string();
  EXPECT_NE(st.message().find("TypedTransientKeyValue"), std::string::npos) << st.message();
  EXPECT_EQ(client().stats().rpcs_started, before) << "nothing was sent";
  EXPECT_EQ(typed.value(), 1) << "the value is unchanged";
  EXPECT_EQ(get(u)->value, "1");

  TypedTransientKeyValue<int64_t, Unencodable> bad(client(), key("bad"), -5, RecipeOptions(), Unencodable());
  EXPECT_THROW(bad.start(), Error);
  st = bad.create().wait().status();
  EXPECT_TRUE(st.is(Errc::kBadArgument)) << st.to_string();
  EXPECT_FALSE(get(key("bad")).has_value());
}

}  // namespace
}  // namespace etcd::test
