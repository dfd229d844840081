// KV and Txn semantics against a real etcd member.
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using KvTest = SingleMemberTest;

TEST_F(KvTest, PutThenGetReturnsValueAndRevisions) {
  auto put = client().put(key("a"), "1").wait();
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  EXPECT_GT(put->header.revision, 0);

  auto got = client().get(key("a")).wait();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].key, key("a"));
  EXPECT_EQ(got->kvs[0].value, "1");
  EXPECT_EQ(got->kvs[0].create_revision, put->header.revision);
  EXPECT_EQ(got->kvs[0].mod_revision, put->header.revision);
  EXPECT_EQ(got->kvs[0].version, 1);
}

TEST_F(KvTest, MissingKeyIsAnEmptyResultNotAnError) {
  auto got = client().get(key("missing")).wait();
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->kvs.empty());
  EXPECT_EQ(got->first(), nullptr);
  EXPECT_EQ(got->count, 0);
}

TEST_F(KvTest, PutReturnsPrevKvAndIgnoreValueKeepsValue) {
  ASSERT_TRUE(client().put(key("p"), "old").wait().ok());
  auto put = client().put(key("p"), "new", {.prev_kv = true}).wait();
  ASSERT_TRUE(put.ok());
  ASSERT_TRUE(put->prev_kv.has_value());
  EXPECT_EQ(put->prev_kv->value, "old");

  auto lease = client().lease_grant(std::chrono::seconds(30)).wait();
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(client().put(key("p"), "", {.lease = lease->id, .ignore_value = true}).wait().ok());
  auto got = client().get(key("p")).wait();
  EXPECT_EQ(got->kvs.at(0).value, "new");
  EXPECT_EQ(got->kvs.at(0).lease, lease->id);
}

TEST_F(KvTest, PrefixRangeLimitSortCountAndKeysOnly) {
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(client().put(key("r/" + std::to_string(i)), "v" + std::to_string(i)).wait().ok());
  ASSERT_TRUE(client().put(key("rr"), "outside").wait().ok());

  auto all = client().get(key("r/"), {.prefix = true}).wait();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->kvs.size(), 5u);
  EXPECT_EQ(all->count, 5);
  EXPECT_EQ(all->kvs[0].key, key("r/0"));

  auto limited = client().get(key("r/"), {.prefix = true, .limit = 2, .sort_order = SortOrder::kDescend}).wait();
  ASSERT_TRUE(limited.ok());
  ASSERT_EQ(limited->kvs.size(), 2u);
  EXPECT_TRUE(limited->more);
  EXPECT_EQ(limited->count, 5);
  EXPECT_EQ(limited->kvs[0].key, key("r/4"));

  auto count = client().get(key("r/"), {.prefix = true, .count_only = true}).wait();
  EXPECT_EQ(count->count, 5);
  EXPECT_TRUE(count->kvs.empty());

  auto keys = client().get(key("r/"), {.prefix = true, .keys_only = true}).wait();
  ASSERT_EQ(keys->kvs.size(), 5u);
  EXPECT_TRUE(keys->kvs[0].value.empty());

  const std::string end = key("r/3");
  auto range = client().get(key("r/1"), {.range_end = end}).wait();
  ASSERT_EQ(range->kvs.size(), 2u);

  auto serial = client().get(key("r/"), {.prefix = true, .serializable = true}).wait();
  EXPECT_EQ(serial->kvs.size(), 5u);
}

TEST_F(KvTest, GetAtAnOldRevisionSeesTheOldValue) {
  auto first = client().put(key("h"), "one").wait();
  ASSERT_TRUE(client().put(key("h"), "two").wait().ok());
  auto old = client().get(key("h"), {.revision = first->header.revision}).wait();
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->kvs.at(0).value, "one");

  auto future = client().get(key("h"), {.revision = first->header.revision + 1000000}).wait();
  ASSERT_FALSE(future.ok());
  EXPECT_TRUE(future.status().is(Errc::kFutureRevision)) << future.status().to_string();
}

