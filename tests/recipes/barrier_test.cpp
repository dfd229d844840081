// The barriers against a real etcd: a gate opened only by remove() (never
// by a setter's lease expiry), a count barrier that releases each party
// exactly once and never counts a party that gave up or died, and a double
// barrier whose rounds survive a party that dies.
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "etcd/recipes/barrier.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedBarrier;
using recipes::DistributedBarrierWithCount;
using recipes::DistributedDoubleBarrier;
using recipes::GateOptions;
using recipes::RecipeOptions;

RecipeOptions ttl(std::chrono::seconds s) {
  RecipeOptions o;
  o.session_ttl = s;
  return o;
}

// A call consumed on another thread, with its outcome observable.
template <class T>
struct Pending {
  explicit Pending(Call<T> call)
      : future(std::async(std::launch::async, [c = std::move(call)]() mutable { return std::move(c).wait(); })) {}
  bool done(std::chrono::milliseconds within = 0ms) { return future.wait_for(within) == std::future_status::ready; }
  std::future<Result<T>> future;
};

class BarrierTest : public SingleMemberTest {
 protected:
  std::optional<KeyValue> get(const std::string& k) {
    auto r = client().get(k).wait().value();
    if (r.kvs.empty()) return std::nullopt;
    return r.kvs.front();
  }
  int64_t count(const std::string& prefix) {
    return client().get(prefix, GetOptions{.prefix = true, .count_only = true}).wait().value().count;
  }
  std::unique_ptr<etcd::testing::FaultProxy> proxy_ = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  Client flaky() {
    ClientOptions o = options();
    o.endpoints = {proxy_->endpoint()};
    return Client(o);
  }
};

// --- DistributedBarrier ---------------------------------------------------------------------

TEST_F(BarrierTest, AGateHoldsWaitersUntilRemoved) {
  const std::string name = key("gate");
  DistributedBarrier setter(client(), name);
  DistributedBarrier other(client(), name);
  EXPECT_FALSE(get(name).has_value()) << "the constructor does no I/O";
  EXPECT_TRUE(other.wait_for(1s)) << "a never-set gate is open";

  EXPECT_TRUE(setter.set().wait().value()) << "it was open";
  EXPECT_TRUE(setter.is_set_by_me());
  EXPECT_FALSE(other.set().wait().value()) << "set already";
  EXPECT_FALSE(other.is_set_by_me());
  auto gate = get(name);
  ASSERT_TRUE(gate.has_value());
  EXPECT_NE(gate->lease, 0) << "the gate key lives on the setter's lease";
  EXPECT_TRUE(get(name + "/set-by").has_value());

  std::vector<std::unique_ptr<DistributedBarrier>> objects;
  std::vector<Pending<void>> waiting;
  for (int i = 0; i < 4; ++i) {
    objects.push_back(std::make_unique<DistributedBarrier>(client(), name));
    waiting.emplace_back(objects.back()->wait());
  }
  waiting.emplace_back(other.wait());
  EXPECT_FALSE(other.wait_for(300ms)) << "closed: the time runs out";
  for (auto& w : waiting) EXPECT_FALSE(w.done());

  EXPECT_TRUE(other.remove().wait().value()) << "whoever removes it opens it";
  for (auto& w : waiting) {
    ASSERT_TRUE(w.done(10s));
    EXPECT_TRUE(w.future.get().ok());
  }
  EXPECT_FALSE(get(name).has_value());
  EXPECT_FALSE(get(name + "/set-by").has_value());
  EXPECT_FALSE(other.remove().wait().value()) << "open already";
  EXPECT_TRUE(setter.wait_for(1s));
}

TEST_F(BarrierTest, WaitUntilSetBlocksOnAnOpenGateUntilItIsSetAndRemoved) {
  const std::string name = key("gate");
  DistributedBarrier strict(client(), name, RecipeOptions(), GateOptions{.wait_until_set = true});
  DistributedBarrier setter(client(), name);
  Pending<void> w(strict.wait());
  EXPECT_FALSE(w.done(300ms)) << "never set: it blocks";
  ASSERT_TRUE(setter.set().wait().value());
  EXPECT_FALSE(w.done(200ms));
  ASSERT_TRUE(setter.remove().wait().value());
  ASSERT_TRUE(w.done(10s));
  EXPECT_TRUE(w.future.get().ok());

  // One that comes while the gate is set waits for its removal only.
  ASSERT_TRUE(setter.set().wait().value());
  Pending<void> closed(strict.wait());
  EXPECT_FALSE(closed.done(300ms));
  ASSERT_TRUE(setter.remove().wait().value());
  ASSERT_TRUE(closed.done(10s));
  EXPECT_TRUE(closed.future.get().ok());
}

