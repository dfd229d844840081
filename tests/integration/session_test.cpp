// Session (exclusive-hold lease: never heals) and PresenceLease (presence
// lease: heals, never overwriting another owner's key), against real etcd.
#include <atomic>
#include <future>

#include "etcd/presence.h"
#include "etcd/session.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

// Records what listeners saw, for deadline-bounded checks from the test thread.
template <class T>
class Recorder {
 public:
  void add(T v) {
    std::lock_guard lock(mu_);
    items_.push_back(std::move(v));
  }
  std::vector<T> items() const {
    std::lock_guard lock(mu_);
    return items_;
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return items_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<T> items_;
};

using PresenceEvents = Recorder<std::pair<PresenceEvent, Status>>;

bool saw(const PresenceEvents& events, PresenceEvent e) {
  for (auto& [ev, st] : events.items()) {
    if (ev == e) return true;
  }
  return false;
}

std::string describe(const PresenceEvents& events) {
  std::string out;
  for (auto& [ev, st] : events.items()) out += std::string(to_string(ev)) + "(" + st.to_string() + ") ";
  return out;
}

using SessionTest = SingleMemberTest;

TEST_F(SessionTest, StartGrantsALeaseAndIsIdempotent) {
  SessionOptions o;
  o.ttl = std::chrono::seconds(5);
  auto session = Session::create(client(), o);
  EXPECT_EQ(session->lease_id(), 0);
  EXPECT_FALSE(session->alive());

  auto r = session->start().wait();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const int64_t id = session->lease_id();
  EXPECT_GT(id, 0);
  EXPECT_EQ(session->ttl(), std::chrono::seconds(5));
  EXPECT_TRUE(session->alive());
  EXPECT_EQ(session->state(), ConnectionState::kConnected);
  EXPECT_GT(session->safe_until(), Clock::now());
  EXPECT_FALSE(session->lost_token().stop_requested());

  auto ttl = client().lease_time_to_live(id).wait();
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(ttl->granted_ttl, 5);
  EXPECT_GT(ttl->ttl, 0);

  // Starting again does nothing.
  const auto before = client().stats().rpcs_started;
  ASSERT_TRUE(session->start().wait().ok());
  EXPECT_EQ(session->lease_id(), id);
  EXPECT_EQ(client().stats().rpcs_started, before);
}

TEST_F(SessionTest, ConcurrentStartsShareOneGrant) {
  auto session = Session::create(client());
  auto leases_before = client().lease_leases().wait();
  ASSERT_TRUE(leases_before.ok());
  const auto stats_before = client().stats();
  std::vector<std::future<Result<void>>> starts;
  for (int i = 0; i < 8; ++i) starts.push_back(session->start().future());
  for (auto& f : starts) {
    auto r = f.get();
    EXPECT_TRUE(r.ok()) << r.status().to_string();
  }
  // One LeaseGrant (possibly resent when a connection attempt failed before
  // sending it), and exactly one new lease on the server.
  const auto stats_after = client().stats();
  EXPECT_EQ((stats_after.rpcs_started - stats_after.retries) - (stats_before.rpcs_started - stats_before.retries), 1u);
  EXPECT_GT(session->lease_id(), 0);
  EXPECT_EQ(session->ttl(), std::chrono::seconds(10));
  auto leases_after = client().lease_leases().wait();
  ASSERT_TRUE(leases_after.ok());
  std::vector<int64_t> fresh;
  for (int64_t id : leases_after->leases) {
    if (std::find(leases_before->leases.begin(), leases_before->leases.end(), id) == leases_before->leases.end()) {
      fresh.push_back(id);
    }
  }
  EXPECT_EQ(fresh, std::vector<int64_t>{session->lease_id()});
}

TEST_F(SessionTest, ACoroutineCanStartIt) {
  auto session = Session::create(client());
  struct Task {
    struct promise_type {
      Task get_return_object() { return {}; }
      std::suspend_never initial_suspend() noexcept { return {}; }
      std::suspend_never final_suspend() noexcept { return {}; }
      void return_void() {}
      void unhandled_exception() { std::terminate(); }
    };
  };
  // Shared with the coroutine: it may still be inside put() when take() returns.
  auto done = std::make_shared<Mailbox<Status>>();
  [](std::shared_ptr<Session> s, std::shared_ptr<Mailbox<Status>> out) -> Task {
    Result<void> r = co_await s->start();
    out->put(r.status());
  }(session, done);
  auto st = done->take(10s);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->ok()) << st->to_string();
  EXPECT_GT(session->lease_id(), 0);
}