TEST_F(KvTest, DeleteSingleAndPrefixWithPrevKvs) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client().put(key("d/" + std::to_string(i)), "x").wait().ok());
  auto one = client().del(key("d/0")).wait();
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->deleted, 1);
  auto rest = client().del(key("d/"), {.prefix = true, .prev_kv = true}).wait();
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->deleted, 2);
  ASSERT_EQ(rest->prev_kvs.size(), 2u);
  EXPECT_EQ(rest->prev_kvs[0].value, "x");
  EXPECT_EQ(client().get(key("d/"), {.prefix = true, .count_only = true}).wait()->count, 0);
}

TEST_F(KvTest, BadInputIsRejectedBeforeAnythingIsSent) {
  const auto before = client().stats().rpcs_started;
  auto empty_put = client().put("", "v").wait();
  EXPECT_EQ(empty_put.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(empty_put.status().is(Errc::kBadArgument));
  auto both = client().get(key("x"), {.prefix = true, .range_end = "z"}).wait();
  EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument);
  auto ttl = client().lease_grant(std::chrono::seconds(0)).wait();
  EXPECT_EQ(ttl.status().code(), StatusCode::kInvalidArgument);
  auto compact = client().compact(0).wait();
  EXPECT_EQ(compact.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client().stats().rpcs_started, before);
  EXPECT_THROW(Client(ClientOptions{}), Error);
  EXPECT_THROW(Client(ClientOptions{.endpoints = {"no-port"}}), Error);
  EXPECT_THROW(Client(ClientOptions{.endpoints = {"http://127.0.0.1:2379"}}), Error);
}

TEST_F(KvTest, TxnCreateIfAbsentRunsOnceThenTheElseBranch) {
  auto make = [&] {
    return Txn().when(Compare::absent(key("once"))).then(Op::put(key("once"), "first")).otherwise(Op::get(key("once")));
  };
  auto first = client().txn(make()).wait();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->succeeded);
  ASSERT_EQ(first->responses.size(), 1u);
  EXPECT_GT(first->responses[0].put().header.revision, 0);

  auto second = client().txn(make()).wait();
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->succeeded);
  EXPECT_EQ(second->responses.at(0).get().kvs.at(0).value, "first");
}

TEST_F(KvTest, TxnComparesOnValueVersionRevisionsAndLease) {
  auto put = client().put(key("c"), "v1").wait();
  const int64_t rev = put->header.revision;
  auto check = [&](Compare c) {
    auto r = client().txn(Txn().when(std::move(c))).wait();
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() && r->succeeded;
  };
  EXPECT_TRUE(check(Compare::value(key("c")) == std::string("v1")));
  EXPECT_FALSE(check(Compare::value(key("c")) == std::string("v2")));
  EXPECT_TRUE(check(Compare::value(key("c")) != std::string("v2")));
  EXPECT_TRUE(check(Compare::version(key("c")) == 1));
  EXPECT_TRUE(check(Compare::version(key("c")) < 2));
  EXPECT_TRUE(check(Compare::create_revision(key("c")) == rev));
  EXPECT_TRUE(check(Compare::mod_revision(key("c")) == rev));
  EXPECT_FALSE(check(Compare::mod_revision(key("c")) > rev));
  EXPECT_TRUE(check(Compare::lease(key("c")) == 0));
  EXPECT_TRUE(check(Compare::exists(key("c"))));
  EXPECT_TRUE(check(Compare::absent(key("nope"))));
  EXPECT_TRUE(check(Compare::version(key("")).with_prefix() > 0));
}