TEST_F(BarrierTest, AGateInteroperatesWithAPlainKey) {
  // etcd's Go recipe Barrier: Hold puts NAME (no lease), Release deletes it.
  const std::string name = key("go");
  (void)client().put(name, "").wait().value();
  DistributedBarrier waiter(client(), name);
  Pending<void> w(waiter.wait());
  EXPECT_FALSE(w.done(300ms));
  (void)client().del(name).wait().value();
  ASSERT_TRUE(w.done(10s));
  EXPECT_TRUE(w.future.get().ok());
}

TEST_F(BarrierTest, ASetterCutOffPastItsTtlDoesNotOpenTheGateAndHealsIt) {
  const std::string name = key("gate");
  Client cut = flaky();
  DistributedBarrier setter(cut, name, ttl(2s));
  ASSERT_TRUE(setter.set().wait().value());
  const int64_t first = get(name)->create_revision;
  DistributedBarrier waiter(client(), name);
  Pending<void> w(waiter.wait());

  proxy_->blackhole();
  ASSERT_TRUE(eventually([&] { return !get(name).has_value(); }, 20s)) << "the gate key went with the lease";
  EXPECT_TRUE(get(name + "/set-by").has_value());
  EXPECT_FALSE(w.done(500ms)) << "a lease expiry does not release waiters";
  DistributedBarrier late(client(), name);
  EXPECT_FALSE(late.wait_for(300ms)) << "a waiter that comes now finds the gate set too";

  proxy_->pass();
  ASSERT_TRUE(eventually([&] { return get(name).has_value(); }, 20s)) << "the setter re-created its gate key";
  EXPECT_GT(get(name)->create_revision, first);
  EXPECT_TRUE(eventually([&] { return setter.is_set_by_me(); }));
  EXPECT_FALSE(w.done());
  ASSERT_TRUE(waiter.remove().wait().value());
  ASSERT_TRUE(w.done(10s));
  EXPECT_TRUE(w.future.get().ok());
}

TEST_F(BarrierTest, AGateRemovedWhileItsSetterWasCutOffStaysOpen) {
  const std::string name = key("gate");
  Client cut = flaky();
  DistributedBarrier setter(cut, name, ttl(2s));
  ASSERT_TRUE(setter.set().wait().value());
  proxy_->blackhole();
  ASSERT_TRUE(eventually([&] { return !get(name).has_value(); }, 20s));
  DistributedBarrier other(client(), name);
  ASSERT_TRUE(other.remove().wait().value()) << "the record NAME/set-by was still there";
  proxy_->pass();
  ASSERT_TRUE(
      eventually([&] { return !setter.is_set_by_me() && setter.state() == ConnectionState::kReconnected; }, 20s));
  EXPECT_FALSE(get(name).has_value()) << "the setter did not close the gate again";
  EXPECT_TRUE(other.wait_for(1s));
}

// --- DistributedBarrierWithCount ---------------------------------------------------------------

TEST_F(BarrierTest, SixteenPartiesAreReleasedTogetherExactlyOnce) {
  const std::string name = key("rendezvous");
  constexpr int kParties = 16;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<DistributedBarrierWithCount>> parties;
  std::vector<Pending<void>> waiting;
  for (int i = 0; i < kParties; ++i) {
    clients.push_back(std::make_unique<Client>(options()));
    parties.push_back(std::make_unique<DistributedBarrierWithCount>(*clients.back(), name, kParties));
  }
  EXPECT_EQ(parties[0]->parties(), kParties);
  for (int i = 0; i < kParties - 1; ++i) waiting.emplace_back(parties[i]->wait());
  ASSERT_TRUE(eventually([&] { return parties[0]->waiting().wait().value() == kParties - 1; }));
  for (auto& w : waiting) EXPECT_FALSE(w.done());
  waiting.emplace_back(parties.back()->wait());
  for (auto& w : waiting) {
    ASSERT_TRUE(w.done(10s));
    EXPECT_TRUE(w.future.get().ok());
  }
  EXPECT_EQ(count(name + "/parties/"), 0) << "the round took its parties' keys with it";
  EXPECT_TRUE(get(name + "/ready").has_value());

  // The next round on the same name is a new rendezvous.
  Pending<void> early(parties[0]->wait());
  EXPECT_FALSE(early.done(300ms));
  for (int i = 1; i < kParties; ++i) waiting[i] = Pending<void>(parties[i]->wait());
  ASSERT_TRUE(early.done(10s));
  EXPECT_TRUE(early.future.get().ok());
  for (int i = 1; i < kParties; ++i) {
    ASSERT_TRUE(waiting[i].done(10s));
    EXPECT_TRUE(waiting[i].future.get().ok());
  }
}

