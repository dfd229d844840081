// The KV options own no memory (safe as braced temporaries inside co_await
// on every compiler), refuse what would dangle, and reach the request
// whole; an Op keeps its own copy of what its options referred to.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "convert.h"
#include "etcd/kv.h"
#include "etcd/txn.h"

namespace etcd {
namespace {

namespace pb = etcdserverpb;

static_assert(std::is_trivially_destructible_v<GetOptions>);
static_assert(std::is_trivially_destructible_v<PutOptions>);
static_assert(std::is_trivially_destructible_v<DeleteOptions>);
static_assert(std::is_aggregate_v<GetOptions> && std::is_aggregate_v<DeleteOptions>, "designated initializers");

// A KeyView takes what outlives the expression and refuses a temporary.
static_assert(std::is_constructible_v<KeyView, const std::string&>);
static_assert(std::is_constructible_v<KeyView, std::string&>);
static_assert(std::is_constructible_v<KeyView, std::string_view>);
static_assert(std::is_constructible_v<KeyView, const char*>);
static_assert(!std::is_constructible_v<KeyView, std::string>);
static_assert(!std::is_constructible_v<KeyView, std::string&&>);
static_assert(!std::is_assignable_v<KeyView&, std::string>);
static_assert(std::is_convertible_v<KeyView, std::string_view>);

TEST(KvOptions, RangeEndReachesTheRequest) {
  const std::string end = "k9";
  GetOptions get{.range_end = end, .limit = 3};
  pb::RangeRequest range;
  detail::Namespace("ns/").fill(range, "k1", get);
  EXPECT_EQ(range.key(), "ns/k1");
  EXPECT_EQ(range.range_end(), "ns/k9");
  EXPECT_EQ(range.limit(), 3);

  pb::DeleteRangeRequest del;
  detail::Namespace("").fill(del, "k1", DeleteOptions{.range_end = kFromKey, .prev_kv = true});
  EXPECT_EQ(del.range_end(), std::string(1, '\0'));
  EXPECT_TRUE(del.prev_kv());

  GetOptions literal{.range_end = "z"};
  EXPECT_EQ(literal.range_end, "z");
}

TEST(KvOptions, AnOpOutlivesTheStringsItsOptionsReferredTo) {
  Txn txn;
  {
    std::string end(100, 'e');  // on the heap: freed when the scope ends
    txn.then(Op::get("a", {.range_end = end, .keys_only = true}), Op::del("b", {.range_end = end}));
    end.assign(100, 'x');  // and overwritten before that
  }
  pb::TxnRequest out;
  detail::Namespace("").fill(out, txn);
  ASSERT_EQ(out.success_size(), 2);
  EXPECT_EQ(out.success(0).request_range().range_end(), std::string(100, 'e'));
  EXPECT_TRUE(out.success(0).request_range().keys_only());
  EXPECT_EQ(out.success(1).request_delete_range().range_end(), std::string(100, 'e'));
  // A copied Op carries its own copy too.
  const Op copy = txn.success().at(0);
  EXPECT_EQ(std::get<Op::Get>(copy.op()).range_end, std::string(100, 'e'));
}

}  // namespace
}  // namespace etcd
