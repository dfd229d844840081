// GroupMember against a real etcd: join, list, update, leave with events; an
// id someone else has; bad ids before any write; re-joining after a lease
// loss; the member list after a compaction while the client was cut off.
#include "etcd/recipes/group_member.h"

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::GroupEvent;
using recipes::GroupMember;
using GroupType = GroupEvent::Type;
using MemberMap = std::map<std::string, std::string>;

struct GroupEvents {
  std::mutex mu;
  std::vector<GroupEvent> all;

  std::function<void(const GroupEvent&)> listener() {
    return [this](const GroupEvent& e) {
      std::lock_guard lock(mu);
      all.push_back(e);
    };
  }
  std::vector<GroupEvent> snapshot() {
    std::lock_guard lock(mu);
    return all;
  }
  // The first event of `type` for `id` after `from`, waited for.
  std::optional<GroupEvent> wait_for(GroupType type, const std::string& id, size_t from = 0) {
    std::optional<GroupEvent> found;
    eventually(
        [&] {
          auto events = snapshot();
          for (size_t i = from; i < events.size(); ++i) {
            if (events[i].type == type && events[i].id == id) {
              found = events[i];
              return true;
            }
          }
          return false;
        },
        20s);
    return found;
  }
};

recipes::RecipeOptions group_ttl(std::chrono::seconds ttl) {
  recipes::RecipeOptions o;
  o.session_ttl = ttl;
  return o;
}

class GroupMemberTest : public SingleMemberTest {};

TEST_F(GroupMemberTest, MembersJoinUpdateAndLeaveAndEveryoneSeesIt) {
  const std::string g = key("indexers");
  GroupMember a(client(), g, "a", "pa");
  GroupEvents seen;
  auto sub = a.on_change(seen.listener());
  a.start();
  ASSERT_TRUE(a.wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(eventually([&] { return a.members() == MemberMap{{"a", "pa"}}; })) << "it sees itself";
  EXPECT_TRUE(a.is_member());
  EXPECT_NE(a.lease(), 0);
  EXPECT_EQ(client().get(g + "/a").wait().value().kvs.at(0).value, "pa");

  GroupMember b(client(), g, "b", "pb");
  b.join().wait().value();
  b.start();
  ASSERT_TRUE(b.wait_initialized().timeout(10s).wait().ok());
  EXPECT_EQ(b.members(), (MemberMap{{"a", "pa"}, {"b", "pb"}}));
  auto joined = seen.wait_for(GroupType::kJoined, "b");
  ASSERT_TRUE(joined);
  EXPECT_EQ(joined->payload, "pb");
  EXPECT_FALSE(joined->initial);
  EXPECT_FALSE(joined->resync);

  b.set_payload("pb2").wait().value();
  EXPECT_EQ(b.payload(), "pb2");
  auto updated = seen.wait_for(GroupType::kUpdated, "b");
  ASSERT_TRUE(updated);
  EXPECT_EQ(updated->payload, "pb2");
  EXPECT_EQ(updated->previous_payload, "pb");
  EXPECT_EQ(a.members(), (MemberMap{{"a", "pa"}, {"b", "pb2"}}));

  EXPECT_TRUE(b.leave().wait().value());
  EXPECT_TRUE(b.closed());
  auto left = seen.wait_for(GroupType::kLeft, "b");
  ASSERT_TRUE(left);
  EXPECT_EQ(left->payload, "pb2") << "the last payload seen";
  EXPECT_EQ(a.members(), (MemberMap{{"a", "pa"}}));
  EXPECT_TRUE(client().get(g + "/b").wait().value().kvs.empty());

  // Deeper keys and neighbours are not members.
  ASSERT_TRUE(client().put(g + "/a/x", "deep").wait().ok());
  ASSERT_TRUE(client().put(g + "-other/z", "n").wait().ok());
  ASSERT_TRUE(client().put(g + "/c", "plain put").wait().ok());
  ASSERT_TRUE(seen.wait_for(GroupType::kJoined, "c"));
  EXPECT_EQ(a.members(), (MemberMap{{"a", "pa"}, {"c", "plain put"}}));

  a.close();
  EXPECT_TRUE(eventually([&] { return client().get(g + "/a").wait().value().kvs.empty(); })) << "close leaves";
  EXPECT_TRUE(a.errors().empty());
}

TEST_F(GroupMemberTest, AnIdSomeoneElseHasIsRefusedAndBadIdsBeforeAnyWrite) {
  const std::string g = key("g");
  ASSERT_TRUE(client().put(g + "/taken", "someone's").wait().ok());
  GroupMember m(client(), g, "taken", "mine");
  auto st = m.join().wait().status();
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.to_string();
  EXPECT_NE(st.message().find(g + "/taken"), std::string::npos) << st.message();
  EXPECT_EQ(client().get(g + "/taken").wait().value().kvs.at(0).value, "someone's") << "never overwritten";
  EXPECT_FALSE(m.is_member());
  EXPECT_FALSE(m.leave().wait().value()) << "not ours: nothing deleted";
  EXPECT_EQ(client().get(g + "/taken").wait().value().kvs.at(0).value, "someone's");

  for (const std::string id : {"", "a/b"}) {
    GroupMember bad(client(), g, id, "p");
    EXPECT_TRUE(bad.join().wait().status().is(Errc::kBadArgument)) << "'" << id << "'";
    EXPECT_TRUE(bad.set_payload("q").wait().status().is(Errc::kBadArgument));
    EXPECT_THROW(bad.start(), Error);
  }
  GroupMember bad_group(client(), g + "/", "x", "p");
  EXPECT_TRUE(bad_group.join().wait().status().is(Errc::kBadArgument));
  auto all = client().get(g, GetOptions{.prefix = true}).wait().value();
  EXPECT_EQ(all.kvs.size(), 1u) << "nothing written";
}

TEST_F(GroupMemberTest, AMemberWhoseLeaseIsLostRejoinsWithItsCurrentPayload) {
  const std::string g = key("g");
  GroupMember m(client(), g, "m", "p1", group_ttl(2s));
  std::atomic<int> lost{0};
  std::atomic<int> restored{0};
  auto l = m.on_lost([&](const Status&) { ++lost; });
  auto r = m.on_restored([&] { ++restored; });
  GroupMember watcher(client(), g, "w", "w");
  GroupEvents seen;
  auto sub = watcher.on_change(seen.listener());
  watcher.start();
  m.start();
  // The others may see the key before m has the answer to its own write.
  ASSERT_TRUE(eventually([&] { return watcher.members().count("m") == 1 && m.is_member(); }));
  const int64_t old_lease = m.lease();
  ASSERT_NE(old_lease, 0);
  const size_t mark = seen.snapshot().size();

  (void)client().lease_revoke(old_lease).wait().value();
  ASSERT_TRUE(seen.wait_for(GroupType::kLeft, "m", mark)) << "the others saw it go";
  ASSERT_TRUE(eventually([&] { return restored.load() == 1; }, 20s)) << "it re-joined";
  EXPECT_EQ(lost.load(), 1);
  EXPECT_TRUE(m.is_member());
  EXPECT_NE(m.lease(), old_lease);
  auto back = seen.wait_for(GroupType::kJoined, "m", mark);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->payload, "p1");
  EXPECT_EQ(watcher.members().at("m"), "p1");
  EXPECT_TRUE(eventually([&] { return m.state() == ConnectionState::kReconnected; })) << "the member's state";
  EXPECT_TRUE(eventually([&] {
    for (const auto& e : m.errors()) {
      if (e.message().find("lost " + m.member_key()) != std::string::npos) return true;
    }
    return false;
  })) << "the loss is in the group's errors";
  m.set_payload("p2").wait().value();
  ASSERT_TRUE(eventually([&] { return watcher.members().at("m") == "p2"; }));
}