TEST_F(BarrierTest, OneObjectCarriesManyParties) {
  const std::string name = key("shared");
  DistributedBarrierWithCount barrier(client(), name, 3);
  Pending<void> a(barrier.wait());
  Pending<void> b(barrier.wait());
  EXPECT_FALSE(a.done(200ms));
  EXPECT_TRUE(barrier.wait_for(10s)) << "the third party completes the round";
  ASSERT_TRUE(a.done(10s) && b.done(10s));
  EXPECT_TRUE(a.future.get().ok());
  EXPECT_TRUE(b.future.get().ok());
}

TEST_F(BarrierTest, APartyThatGaveUpDoesNotCount) {
  const std::string name = key("gaveup");
  DistributedBarrierWithCount quitter(client(), name, 3);
  EXPECT_FALSE(quitter.wait_for(300ms)) << "alone: the time runs out";
  EXPECT_EQ(count(name + "/parties/"), 0) << "it left: its key is gone";
  DistributedBarrierWithCount b(client(), name, 3);
  DistributedBarrierWithCount c(client(), name, 3);
  Pending<void> wb(b.wait());
  Pending<void> wc(c.wait());
  EXPECT_FALSE(wb.done(500ms)) << "two present: not three";
  DistributedBarrierWithCount d(client(), name, 3);
  EXPECT_TRUE(d.wait_for(10s));
  ASSERT_TRUE(wb.done(10s) && wc.done(10s));
}

TEST_F(BarrierTest, APartyCutOffPastItsTtlDoesNotCountUntilItArrivesAgain) {
  const std::string name = key("cut");
  Client cut = flaky();
  DistributedBarrierWithCount x(cut, name, 3, ttl(2s));
  Pending<void> wx(x.wait());
  ASSERT_TRUE(eventually([&] { return count(name + "/parties/") == 1; }));
  proxy_->blackhole();
  ASSERT_TRUE(eventually([&] { return count(name + "/parties/") == 0; }, 20s)) << "its key expired";
  DistributedBarrierWithCount b(client(), name, 3);
  DistributedBarrierWithCount c(client(), name, 3);
  Pending<void> wb(b.wait());
  Pending<void> wc(c.wait());
  EXPECT_FALSE(wb.done(500ms)) << "the dead party does not count";
  EXPECT_FALSE(wc.done());
  proxy_->pass();
  // Its lease heals; it arrives again, and its arrival completes the round.
  for (auto* w : {&wx, &wb, &wc}) {
    ASSERT_TRUE(w->done(20s));
    EXPECT_TRUE(w->future.get().ok());
  }
}

TEST_F(BarrierTest, CountedBarriersRefuseBadInputBeforeAnyWrite) {
  DistributedBarrierWithCount zero(client(), key("bad"), 0);
  EXPECT_TRUE(zero.wait().wait().status().is(Errc::kBadArgument));
  DistributedDoubleBarrier negative(client(), key("bad"), -1);
  EXPECT_TRUE(negative.enter().wait().status().is(Errc::kBadArgument));
  DistributedBarrier empty(client(), "");
  EXPECT_TRUE(empty.set().wait().status().is(Errc::kBadArgument));
  EXPECT_EQ(count(key("")), 0);
}

// --- DistributedDoubleBarrier --------------------------------------------------------------------