TEST_F(SessionTest, BadTtlIsRejectedBeforeAnyIo) {
  const auto before = client().stats().rpcs_started;
  SessionOptions o;
  o.ttl = std::chrono::seconds(0);
  auto session = Session::create(client(), o);
  auto r = session->start().wait();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kBadArgument)) << r.status().to_string();
  EXPECT_EQ(session->lease_id(), 0);

  PresenceOptions p;
  p.ttl = std::chrono::seconds(-3);
  auto presence = PresenceLease::create(client(), p);
  auto pr = presence->start().wait();
  EXPECT_TRUE(pr.status().is(Errc::kBadArgument)) << pr.status().to_string();
  EXPECT_EQ(presence->lease_id(), 0);

  std::vector<std::pair<std::string, std::string>> empty_key{{"", "v"}};
  EXPECT_TRUE(PresenceLease::put_if_absent(client(), empty_key, 1).wait().status().is(Errc::kBadArgument));
  std::vector<std::pair<std::string, std::string>> dup{{key("a"), "1"}, {key("a"), "2"}};
  EXPECT_TRUE(PresenceLease::put_if_absent(client(), dup, 1).wait().status().is(Errc::kBadArgument));
  std::vector<std::pair<std::string, std::string>> ok{{key("a"), "1"}};
  EXPECT_TRUE(PresenceLease::put_if_absent(client(), ok, 0).wait().status().is(Errc::kBadArgument));

  EXPECT_EQ(client().stats().rpcs_started, before);
  EXPECT_TRUE(client().get(key("a")).wait()->kvs.empty());
}

TEST_F(SessionTest, LossIsReportedOnceWhenTheLeaseIsRevokedElsewhere) {
  SessionOptions o;
  o.ttl = std::chrono::seconds(5);
  auto session = Session::create(client(), o);
  Recorder<ConnectionState> states;
  auto state_sub = session->on_state_change([&](ConnectionState s) { states.add(s); });
  ASSERT_TRUE(session->start().wait().ok());
  Recorder<Status> losses;
  auto lost_sub = session->on_lost([&](const Status& why) { losses.add(why); });
  auto token = session->lost_token();
  ASSERT_TRUE(client().put(key("held"), "v", {.lease = session->lease_id()}).wait().ok());

  Client other(options());
  ASSERT_TRUE(other.lease_revoke(session->lease_id()).wait().ok());

  ASSERT_TRUE(eventually([&] { return losses.size() >= 1; }, 5s)) << "loss not reported";
  EXPECT_TRUE(losses.items()[0].is(Errc::kLeaseNotFound)) << losses.items()[0].to_string();
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(session->alive());
  EXPECT_EQ(session->state(), ConnectionState::kLost);
  EXPECT_TRUE(session->loss().is(Errc::kLeaseNotFound));
  EXPECT_EQ(session->safe_until(), Deadline{});

  // A listener registered after the loss runs too; it is posted after the
  // first one, so once it ran the first one had every chance to run twice.
  auto late = std::make_shared<Mailbox<Status>>();
  auto late_sub = session->on_lost([late](const Status& why) { late->put(why); });
  auto late_why = late->take(5s);
  ASSERT_TRUE(late_why.has_value());
  EXPECT_TRUE(late_why->is(Errc::kLeaseNotFound));
  EXPECT_EQ(losses.size(), 1u);

  // A lost session stays lost.
  auto again = session->start().wait();
  EXPECT_FALSE(again.ok());
  EXPECT_TRUE(again.status().is(Errc::kLeaseNotFound)) << again.status().to_string();
  EXPECT_EQ(session->state(), ConnectionState::kLost);
  ASSERT_TRUE(
      eventually([&] { return !states.items().empty() && states.items().back() == ConnectionState::kLost; }, 5s));
  auto seen = states.items();
  EXPECT_EQ(std::count(seen.begin(), seen.end(), ConnectionState::kLost), 1);
  EXPECT_EQ(seen.front(), ConnectionState::kConnected);

  // close() after a loss: still fine, and still reports the loss.
  EXPECT_TRUE(session->close().wait().ok());
  EXPECT_TRUE(session->loss().is(Errc::kLeaseNotFound));
  EXPECT_EQ(losses.size(), 1u);
}

