// The Txn builder and its conversion to etcd's TxnRequest, without a server:
// what a user writes must become exactly the request etcd is meant to get.
#include <gtest/gtest.h>

#include <type_traits>

#include "convert.h"
#include "etcd/txn.h"

namespace etcd {
namespace {

namespace pb = etcdserverpb;

pb::TxnRequest to_request(const Txn& txn, const std::string& ns = "") {
  pb::TxnRequest out;
  detail::Namespace(ns).fill(out, txn);
  return out;
}

// No defaulted class-type parameters (GCC 12 destroys such an argument
// twice inside a co_await): each short form must be an overload of its own.
static_assert(std::is_same_v<decltype(static_cast<Op (*)(std::string)>(&Op::get)), Op (*)(std::string)>);
static_assert(std::is_same_v<decltype(static_cast<Op (*)(std::string)>(&Op::del)), Op (*)(std::string)>);
static_assert(std::is_same_v<decltype(static_cast<Op (*)(std::string, std::string)>(&Op::put)),
                             Op (*)(std::string, std::string)>);

TEST(TxnBuilder, ComparesBecomeCompareMessagesWithTheRightTargetAndOperand) {
  auto req = to_request(Txn()
                            .when(Compare::create_revision("a") == 0)
                            .when(Compare::mod_revision("b") < 7)
                            .when(Compare::version("c") > 2)
                            .when(Compare::value("d") != std::string("x"))
                            .when(Compare::lease("e") == 0x1f));
  ASSERT_EQ(req.compare_size(), 5);
  EXPECT_EQ(req.compare(0).key(), "a");
  EXPECT_EQ(req.compare(0).target(), pb::Compare::CREATE);
  EXPECT_EQ(req.compare(0).result(), pb::Compare::EQUAL);
  EXPECT_EQ(req.compare(0).create_revision(), 0);
  EXPECT_EQ(req.compare(1).target(), pb::Compare::MOD);
  EXPECT_EQ(req.compare(1).result(), pb::Compare::LESS);
  EXPECT_EQ(req.compare(1).mod_revision(), 7);
  EXPECT_EQ(req.compare(2).target(), pb::Compare::VERSION);
  EXPECT_EQ(req.compare(2).result(), pb::Compare::GREATER);
  EXPECT_EQ(req.compare(2).version(), 2);
  EXPECT_EQ(req.compare(3).target(), pb::Compare::VALUE);
  EXPECT_EQ(req.compare(3).result(), pb::Compare::NOT_EQUAL);
  EXPECT_EQ(req.compare(3).value(), "x");
  EXPECT_EQ(req.compare(4).target(), pb::Compare::LEASE);
  EXPECT_EQ(req.compare(4).lease(), 0x1f);
  EXPECT_TRUE(req.compare(0).range_end().empty());
}

TEST(TxnBuilder, SugarAndPrefixCompares) {
  auto req = to_request(
      Txn().when({Compare::exists("k"), Compare::absent("l"), Compare::create_revision("p/").with_prefix() == 0}));
  ASSERT_EQ(req.compare_size(), 3);
  EXPECT_EQ(req.compare(0).result(), pb::Compare::GREATER);
  EXPECT_EQ(req.compare(0).create_revision(), 0);
  EXPECT_EQ(req.compare(1).result(), pb::Compare::EQUAL);
  EXPECT_EQ(req.compare(2).key(), "p/");
  EXPECT_EQ(req.compare(2).range_end(), "p0");  // '/' + 1
}

TEST(TxnBuilder, OpsLandInTheirBranchInOrderWithTheirOptions) {
  PutOptions put;
  put.lease = 42;
  put.prev_kv = true;
  GetOptions get;
  get.prefix = true;
  get.limit = 3;
  DeleteOptions del;
  del.prev_kv = true;
  auto req = to_request(Txn()
                            .then(Op::put("k", "v", put))
                            .then({Op::get("p/", get), Op::del("gone", del)})
                            .otherwise(Op::get("k"))
                            .otherwise({Op::del("x"), Op::put("y", "z")}));
  ASSERT_EQ(req.success_size(), 3);
  ASSERT_TRUE(req.success(0).has_request_put());
  EXPECT_EQ(req.success(0).request_put().key(), "k");
  EXPECT_EQ(req.success(0).request_put().value(), "v");
  EXPECT_EQ(req.success(0).request_put().lease(), 42);
  EXPECT_TRUE(req.success(0).request_put().prev_kv());
  ASSERT_TRUE(req.success(1).has_request_range());
  EXPECT_EQ(req.success(1).request_range().key(), "p/");
  EXPECT_EQ(req.success(1).request_range().range_end(), "p0");
  EXPECT_EQ(req.success(1).request_range().limit(), 3);
  ASSERT_TRUE(req.success(2).has_request_delete_range());
  EXPECT_TRUE(req.success(2).request_delete_range().prev_kv());
  EXPECT_TRUE(req.success(2).request_delete_range().range_end().empty());

  ASSERT_EQ(req.failure_size(), 3);
  ASSERT_TRUE(req.failure(0).has_request_range());
  EXPECT_TRUE(req.failure(0).request_range().range_end().empty());  // one key
  EXPECT_TRUE(req.failure(1).has_request_delete_range());
  ASSERT_TRUE(req.failure(2).has_request_put());
  EXPECT_EQ(req.failure(2).request_put().lease(), 0);
}

TEST(TxnBuilder, VariadicFormsEqualBracedLists) {
  auto braced = to_request(Txn()
                               .when({Compare::exists("a"), Compare::absent("b")})
                               .then({Op::put("a", "1"), Op::get("a"), Op::del("c")})
                               .otherwise({Op::get("b"), Op::get("c")}));
  auto variadic = to_request(Txn()
                                 .when(Compare::exists("a"), Compare::absent("b"))
                                 .then(Op::put("a", "1"), Op::get("a"), Op::del("c"))
                                 .otherwise(Op::get("b"), Op::get("c")));
  EXPECT_EQ(braced.SerializeAsString(), variadic.SerializeAsString());
  EXPECT_EQ(variadic.compare_size(), 2);
  EXPECT_EQ(variadic.success_size(), 3);
  EXPECT_EQ(variadic.failure_size(), 2);
  EXPECT_TRUE(variadic.success(2).has_request_delete_range());
}

TEST(TxnBuilder, NestedTxnBecomesARequestTxn) {
  Txn inner;
  inner.when(Compare::exists("a")).then(Op::del("a")).otherwise(Op::get("a"));
  auto req = to_request(Txn().when(Compare::absent("b")).then(Op::txn(std::move(inner))));
  ASSERT_EQ(req.success_size(), 1);
  ASSERT_TRUE(req.success(0).has_request_txn());
  const auto& nested = req.success(0).request_txn();
  ASSERT_EQ(nested.compare_size(), 1);
  EXPECT_EQ(nested.compare(0).key(), "a");
  ASSERT_EQ(nested.success_size(), 1);
  EXPECT_TRUE(nested.success(0).has_request_delete_range());
  ASSERT_EQ(nested.failure_size(), 1);
  EXPECT_TRUE(nested.failure(0).has_request_range());
}

TEST(TxnBuilder, TheClientNamespacePrefixesEveryKeyAndRangeEnd) {
  GetOptions all;
  all.prefix = true;
  auto req = to_request(Txn()
                            .when(Compare::version("k").with_prefix() > 0)
                            .then(Op::get("", all))
                            .then(Op::txn(Txn().then(Op::put("n", "v")))),
                        "ns/");
  EXPECT_EQ(req.compare(0).key(), "ns/k");
  EXPECT_EQ(req.compare(0).range_end(), "ns/l");
  // An empty prefix inside a namespace is the whole namespace, not the keyspace.
  EXPECT_EQ(req.success(0).request_range().key(), "ns/");
  EXPECT_EQ(req.success(0).request_range().range_end(), "ns0");
  EXPECT_EQ(req.success(1).request_txn().success(0).request_put().key(), "ns/n");
}

TEST(TxnBuilder, ResponsesLeaveTheNamespace) {
  pb::TxnResponse r;
  r.set_succeeded(true);
  r.mutable_header()->set_revision(9);
  auto* range = r.add_responses()->mutable_response_range();
  auto* kv = range->add_kvs();
  kv->set_key("ns/a");
  kv->set_value("1");
  r.add_responses()->mutable_response_txn()->add_responses()->mutable_response_delete_range()->set_deleted(2);
  TxnResponse out = detail::Namespace("ns/").convert(r);
  EXPECT_TRUE(out.succeeded);
  EXPECT_EQ(out.header.revision, 9);
  ASSERT_EQ(out.responses.size(), 2u);
  ASSERT_EQ(out.responses[0].get().kvs.size(), 1u);
  EXPECT_EQ(out.responses[0].get().kvs[0].key, "a");
  EXPECT_EQ(out.responses[1].txn().responses.at(0).del().deleted, 2);
}

}  // namespace
}  // namespace etcd