TEST_F(BarrierTest, DoubleBarrierPartiesEnterAndLeaveTogether) {
  const std::string name = key("phase");
  constexpr int kParties = 3;
  std::vector<std::unique_ptr<DistributedDoubleBarrier>> parties;
  for (int i = 0; i < kParties; ++i) parties.push_back(std::make_unique<DistributedDoubleBarrier>(client(), name, 3));
  for (int round = 0; round < 2; ++round) {
    Pending<void> e0(parties[0]->enter());
    Pending<void> e1(parties[1]->enter());
    EXPECT_FALSE(e0.done(300ms)) << "two of three";
    EXPECT_FALSE(parties[0]->entered());
    EXPECT_TRUE(parties[2]->enter_for(10s));
    ASSERT_TRUE(e0.done(10s) && e1.done(10s));
    EXPECT_TRUE(e0.future.get().ok());
    EXPECT_TRUE(e1.future.get().ok());
    EXPECT_TRUE(parties[0]->entered());
    EXPECT_TRUE(parties[0]->enter().wait().status().code() == StatusCode::kFailedPrecondition);

    Pending<void> l0(parties[0]->leave());
    Pending<void> l1(parties[1]->leave());
    EXPECT_FALSE(l0.done(300ms)) << "one party is still in";
    EXPECT_TRUE(parties[2]->leave_for(10s));
    ASSERT_TRUE(l0.done(10s) && l1.done(10s));
    EXPECT_TRUE(l0.future.get().ok());
    EXPECT_TRUE(l1.future.get().ok());
    EXPECT_FALSE(parties[0]->entered());
    EXPECT_TRUE(parties[0]->leave().wait().status().code() == StatusCode::kFailedPrecondition);
    ASSERT_TRUE(eventually([&] { return !get(name + "/ready").has_value(); })) << "the last one out ends the round";
  }
}

TEST_F(BarrierTest, ADoubleBarrierPartyThatDiesLeavesByItsLease) {
  const std::string name = key("dies");
  Client cut = flaky();
  DistributedDoubleBarrier doomed(cut, name, 3, ttl(2s));
  DistributedDoubleBarrier a(client(), name, 3);
  DistributedDoubleBarrier b(client(), name, 3);
  Pending<void> ed(doomed.enter());
  Pending<void> ea(a.enter());
  ASSERT_TRUE(b.enter_for(10s));
  ASSERT_TRUE(ed.done(10s) && ea.done(10s));
  proxy_->blackhole();  // dies, as far as etcd can tell
  Pending<void> la(a.leave());
  Pending<void> lb(b.leave());
  EXPECT_FALSE(la.done(500ms)) << "the dead party is still in until its lease expires";
  ASSERT_TRUE(la.done(20s) && lb.done(20s)) << "its lease expired: it left";
  EXPECT_TRUE(la.future.get().ok());
  EXPECT_TRUE(lb.future.get().ok());
}

TEST_F(BarrierTest, AnEnterThatTimesOutWithdraws) {
  const std::string name = key("withdraw");
  DistributedDoubleBarrier a(client(), name, 2);
  EXPECT_FALSE(a.enter_for(300ms));
  EXPECT_FALSE(a.entered());
  EXPECT_EQ(count(name + "/parties/"), 0);
  DistributedDoubleBarrier b(client(), name, 2);
  Pending<void> eb(b.enter());
  EXPECT_FALSE(eb.done(300ms)) << "the withdrawn party does not count";
  EXPECT_TRUE(a.enter_for(10s)) << "it can enter again";
  ASSERT_TRUE(eb.done(10s));
}

// A member is killed (the leader, where the clients start) while 16
// parties arrive: each is released exactly once.
class BarrierClusterTest : public ThreeMemberTest {};

TEST_F(BarrierClusterTest, SixteenPartiesMeetAcrossALeaderKill) {
  const int leader = cluster_->wait_for_leader(10s);
  const std::string name = "/t/BarrierClusterTest/rendezvous";
  constexpr int kParties = 16;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<DistributedBarrierWithCount>> parties;
  for (int i = 0; i < kParties; ++i) {
    clients.push_back(std::make_unique<Client>(options_starting_at(i % 2 == 0 ? leader : (leader + 1) % 3)));
    parties.push_back(std::make_unique<DistributedBarrierWithCount>(*clients.back(), name, kParties));
  }
  std::vector<Result<void>> outcomes(kParties, Result<void>(Status(StatusCode::kUnknown, "not run")));
  std::vector<std::thread> threads;
  for (int i = 0; i < kParties; ++i) {
    threads.emplace_back([&, i] { outcomes[i] = parties[i]->wait().timeout(40s).wait(); });
    if (i == kParties / 2) cluster_->kill(leader);
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kParties; ++i) EXPECT_TRUE(outcomes[i].ok()) << i << ": " << outcomes[i].status().to_string();
}

}  // namespace
}  // namespace etcd::test