TEST_F(SessionTest, CloseRevokesTheLease) {
  auto session = Session::create(client());
  ASSERT_TRUE(session->start().wait().ok());
  const int64_t id = session->lease_id();
  ASSERT_TRUE(client().put(key("held"), "v", {.lease = id}).wait().ok());
  auto lost = std::make_shared<Mailbox<Status>>();
  auto sub = session->on_lost([lost](const Status& why) { lost->put(why); });
  Recorder<ConnectionState> states;
  auto state_sub = session->on_state_change([&](ConnectionState s) { states.add(s); });

  auto r = session->close().wait();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(session->closed());
  EXPECT_FALSE(session->alive());
  EXPECT_EQ(session->state(), ConnectionState::kLost);
  EXPECT_TRUE(session->lost_token().stop_requested());
  auto why = lost->take(5s);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->is(Errc::kClosed)) << why->to_string();
  EXPECT_TRUE(client().get(key("held")).wait()->kvs.empty());
  EXPECT_EQ(client().lease_time_to_live(id).wait()->ttl, -1);

  EXPECT_TRUE(session->close().wait().ok());  // idempotent
  EXPECT_TRUE(session->start().wait().status().is(Errc::kClosed));
  EXPECT_TRUE(states.items().empty()) << "close is not a connection event";
}

TEST_F(SessionTest, DestroyingTheSessionRevokesTheLease) {
  int64_t id = 0;
  {
    auto session = Session::create(client());
    ASSERT_TRUE(session->start().wait().ok());
    id = session->lease_id();
    ASSERT_TRUE(client().put(key("held"), "v", {.lease = id}).wait().ok());
  }
  EXPECT_TRUE(eventually([&] { return client().get(key("held")).wait()->kvs.empty(); }, 5s));
  EXPECT_EQ(client().lease_time_to_live(id).wait()->ttl, -1);
}