TEST_F(KvTest, NestedTxnAndMultipleOps) {
  ASSERT_TRUE(client().put(key("n0"), "gone soon").wait().ok());
  auto r = client()
               .txn(Txn()
                        .when(Compare::absent(key("n1")))
                        .then({Op::put(key("n1"), "a"), Op::put(key("n2"), "b"),
                               Op::txn(Txn().when(Compare::absent(key("n3"))).then(Op::put(key("n3"), "c"))),
                               Op::del(key("n0"))}))
               .wait();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->succeeded);
  ASSERT_EQ(r->responses.size(), 4u);
  EXPECT_TRUE(r->responses[2].txn().succeeded);
  EXPECT_EQ(r->responses[3].del().deleted, 1);
  EXPECT_EQ(client().get(key("n"), {.prefix = true, .count_only = true}).wait()->count, 3);  // n1 n2 n3
  EXPECT_TRUE(client().get(key("n0")).wait()->kvs.empty());
}

TEST_F(KvTest, TxnWritingTheSameKeyTwiceIsANamedError) {
  auto r = client().txn(Txn().then({Op::put(key("dup"), "1"), Op::put(key("dup"), "2")})).wait();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kDuplicateKey)) << r.status().to_string();
}

TEST_F(KvTest, NamespaceIsTransparentAndIsolated) {
  auto o = options();
  o.namespace_prefix = key("ns/");
  Client scoped(o);
  ASSERT_TRUE(scoped.put("k", "inside").wait().ok());
  auto raw = client().get(key("ns/k")).wait();
  ASSERT_EQ(raw->kvs.size(), 1u);
  EXPECT_EQ(raw->kvs[0].value, "inside");

  ASSERT_TRUE(client().put(key("outside"), "x").wait().ok());
  auto all = scoped.get("", {.prefix = true}).wait();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->kvs.size(), 1u);
  EXPECT_EQ(all->kvs[0].key, "k");

  auto txn = scoped.txn(Txn().when(Compare::value("k") == std::string("inside")).then(Op::get("k"))).wait();
  ASSERT_TRUE(txn.ok());
  EXPECT_TRUE(txn->succeeded);
  EXPECT_EQ(txn->responses[0].get().kvs[0].key, "k");
  EXPECT_EQ(scoped.del("", {.prefix = true}).wait()->deleted, 1);
  EXPECT_EQ(client().get(key("outside")).wait()->kvs.size(), 1u);
}

TEST_F(KvTest, WholeKeyspaceOfANamespaceWithAnEmptyPrefix) {
  auto o = options();
  o.namespace_prefix = key("all/");
  Client scoped(o);
  ASSERT_TRUE(scoped.put("a", "1").wait().ok());
  ASSERT_TRUE(scoped.put("b", "2").wait().ok());
  auto all = scoped.get("", {.prefix = true, .count_only = true}).wait();
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_EQ(all->count, 2);
  // Without a namespace, an empty prefix means every key there is.
  auto everything = client().get("", {.prefix = true, .count_only = true}).wait();
  ASSERT_TRUE(everything.ok()) << everything.status().to_string();
  EXPECT_GE(everything->count, 2);
}

TEST_F(KvTest, CompactMakesOldRevisionsUnreadable) {
  auto first = client().put(key("cmp"), "1").wait();
  auto second = client().put(key("cmp"), "2").wait();
  ASSERT_TRUE(client().compact(second->header.revision).wait().ok());
  auto old = client().get(key("cmp"), {.revision = first->header.revision}).wait();
  ASSERT_FALSE(old.ok());
  EXPECT_TRUE(old.status().is(Errc::kCompacted)) << old.status().to_string();
  EXPECT_EQ(old.status().code(), StatusCode::kOutOfRange);
}

TEST_F(KvTest, StatusAndMemberList) {
  auto st = client().status().wait();
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_NE(st->leader, 0u);
  EXPECT_FALSE(st->version.empty());
  EXPECT_GT(st->db_size, 0);
  auto direct = client().status(cluster().endpoint(0)).wait();
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->header.member_id, st->header.member_id);
  auto members = client().member_list().wait();
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->members.size(), 1u);
  EXPECT_EQ(members->members[0].id, st->header.member_id);
}

}  // namespace
}  // namespace etcd::test