TEST_F(GroupMemberTest, TheMemberListAfterACompactionWhileCutOffReportsTheDifferences) {
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions o;
  o.endpoints = {proxy->endpoint()};
  Client cut_off(o);
  const std::string g = key("g");
  GroupMember stays(client(), g, "stays", "s");
  GroupMember goes(client(), g, "goes", "g");
  stays.join().wait().value();
  goes.join().wait().value();
  GroupMember watcher(cut_off, g, "watcher", "w");
  GroupEvents seen;
  auto sub = watcher.on_change(seen.listener());
  watcher.start();
  ASSERT_TRUE(watcher.wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(eventually([&] { return watcher.members().size() == 3; }));
  const size_t mark = seen.snapshot().size();

  proxy->cut();
  EXPECT_TRUE(goes.leave().wait().value());
  GroupMember comes(client(), g, "comes", "c");
  comes.join().wait().value();
  stays.set_payload("s2").wait().value();
  auto probe = client().put(key("probe"), "x").wait();
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(client().compact(probe->header.revision).wait().ok());
  proxy->restore();

  auto left = seen.wait_for(GroupType::kLeft, "goes", mark);
  auto joined = seen.wait_for(GroupType::kJoined, "comes", mark);
  auto updated = seen.wait_for(GroupType::kUpdated, "stays", mark);
  ASSERT_TRUE(left && joined && updated);
  EXPECT_TRUE(left->resync && joined->resync && updated->resync);
  EXPECT_EQ(updated->payload, "s2");
  EXPECT_EQ(watcher.resyncs(), 1u);
  EXPECT_EQ(watcher.members(), (MemberMap{{"comes", "c"}, {"stays", "s2"}, {"watcher", "w"}}));
}

}  // namespace
}  // namespace etcd::test