TEST_F(SessionTest, AKeptSessionOutlivesThreeTtls) {
  SessionOptions o;
  o.ttl = std::chrono::seconds(2);
  auto session = Session::create(client(), o);
  ASSERT_TRUE(session->start().wait().ok());
  ASSERT_TRUE(client().put(key("kept"), "v", {.lease = session->lease_id()}).wait().ok());
  Recorder<ConnectionState> states;
  auto state_sub = session->on_state_change([&](ConnectionState s) { states.add(s); });

  const auto until = Clock::now() + 3 * session->ttl() + 300ms;
  while (Clock::now() < until) {
    ASSERT_TRUE(session->alive());
    ASSERT_EQ(session->state(), ConnectionState::kConnected);
    ASSERT_EQ(client().get(key("kept")).wait()->kvs.size(), 1u);
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_FALSE(session->lost_token().stop_requested());
  EXPECT_TRUE(states.items().empty());
}

// --- PresenceLease -------------------------------------------------------------

using PresenceTest = SingleMemberTest;

TEST_F(PresenceTest, PutIfAbsentCreatesRefreshesAndLeavesOthersAlone) {
  auto mine = client().lease_grant(30s).wait();
  auto theirs = client().lease_grant(30s).wait();
  ASSERT_TRUE(mine.ok() && theirs.ok());
  ASSERT_TRUE(client().put(key("theirs"), "t", {.lease = theirs->id}).wait().ok());
  ASSERT_TRUE(client().put(key("plain"), "p").wait().ok());  // no lease at all

  std::vector<std::pair<std::string, std::string>> keys{
      {key("a"), "1"}, {key("b"), "2"}, {key("theirs"), "mine!"}, {key("plain"), "mine!"}};
  auto r = PresenceLease::put_if_absent(client(), keys, mine->id).wait();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->created, (std::vector<std::string>{key("a"), key("b")}));
  EXPECT_TRUE(r->refreshed.empty());
  ASSERT_EQ(r->taken.size(), 2u);
  EXPECT_EQ(r->taken[0].key, key("theirs"));
  EXPECT_EQ(r->taken[0].lease, theirs->id);
  EXPECT_EQ(r->taken[1].key, key("plain"));
  EXPECT_EQ(r->status().code(), StatusCode::kAlreadyExists);

  auto a = client().get(key("a")).wait();
  ASSERT_EQ(a->kvs.size(), 1u);
  EXPECT_EQ(a->kvs[0].lease, mine->id);
  auto t = client().get(key("theirs")).wait();
  ASSERT_EQ(t->kvs.size(), 1u);
  EXPECT_EQ(t->kvs[0].value, "t");
  EXPECT_EQ(t->kvs[0].lease, theirs->id);
  EXPECT_EQ(client().get(key("plain")).wait()->kvs.at(0).value, "p");

  // Again: the keys under our lease are ours and get rewritten.
  std::vector<std::pair<std::string, std::string>> again{{key("a"), "1b"}};
  auto r2 = PresenceLease::put_if_absent(client(), again, mine->id).wait();
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->refreshed, (std::vector<std::string>{key("a")}));
  EXPECT_TRUE(r2->status().ok());
  EXPECT_EQ(client().get(key("a")).wait()->kvs.at(0).value, "1b");
}

TEST_F(PresenceTest, PutIfAbsentSplitsLargeSetsIntoTransactions) {
  auto mine = client().lease_grant(30s).wait();
  ASSERT_TRUE(mine.ok());
  std::vector<std::pair<std::string, std::string>> keys;
  for (int i = 0; i < 300; ++i) keys.emplace_back(key("many/" + std::to_string(i)), "v");
  auto r = PresenceLease::put_if_absent(client(), keys, mine->id).wait();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->created.size(), 300u);
  GetOptions count;
  count.prefix = true;
  count.count_only = true;
  EXPECT_EQ(client().get(key("many/"), count).wait()->count, 300);
}

TEST_F(PresenceTest, RestoresKeysUnderANewLeaseAfterARevoke) {
  PresenceOptions o;
  o.ttl = std::chrono::seconds(5);
  auto presence = PresenceLease::create(client(), o);
  PresenceEvents events;
  auto sub = presence->on_event([&](PresenceEvent e, const Status& s) { events.add({e, s}); });
  ASSERT_TRUE(presence->start().wait().ok());
  const int64_t first = presence->lease_id();
  ASSERT_GT(first, 0);
  std::vector<std::pair<std::string, std::string>> keys{{key("reg/1"), "one"}, {key("reg/2"), "two"}};
  auto created = PresenceLease::put_if_absent(client(), keys, first).wait();
  ASSERT_TRUE(created.ok());
  ASSERT_EQ(created->created.size(), 2u);
  presence->set_restore_hook(PresenceLease::restore_keys(client(), keys));

  Client other(options());
  ASSERT_TRUE(other.lease_revoke(first).wait().ok());

  ASSERT_TRUE(eventually([&] { return saw(events, PresenceEvent::kRestored); }, 10s)) << describe(events);
  auto seen = events.items();
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, PresenceEvent::kExpired);
  EXPECT_TRUE(seen[0].second.is(Errc::kLeaseNotFound)) << seen[0].second.to_string();
  EXPECT_EQ(seen.back().first, PresenceEvent::kRestored);
  const int64_t second = presence->lease_id();
  EXPECT_GT(second, 0);
  EXPECT_NE(second, first);
  EXPECT_TRUE(presence->alive());
  for (auto& [k, v] : keys) {
    auto got = client().get(k).wait();
    ASSERT_EQ(got->kvs.size(), 1u) << k;
    EXPECT_EQ(got->kvs[0].value, v);
    EXPECT_EQ(got->kvs[0].lease, second);
  }

  // close() revokes: the keys go with the lease, and nothing heals them.
  ASSERT_TRUE(presence->close().wait().ok());
  EXPECT_EQ(client().lease_time_to_live(second).wait()->ttl, -1);
  GetOptions prefix;
  prefix.prefix = true;
  EXPECT_TRUE(client().get(key("reg/"), prefix).wait()->kvs.empty());
  EXPECT_TRUE(presence->close().wait().ok());
  EXPECT_TRUE(presence->start().wait().status().is(Errc::kClosed));
  EXPECT_EQ(presence->lease_id(), 0);
}

