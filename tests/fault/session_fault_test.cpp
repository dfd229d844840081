// A blackholed link: an exclusive Session is lost within its TTL and stays
// lost; a PresenceLease on the same client heals once the link is back.
#include "etcd/presence.h"
#include "etcd/session.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

template <class T>
class Timeline {
 public:
  void add(T v) {
    std::lock_guard lock(mu_);
    items_.emplace_back(std::move(v), Clock::now());
  }
  std::vector<std::pair<T, Deadline>> items() const {
    std::lock_guard lock(mu_);
    return items_;
  }
  std::optional<Deadline> first(const T& v) const {
    std::lock_guard lock(mu_);
    for (auto& [x, at] : items_) {
      if (x == v) return at;
    }
    return std::nullopt;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<T, Deadline>> items_;
};

class SessionFaultTest : public ProxiedSingleMemberTest {
 protected:
  void SetUp() override {
    ProxiedSingleMemberTest::SetUp();
    proxied_client();  // connected before the test cuts anything
  }
};

TEST_F(SessionFaultTest, BlackholeLosesTheSessionForGoodWhileAPresenceLeaseHeals) {
  const auto ttl = std::chrono::seconds(2);
  SessionOptions so;
  so.ttl = ttl;
  auto session = Session::create(proxied_client(), so);
  Timeline<ConnectionState> states;
  auto state_sub = session->on_state_change([&](ConnectionState s) { states.add(s); });
  Timeline<int> lost_calls;
  auto lost_sub = session->on_lost([&](const Status&) { lost_calls.add(1); });
  ASSERT_TRUE(session->start().wait().ok());
  ASSERT_EQ(session->ttl(), ttl);
  const int64_t session_lease = session->lease_id();

  PresenceOptions po;
  po.ttl = ttl;
  po.initial_backoff = 100ms;
  po.max_backoff = 1s;
  auto presence = PresenceLease::create(proxied_client(), po);
  Timeline<PresenceEvent> events;
  auto event_sub = presence->on_event([&](PresenceEvent e, const Status& st) {
    events.add(e);
    if (!st.ok()) std::cout << "[          ]   " << to_string(e) << ": " << st.to_string() << "\n";
  });
  ASSERT_TRUE(presence->start().wait().ok());
  const int64_t first_presence_lease = presence->lease_id();
  std::vector<std::pair<std::string, std::string>> keys{{key("member"), "me"}};
  auto created = PresenceLease::put_if_absent(proxied_client(), keys, first_presence_lease).wait();
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  ASSERT_EQ(created->created.size(), 1u);
  presence->set_restore_hook(PresenceLease::restore_keys(proxied_client(), keys));

  // Let a renewal or two go through so this is a steady state.
  ASSERT_TRUE(eventually([&] { return session->safe_until() > Clock::now() + ttl / 2; }, 5s));
  EXPECT_EQ(session->state(), ConnectionState::kConnected);

  const auto blackholed_at = Clock::now();
  proxy_->blackhole();

  // Watch the lease from etcd's side with a direct client: once etcd says it
  // expired, the session must not claim it is alive.
  Client direct(options());
  bool server_expired = false;
  const auto poll_until = Clock::now() + 15s;
  while (Clock::now() < poll_until) {
    auto t = direct.lease_time_to_live(session_lease).wait();
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    if (t->ttl == -1) {
      server_expired = true;
      EXPECT_FALSE(session->alive()) << "the session claims a lease that etcd has expired";
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(server_expired) << "etcd did not expire the lease";
  EXPECT_FALSE(session->alive());

  ASSERT_TRUE(eventually([&] { return session->state() == ConnectionState::kLost; }, 5s));
  ASSERT_TRUE(eventually([&] { return states.first(ConnectionState::kLost).has_value(); }, 5s));
  const auto suspended_at = states.first(ConnectionState::kSuspended);
  const auto lost_at = *states.first(ConnectionState::kLost);
  ASSERT_TRUE(suspended_at.has_value()) << "no SUSPENDED before LOST";
  EXPECT_LT(*suspended_at, lost_at);
  const auto to_lost = std::chrono::duration_cast<std::chrono::milliseconds>(lost_at - blackholed_at);
  const auto to_suspended = std::chrono::duration_cast<std::chrono::milliseconds>(*suspended_at - blackholed_at);
  std::cout << "[          ] SUSPENDED after " << to_suspended.count() << " ms, LOST after " << to_lost.count()
            << " ms (TTL " << ttl.count() << " s)\n";
  EXPECT_LE(to_lost, ttl + 1s);
  EXPECT_TRUE(session->lost_token().stop_requested());
  EXPECT_TRUE(session->loss().is(Errc::kLeaseExpired)) << session->loss().to_string();

  // The presence lease expired too; its key is gone on etcd's side.
  ASSERT_TRUE(eventually([&] { return events.first(PresenceEvent::kExpired).has_value(); }, 5s));
  ASSERT_TRUE(eventually([&] { return direct.get(key("member")).wait()->kvs.empty(); }, 10s));

  const auto restored_at = Clock::now();
  proxy_->restore();

  // The presence lease heals: a new lease, its key re-created under it.
  ASSERT_TRUE(eventually(
      [&] {
        auto r = events.items();
        return !r.empty() && r.back().first == PresenceEvent::kRestored;
      },
      30s))
      << "presence lease did not heal";
  const auto healed_in =
      std::chrono::duration_cast<std::chrono::milliseconds>(*events.first(PresenceEvent::kRestored) - restored_at);
  std::cout << "[          ] presence healed " << healed_in.count() << " ms after the link came back\n";
  for (auto& [e, at] : events.items()) {
    std::cout << "[          ]   " << to_string(e) << " at "
              << std::chrono::duration_cast<std::chrono::milliseconds>(at - blackholed_at).count() << " ms\n";
  }
  std::cout << "[          ]   restored at "
            << std::chrono::duration_cast<std::chrono::milliseconds>(restored_at - blackholed_at).count() << " ms\n";
  const int64_t second_presence_lease = presence->lease_id();
  EXPECT_GT(second_presence_lease, 0);
  EXPECT_NE(second_presence_lease, first_presence_lease);
  auto member = direct.get(key("member")).wait();
  ASSERT_TRUE(member.ok());
  ASSERT_EQ(member->kvs.size(), 1u);
  EXPECT_EQ(member->kvs[0].value, "me");
  EXPECT_EQ(member->kvs[0].lease, second_presence_lease);
  EXPECT_GT(direct.lease_time_to_live(second_presence_lease).wait()->ttl, 0);
  EXPECT_TRUE(presence->alive());

  // The client works again, yet the session stays lost: exclusive holds never heal.
  ASSERT_TRUE(proxied_client().put(key("after"), "x").timeout(10s).wait().ok());
  EXPECT_EQ(session->state(), ConnectionState::kLost);
  EXPECT_FALSE(session->alive());
  EXPECT_EQ(session->lease_id(), session_lease);
  EXPECT_FALSE(session->start().wait().ok());
  auto seen = states.items();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().first, ConnectionState::kLost);
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [](auto& p) { return p.first == ConnectionState::kLost; }), 1);
  EXPECT_EQ(lost_calls.items().size(), 1u);
  EXPECT_EQ(direct.lease_time_to_live(session_lease).wait()->ttl, -1);

  EXPECT_TRUE(presence->close().wait().ok());
  EXPECT_TRUE(direct.get(key("member")).wait()->kvs.empty());
}

}  // namespace
}  // namespace etcd::test