TEST_F(PresenceTest, RestoreNeverOverwritesAKeyAnotherOwnerTookMeanwhile) {
  PresenceOptions o;
  o.ttl = std::chrono::seconds(5);
  o.initial_backoff = 100ms;
  o.max_backoff = 300ms;
  auto presence = PresenceLease::create(client(), o);
  PresenceEvents events;
  auto sub = presence->on_event([&](PresenceEvent e, const Status& s) { events.add({e, s}); });
  ASSERT_TRUE(presence->start().wait().ok());
  const int64_t first = presence->lease_id();
  std::vector<std::pair<std::string, std::string>> keys{{key("slot"), "mine"}, {key("other"), "mine too"}};
  ASSERT_TRUE(PresenceLease::put_if_absent(client(), keys, first).wait().ok());
  presence->set_restore_hook(PresenceLease::restore_keys(client(), keys));

  // Another owner takes "slot" under its own lease, then our lease goes.
  Client other(options());
  auto theirs = other.lease_grant(30s).wait();
  ASSERT_TRUE(theirs.ok());
  ASSERT_TRUE(other.put(key("slot"), "theirs", {.lease = theirs->id}).wait().ok());
  ASSERT_TRUE(other.lease_revoke(first).wait().ok());

  ASSERT_TRUE(eventually([&] { return saw(events, PresenceEvent::kRestoreFailed); }, 10s)) << describe(events);
  auto seen = events.items();
  EXPECT_EQ(seen[0].first, PresenceEvent::kExpired);
  Status failed;
  for (auto& [e, s] : seen) {
    if (e == PresenceEvent::kRestoreFailed) failed = s;
  }
  EXPECT_EQ(failed.code(), StatusCode::kAlreadyExists) << failed.to_string();
  EXPECT_NE(failed.message().find(key("slot")), std::string::npos) << failed.message();
  EXPECT_FALSE(saw(events, PresenceEvent::kRestored)) << describe(events);

  const int64_t second = presence->lease_id();
  ASSERT_GT(second, 0);
  auto slot = client().get(key("slot")).wait();
  ASSERT_EQ(slot->kvs.size(), 1u);
  EXPECT_EQ(slot->kvs[0].value, "theirs");
  EXPECT_EQ(slot->kvs[0].lease, theirs->id);
  auto mine = client().get(key("other")).wait();
  ASSERT_EQ(mine->kvs.size(), 1u);
  EXPECT_EQ(mine->kvs[0].lease, second);

  // While retrying, it still never overwrites: after a few more failed
  // attempts the key is still theirs.
  const size_t failures = events.size();
  ASSERT_TRUE(eventually([&] { return events.size() >= failures + 2; }, 10s)) << describe(events);
  EXPECT_EQ(client().get(key("slot")).wait()->kvs.at(0).value, "theirs");

  // Once the other owner is gone the key is free, and the retry takes it.
  ASSERT_TRUE(other.lease_revoke(theirs->id).wait().ok());
  ASSERT_TRUE(eventually([&] { return saw(events, PresenceEvent::kRestored); }, 10s)) << describe(events);
  auto now_mine = client().get(key("slot")).wait();
  ASSERT_EQ(now_mine->kvs.size(), 1u);
  EXPECT_EQ(now_mine->kvs[0].value, "mine");
  EXPECT_EQ(now_mine->kvs[0].lease, presence->lease_id());
}

}  // namespace
}  // namespace etcd::test
