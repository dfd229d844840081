// LeaderLatch, LeaderSelector and LeaderObserver against a real etcd member,
// and against the real `etcdctl elect`.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <coroutine>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "client/client_access.h"
#include "etcd/recipes/election.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

extern char** environ;

namespace etcd::test {
namespace {

using recipes::LeaderInfo;
using recipes::LeaderLatch;
using recipes::LeaderObserver;
using recipes::LeaderSelector;
using recipes::LeaderTerm;
using recipes::RecipeOptions;

// Waits until the background work of closed recipes has let go of `c` (its
// core is referenced only as much as at `baseline`), so that the test drops
// the last handle itself. (Dropping the last Client handle on the client's
// own executor while a watch stream is open is unsafe in the client layer
// today; recipes finish on that executor.)
void settle(Client& c, long baseline) {
  EXPECT_TRUE(eventually([&] { return etcd::detail::ClientAccess::core(c).use_count() <= baseline; }, 15s))
      << "recipes still hold the client: " << etcd::detail::ClientAccess::core(c).use_count() << " > " << baseline;
}

class ElectionTest : public SingleMemberTest {
 protected:
  void SetUp() override {
    SingleMemberTest::SetUp();
    baseline_ = etcd::detail::ClientAccess::core(client()).use_count();
  }
  void TearDown() override {
    settle(client(), baseline_);
    SingleMemberTest::TearDown();
  }
  long baseline_ = 0;

  // Behaviours checked on both contender layouts: `layout` is empty (the Go
  // layout) or asks for the ordered one.
  void leadership_passes_in_fifo_order(RecipeOptions layout);
  void etcdctl_leads_and_ours_waits(RecipeOptions layout);
  void etcdctl_waits_for_our_leader(RecipeOptions layout);
};

RecipeOptions ordered_layout() {
  RecipeOptions o;
  o.contender_layout = recipes::ContenderLayout::kOrdered;
  return o;
}

RecipeOptions ttl(int seconds) {
  RecipeOptions o;
  o.session_ttl = std::chrono::seconds(seconds);
  return o;
}

// A minimal eager coroutine type (any coroutine framework will do).
struct Detached {
  struct promise_type {
    Detached get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

// A child process whose stdout+stderr the test reads as it comes.
class Subprocess {
 public:
  explicit Subprocess(const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = ::posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    fd_ = fds[0];
    ::fcntl(fd_, F_SETFL, O_NONBLOCK);
    if (rc != 0) {
      pid_ = -1;
      throw std::runtime_error("cannot start " + argv[0]);
    }
  }
  ~Subprocess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Everything it wrote so far.
  std::string output() {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd_, buf, sizeof buf)) > 0) out_.append(buf, static_cast<size_t>(n));
    return out_;
  }
  bool has(const std::string& s) { return output().find(s) != std::string::npos; }
  void signal(int sig) { ::kill(pid_, sig); }
  // Exit status once it has exited (bounded wait), or -1.
  int wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(10ms);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string out_;
};

std::vector<std::string> etcdctl(const std::string& endpoint, std::vector<std::string> args) {
  std::vector<std::string> argv = {"env", "ETCDCTL_API=3", etcd::testing::etcdctl_binary(), "--endpoints=" + endpoint};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// How many of `latches` believe they lead.
int leaders(const std::vector<std::unique_ptr<LeaderLatch>>& latches) {
  int n = 0;
  for (const auto& l : latches) n += l->is_held() ? 1 : 0;
  return n;
}

// --- LeaderLatch ------------------------------------------------------------------------

TEST_F(ElectionTest, LatchUsesTheGoKeyLayoutAndItsCreateRevisionAsTerm) {
  LeaderLatch latch(client(), key("e"), "me:1");
  latch.start();
  ASSERT_TRUE(latch.await_leadership().timeout(5s).wait().ok());
  EXPECT_TRUE(latch.is_held());
  const std::string k = latch.hold().key();
  auto got = client().get(k).wait();
  ASSERT_EQ(got->kvs.size(), 1u) << k;
  EXPECT_EQ(k, key("e") + "/" + hex(got->kvs[0].lease));
  EXPECT_EQ(got->kvs[0].value, "me:1");
  EXPECT_EQ(latch.hold().token(), got->kvs[0].create_revision);
  EXPECT_FALSE(latch.hold().stop_token().stop_requested());

  auto leader = latch.leader().wait();
  ASSERT_TRUE(leader.ok() && leader->has_value());
  EXPECT_EQ((*leader)->key, k);
  EXPECT_EQ((*leader)->term, latch.hold().token());
  auto parts = latch.participants().wait();
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_TRUE((*parts)[0].leader);
  EXPECT_EQ((*parts)[0].value, "me:1");

  auto token = latch.hold().stop_token();
  auto resigned = latch.resign().wait();
  ASSERT_TRUE(resigned.ok()) << resigned.status().to_string();
  EXPECT_TRUE(*resigned);
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(latch.is_held());
  EXPECT_EQ(latch.hold().token(), 0);
  EXPECT_TRUE(client().get(k).wait()->kvs.empty());
  // Not started any more: waiting needs start() again.
  EXPECT_EQ(latch.await_leadership().wait().status().code(), StatusCode::kFailedPrecondition);
  latch.start();
  ASSERT_TRUE(latch.await_for(5s));
}

TEST_F(ElectionTest, OnlyOneLeaderAmongFiveLatches) {
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  RecipeOptions opts;
  opts.metrics = metrics;
  std::vector<std::unique_ptr<LeaderLatch>> latches;
  std::atomic<int> elected{0};
  std::vector<Subscription> subs;
  for (int i = 0; i < 5; ++i) {
    latches.push_back(std::make_unique<LeaderLatch>(client(), key("five"), "n" + std::to_string(i), opts));
    subs.push_back(latches.back()->on_is_leader([&](int64_t) { elected++; }));
  }
  for (auto& l : latches) l->start();  // all at once
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("five/")) == 5 && leaders(latches) == 1; }));
  ASSERT_TRUE(eventually([&] { return elected.load() == 1; }));
  // The one that believes it leads is the one etcd says leads.
  auto leader = latches[0]->leader().wait();
  ASSERT_TRUE(leader.ok() && leader->has_value());
  int who = -1;
  for (int i = 0; i < 5; ++i) {
    if (latches[i]->is_held()) who = i;
  }
  ASSERT_GE(who, 0);
  EXPECT_EQ((*leader)->key, latches[who]->hold().key());
  EXPECT_EQ((*leader)->term, latches[who]->hold().token());
  EXPECT_EQ(leaders(latches), 1);
  EXPECT_EQ(elected.load(), 1);
  EXPECT_EQ(metrics->value("etcd_recipes_election_acquired_total", {{"election", key("five")}}), 1);
}

void ElectionTest::leadership_passes_in_fifo_order(RecipeOptions layout) {
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  RecipeOptions opts = layout;
  opts.metrics = metrics;
  constexpr int kN = 5;
  std::vector<std::unique_ptr<LeaderLatch>> latches;
  std::mutex mu;
  std::vector<std::pair<int, int64_t>> order;  // (latch, term)
  std::vector<Subscription> subs;
  for (int i = 0; i < kN; ++i) {
    latches.push_back(std::make_unique<LeaderLatch>(client(), key("fifo"), "n" + std::to_string(i), opts));
    subs.push_back(latches.back()->on_is_leader([&, i](int64_t term) {
      std::lock_guard lock(mu);
      order.emplace_back(i, term);
    }));
    latches.back()->start();
    // Queue them one by one, so the arrival order is known.
    ASSERT_TRUE(eventually([&] { return count_under(client(), key("fifo/")) == i + 1; }));
  }
  ASSERT_TRUE(latches[0]->await_for(5s));
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(latches[i]->await_for(10s)) << "latch " << i;
    for (int j = i + 1; j < kN; ++j) EXPECT_FALSE(latches[j]->is_held()) << j << " while " << i << " leads";
    // Its on_is_leader is posted before the waiter wakes but runs a moment
    // later on the executor: wait for it, so that a missing one (never a
    // late one) fails here, naming the latch.
    ASSERT_TRUE(eventually([&] {
      std::lock_guard lock(mu);
      return order.size() == static_cast<size_t>(i + 1);
    })) << "latch "
        << i << " was not told it leads";
    latches[i]->close();
  }
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("fifo/")) == 0; }));
  std::lock_guard lock(mu);
  ASSERT_EQ(order.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(order[i].first, i);
    if (i > 0) {
      EXPECT_GT(order[i].second, order[i - 1].second) << "terms strictly increase";
    }
  }
  // Each hand-off woke only the next candidate.
  const double wakeups = metrics->value("etcd_recipes_election_wakeups_total", {{"election", key("fifo")}});
  EXPECT_LE(wakeups, (kN - 1) * 1.5);
}

TEST_F(ElectionTest, LeadershipPassesInFifoOrderWhenTheLeaderCloses) { leadership_passes_in_fifo_order({}); }
TEST_F(ElectionTest, LeadershipPassesInFifoOrderWhenTheLeaderClosesInTheOrderedLayout) {
  leadership_passes_in_fifo_order(ordered_layout());
}

TEST_F(ElectionTest, RevokedLeaseEndsTheTermAnotherTakesOverAndTheLoserContestsAgain) {
  LeaderLatch a(client(), key("revoke"), "a", ttl(3));
  LeaderLatch b(client(), key("revoke"), "b", ttl(3));
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  b.start();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("revoke/")) == 2; }));
  EXPECT_FALSE(b.is_held());

  Mailbox<Status> not_leader;
  auto sub = a.on_not_leader([&](const Status& why) { not_leader.put(why); });
  auto token = a.hold().stop_token();
  const int64_t old_term = a.hold().token();
  ASSERT_TRUE(a.hold().guarded(Txn().then(Op::put(key("fenced"), "a1"))).wait().ok());

  const int64_t lease = client().get(a.hold().key()).wait()->kvs.at(0).lease;
  Client other(options());
  ASSERT_TRUE(other.lease_revoke(lease).wait().ok());

  auto why = not_leader.take(5s);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->is(Errc::kHoldLost)) << why->to_string();
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(a.is_held());
  ASSERT_TRUE(b.await_for(5s));
  EXPECT_GT(b.hold().token(), old_term);
  auto refused = a.hold().guarded(Txn().then(Op::put(key("fenced"), "a2"))).wait();
  EXPECT_TRUE(refused.status().is(Errc::kHoldLost)) << refused.status().to_string();
  EXPECT_EQ(client().get(key("fenced")).wait()->kvs.at(0).value, "a1");
  // A lost term is routine for an election: listeners hear of it, errors()
  // does not record it.
  for (const auto& e : a.errors()) EXPECT_FALSE(e.is(Errc::kHoldLost)) << e.to_string();

  // The loser queues again, on a new session (a new key), behind b.
  ASSERT_TRUE(eventually(
      [&] {
        auto all = a.participants().wait();
        if (!all.ok() || all->size() != 2) return false;
        for (const auto& p : *all) {
          if (p.lease == lease) return false;
        }
        return true;
      },
      15s));
  EXPECT_EQ(count_under(client(), key("revoke/")), 2);
  b.close();
  ASSERT_TRUE(a.await_for(10s));
  EXPECT_GT(a.hold().token(), b.hold().token());
}

TEST_F(ElectionTest, DeletingTheLeaderKeyEndsTheTermAndTheLatchContestsAgain) {
  LeaderLatch a(client(), key("del"), "a");
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  const int64_t first_term = a.hold().token();
  const std::string k = a.hold().key();
  Mailbox<Status> not_leader;
  auto sub = a.on_not_leader([&](const Status& why) { not_leader.put(why); });
  Mailbox<int64_t> is_leader;
  auto sub2 = a.on_is_leader([&](int64_t t) { is_leader.put(t); });
  ASSERT_TRUE(client().del(k).wait().ok());  // an operator forces a new election
  auto why = not_leader.take(5s);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->is(Errc::kHoldLost)) << why->to_string();
  // Alone, it wins again: same session (its lease is alive), new term.
  auto again = is_leader.take(5s);
  ASSERT_TRUE(again.has_value());
  EXPECT_GT(*again, first_term);
  EXPECT_EQ(a.hold().key(), k);
  EXPECT_TRUE(a.is_held());
}

TEST_F(ElectionTest, ResignAndStartAtOnceGiveAFreshTermWithoutASpuriousLoss) {
  LeaderLatch a(client(), key("restart"), "a");
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  const int64_t first_term = a.hold().token();
  std::mutex mu;
  std::vector<Status> ends;
  auto sub = a.on_not_leader([&](const Status& why) {
    std::lock_guard lock(mu);
    ends.push_back(why);
  });
  Mailbox<int64_t> is_leader;
  auto sub2 = a.on_is_leader([&](int64_t t) { is_leader.put(t); });
  Mailbox<Result<bool>> resigned;
  a.resign().then([&](Result<bool> r) { resigned.put(std::move(r)); });
  a.start();  // while the delete of the old key is in flight
  auto r = resigned.take(5s);
  ASSERT_TRUE(r.has_value() && r->ok());
  EXPECT_TRUE(**r);
  auto again = is_leader.take(5s);
  ASSERT_TRUE(again.has_value());
  EXPECT_GT(*again, first_term);
  ASSERT_TRUE(a.await_for(5s));
  EXPECT_EQ(a.hold().token(), *again);
  EXPECT_EQ(client().get(a.hold().key()).wait()->kvs.at(0).create_revision, *again);
  std::lock_guard lock(mu);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(ends[0].ok()) << ends[0].to_string();  // the resign, and no loss
}

TEST_F(ElectionTest, ResignAndStartAtOnceWhileWaitingKeepCampaigning) {
  LeaderLatch holder(client(), key("rejoin"), "h");
  holder.start();
  ASSERT_TRUE(holder.await_for(5s));
  LeaderLatch waiter(client(), key("rejoin"), "w");
  waiter.start();
  // The waiter's queue entry: its create revision, once it has one.
  auto waiting_since = [&]() -> int64_t {
    auto parts = waiter.participants().wait();
    if (!parts.ok()) return 0;
    for (const auto& p : *parts) {
      if (p.value == "w") return p.term;
    }
    return 0;
  };
  int64_t since = 0;
  ASSERT_TRUE(eventually([&] { return (since = waiting_since()) != 0; }, 5s));
  for (int round = 0; round < 5; ++round) {
    // The resign cancels the campaign (its key is deleted); the start asked
    // for meanwhile joins the queue again, with a new key, once that is over.
    Mailbox<Result<bool>> resigned;
    waiter.resign().then([&](Result<bool> r) { resigned.put(std::move(r)); });
    waiter.start();
    auto r = resigned.take(5s);
    ASSERT_TRUE(r.has_value() && r->ok());
    EXPECT_FALSE(**r);  // it was not leading
    const int64_t before = since;
    ASSERT_TRUE(eventually(
        [&] {
          since = waiting_since();
          return since > before;
        },
        5s))
        << "round " << round << ": not queued again";
  }
  ASSERT_TRUE(holder.resign().wait().ok());
  EXPECT_TRUE(waiter.await_for(5s));
}

TEST_F(ElectionTest, AwaitingInEveryFlavourWithDeadlinesStopTokensAndClose) {
  LeaderLatch holder(client(), key("await"), "h");
  LeaderLatch waiter(client(), key("await"), "w");
  EXPECT_EQ(waiter.await_leadership().wait().status().code(), StatusCode::kFailedPrecondition);
  holder.start();
  ASSERT_TRUE(holder.await_for(5s));
  waiter.start();

  const auto t0 = std::chrono::steady_clock::now();
  auto timed = waiter.await_leadership().timeout(300ms).wait();
  EXPECT_EQ(timed.status().code(), StatusCode::kDeadlineExceeded) << timed.status().to_string();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 290ms);
  EXPECT_FALSE(waiter.await_until(std::chrono::system_clock::now() + 100ms));

  std::stop_source stop;
  auto cancelled = waiter.await_leadership().stop_token(stop.get_token()).future();
  EXPECT_EQ(cancelled.wait_for(100ms), std::future_status::timeout);
  stop.request_stop();
  ASSERT_EQ(cancelled.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(cancelled.get().status().code(), StatusCode::kCancelled);

  Mailbox<Result<void>> via_then, via_co;
  waiter.await_leadership().then([&](Result<void> r) { via_then.put(std::move(r)); });
  [](LeaderLatch& l, Mailbox<Result<void>>& out) -> Detached {
    Result<void> r = co_await l.await_leadership();
    out.put(std::move(r));
  }(waiter, via_co);
  holder.close();
  auto r1 = via_then.take(10s), r2 = via_co.take(10s);
  ASSERT_TRUE(r1.has_value() && r2.has_value());
  EXPECT_TRUE(r1->ok()) << r1->status().to_string();
  EXPECT_TRUE(r2->ok()) << r2->status().to_string();
  EXPECT_TRUE(waiter.is_held());

  // close() wakes parked waiters with kClosed.
  LeaderLatch third(client(), key("await"), "t");
  third.start();
  auto parked = third.await_leadership().future();
  EXPECT_EQ(parked.wait_for(100ms), std::future_status::timeout);
  third.close();
  ASSERT_EQ(parked.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(parked.get().status().is(Errc::kClosed));
  EXPECT_TRUE(third.await_leadership().wait().status().is(Errc::kClosed));
  third.close();  // idempotent
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("await/")) == 1; }));
}

TEST_F(ElectionTest, ProclaimAndGuardedWritesOnlyWhileLeading) {
  LeaderLatch a(client(), key("proclaim"), "v1");
  LeaderLatch b(client(), key("proclaim"), "b");
  EXPECT_TRUE(a.proclaim("nope").wait().status().is(Errc::kHoldLost));
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  b.start();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("proclaim/")) == 2; }));
  EXPECT_TRUE(b.proclaim("b2").wait().status().is(Errc::kHoldLost));
  const int64_t lease = client().get(a.hold().key()).wait()->kvs.at(0).lease;
  ASSERT_TRUE(a.proclaim("v2").wait().ok());
  auto kv = client().get(a.hold().key()).wait()->kvs.at(0);
  EXPECT_EQ(kv.value, "v2");
  EXPECT_EQ(kv.lease, lease);                       // still bound to the session
  EXPECT_EQ(kv.create_revision, a.hold().token());  // same term
  auto g = a.hold().guarded(Txn().then(Op::put(key("owner"), "a"))).wait();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(*a.resign().wait());
  EXPECT_TRUE(a.hold().guarded(Txn().then(Op::put(key("owner"), "late"))).wait().status().is(Errc::kHoldLost));
  EXPECT_EQ(client().get(key("owner")).wait()->kvs.at(0).value, "a");
  ASSERT_TRUE(b.await_for(5s));
  EXPECT_FALSE(*a.resign().wait());  // nothing left to resign
}

TEST_F(ElectionTest, TwoObjectsOnOneSharedSessionAreRefused) {
  auto session = Session::create(client());
  RecipeOptions shared;
  shared.session = session;
  LeaderLatch a(client(), key("shared"), "a", shared);
  LeaderLatch b(client(), key("shared"), "b", shared);
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  b.start();
  auto r = b.await_leadership().timeout(5s).wait();
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().to_string();
  EXPECT_TRUE(a.is_held());
  (void)session->close().wait();
}

// A shared session is the user's: once it has ended, a waiting latch on it
// stops for good and tells why, rather than retrying a session that cannot
// come back.
TEST_F(ElectionTest, AWaitingLatchWhoseSharedSessionEndedStopsAndSaysWhy) {
  LeaderLatch a(client(), key("ended"), "a", ttl(3));
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  SessionOptions so;
  so.ttl = 2s;
  auto session = Session::create(client(), so);
  ASSERT_TRUE(session->start().wait().ok());
  RecipeOptions shared;
  shared.session = session;
  LeaderLatch b(client(), key("ended"), "b", shared);
  b.start();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("ended/")) == 2; }));

  Client other(options());
  ASSERT_TRUE(other.lease_revoke(session->lease_id()).wait().ok());
  auto r = b.await_leadership().timeout(10s).wait();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().code(), StatusCode::kDeadlineExceeded) << "still contending on an ended session";
  EXPECT_TRUE(r.status().is(Errc::kHoldLost)) << r.status().to_string();
  ASSERT_FALSE(b.errors().empty());
  EXPECT_NE(b.errors().back().message().find("stopped"), std::string::npos) << b.errors().back().to_string();
  // It does not come back: with a gone, nobody leads.
  a.close();
  EXPECT_TRUE(eventually([&] { return count_under(client(), key("ended/")) == 0; }));
  EXPECT_FALSE(b.is_held());
}

TEST_F(ElectionTest, MetricsCountTransitions) {
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  RecipeOptions opts;
  opts.metrics = metrics;
  LeaderLatch a(client(), key("metrics"), "a", opts);
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  ASSERT_TRUE(client().del(a.hold().key()).wait().ok());
  ASSERT_TRUE(eventually([&] {
    return metrics->value("etcd_recipes_election_acquired_total", {{"election", key("metrics")}}) == 2 && a.is_held();
  }));
  const recipes::Labels l{{"election", key("metrics")}};
  EXPECT_EQ(metrics->value("etcd_recipes_election_lost_total", l), 1);
  EXPECT_EQ(metrics->value("etcd_recipes_election_wait_seconds", l), 2);  // observations
  EXPECT_EQ(metrics->value("etcd_recipes_election_leader", l), 1);
  EXPECT_NE(metrics->render().find("etcd_recipes_election_hold_seconds"), std::string::npos);
}

// --- LeaderSelector ------------------------------------------------------------------------

struct TermLog {
  std::mutex mu;
  std::vector<std::pair<int, int64_t>> terms;  // (selector, token)
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  void begin(int who, int64_t token) {
    const int now = ++running;
    int seen = max_running.load();
    while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
    }
    std::lock_guard lock(mu);
    terms.emplace_back(who, token);
  }
  void end() { --running; }
  size_t size() {
    std::lock_guard lock(mu);
    return terms.size();
  }
  std::vector<std::pair<int, int64_t>> get() {
    std::lock_guard lock(mu);
    return terms;
  }
};

// Blocks until the term's stop is requested.
void hold_until_stopped(std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait(lock, stop, [] { return false; });
}

TEST_F(ElectionTest, SelectorRunsItsCallbackOncePerTermAndRequeues) {
  TermLog log;
  auto make = [&](int who) {
    return std::make_unique<LeaderSelector>(client(), key("sel"), "s" + std::to_string(who),
                                            [&, who](std::stop_token stop, LeaderTerm& term) {
                                              log.begin(who, term.token());
                                              hold_until_stopped(stop);
                                              log.end();
                                            });
  };
  auto s0 = make(0), s1 = make(1);
  s0->start();
  ASSERT_TRUE(eventually([&] { return log.size() == 1; }));
  EXPECT_TRUE(s0->is_held());
  s1->start();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("sel/")) == 2; }));
  auto parts = s1->participants().wait();
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].value, "s0");
  EXPECT_TRUE((*parts)[0].leader);
  EXPECT_EQ((*parts)[1].value, "s1");

  // Each interrupt ends a term; the next candidate's callback runs; the
  // interrupted one re-queues at the back.
  for (int i = 1; i <= 4; ++i) {
    auto& current = (i % 2 == 1) ? s0 : s1;
    current->interrupt();
    ASSERT_TRUE(eventually([&] { return log.size() == static_cast<size_t>(i + 1); })) << "term " << i;
    ASSERT_TRUE(eventually([&] { return count_under(client(), key("sel/")) == 2; }));
  }
  auto terms = log.get();
  ASSERT_EQ(terms.size(), 5u);
  for (size_t i = 0; i < terms.size(); ++i) {
    EXPECT_EQ(terms[i].first, static_cast<int>(i % 2));
    if (i > 0) {
      EXPECT_GT(terms[i].second, terms[i - 1].second);
    }
  }
  EXPECT_EQ(log.max_running.load(), 1);
  EXPECT_EQ(s0->terms() + s1->terms(), 4u);
  s0->close();
  s1->close();
  EXPECT_EQ(log.running.load(), 0);
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("sel/")) == 0; }));
}

TEST_F(ElectionTest, SelectorRelinquishesWhenItsCallbackThrows) {
  std::atomic<int> calls{0};
  LeaderSelector thrower(client(), key("throw"), "t", [&](LeaderTerm&) {
    ++calls;
    throw std::runtime_error("boom");
  });
  thrower.set_auto_requeue(false);
  Mailbox<int64_t> other_term;
  LeaderSelector other(client(), key("throw"), "o", [&](std::stop_token stop, LeaderTerm& term) {
    other_term.put(term.token());
    hold_until_stopped(stop);
  });
  thrower.start();
  ASSERT_TRUE(eventually([&] { return calls.load() == 1; }));
  other.start();
  ASSERT_TRUE(other_term.take(10s).has_value());
  bool recorded = false;
  ASSERT_TRUE(eventually([&] {
    for (const auto& e : thrower.errors()) recorded = recorded || e.message().find("boom") != std::string::npos;
    return recorded;
  }));
  // Without auto-requeue it left the queue; requeue() brings it back.
  EXPECT_EQ(count_under(client(), key("throw/")), 1);
  EXPECT_TRUE(thrower.requeue());
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("throw/")) == 2; }));
  other.close();
  ASSERT_TRUE(eventually([&] { return calls.load() == 2; }));
  EXPECT_TRUE(eventually([&] { return thrower.terms() == 2u; })) << thrower.terms();
}

// Each term's end has a reason the callback and a listener see; a callback
// that keeps throwing is re-queued with backoff, not in a write storm.
TEST_F(ElectionTest, SelectorReportsHowEachTermEndedAndBacksOffAfterThrows) {
  Mailbox<recipes::TermEnd> seen_inside;
  LeaderSelector s(client(), key("ends"), "s", [&](std::stop_token stop, LeaderTerm& term) {
    EXPECT_FALSE(term.end().has_value()) << "no end while the term goes on; it says "
                                         << recipes::to_string(*term.end());
    hold_until_stopped(stop);
    if (auto end = term.end()) seen_inside.put(*end);
  });
  s.set_auto_requeue(false);
  Mailbox<recipes::TermEnd> ends;
  auto sub = s.on_term_end([&](recipes::TermEnd how, const Status&) { ends.put(how); });
  s.start();
  ASSERT_TRUE(eventually([&] { return s.is_held(); }));
  s.interrupt();
  EXPECT_EQ(seen_inside.take(5s), recipes::TermEnd::kInterrupted);
  EXPECT_EQ(ends.take(5s), recipes::TermEnd::kInterrupted);

  std::atomic<int> calls{0};
  LeaderSelector thrower(client(), key("storm"), "t", [&](LeaderTerm&) {
    ++calls;
    throw std::runtime_error("always");
  });
  Mailbox<recipes::TermEnd> thrown;
  auto sub2 = thrower.on_term_end([&](recipes::TermEnd how, const Status&) { thrown.put(how); });
  thrower.start();
  EXPECT_EQ(thrown.take(5s), recipes::TermEnd::kThrew);
  std::this_thread::sleep_for(1s);  // a window to count terms in, not a wait for a condition
  thrower.close();
  // Backoff 50, 100, 200, 400 ms ...: a handful of terms in a second (843
  // per second without it).
  EXPECT_LE(calls.load(), 8) << calls.load() << " terms in about a second";
  EXPECT_GE(calls.load(), 2) << "it re-queued";
}

TEST_F(ElectionTest, SelectorStopTokenIsRequestedWhenTheLeaseIsLost) {
  Mailbox<int64_t> started0, started1;
  Mailbox<bool> stopped0;
  LeaderSelector s0(
      client(), key("sellost"), "s0",
      [&](std::stop_token stop, LeaderTerm& term) {
        started0.put(term.token());
        hold_until_stopped(stop);
        // The term is over: guarded writes are refused.
        auto r = term.guarded(Txn().then(Op::put(key("sellost-w"), "late"))).wait();
        stopped0.put(r.status().is(Errc::kHoldLost));
      },
      ttl(3));
  s0.set_auto_requeue(false);
  LeaderSelector s1(client(), key("sellost"), "s1", [&](std::stop_token stop, LeaderTerm& term) {
    started1.put(term.token());
    hold_until_stopped(stop);
  });
  s0.start();
  auto t0 = started0.take(10s);
  ASSERT_TRUE(t0.has_value());
  s1.start();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("sellost/")) == 2; }));
  auto parts = s0.participants().wait();
  ASSERT_TRUE(parts.ok() && parts->size() == 2u);
  Client other(options());
  ASSERT_TRUE(other.lease_revoke((*parts)[0].lease).wait().ok());
  auto stopped = stopped0.take(10s);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_TRUE(*stopped);
  auto t1 = started1.take(10s);
  ASSERT_TRUE(t1.has_value());
  EXPECT_GT(*t1, *t0);
  EXPECT_FALSE(s0.is_held());
}

TEST_F(ElectionTest, SelectorCloseStopsTheCallbackAndResignsOnlyAfterItReturned) {
  std::atomic<bool> in_callback{false};
  Mailbox<bool> entered;
  LeaderSelector s(client(), key("selclose"), "s", [&](std::stop_token stop, LeaderTerm&) {
    in_callback = true;
    entered.put(true);
    hold_until_stopped(stop);
    std::this_thread::sleep_for(200ms);  // slow clean-up: the key must outlive it
    in_callback = false;
  });
  s.start();
  ASSERT_TRUE(entered.take(10s).has_value());
  s.close();  // returns once the callback returned
  EXPECT_FALSE(in_callback.load());
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("selclose/")) == 0; }));
  EXPECT_FALSE(s.requeue());
}

// Closed while it leads, and kept: once its term is over and its key gone,
// the selector holds nothing of its client (nor does the term the callback
// saw), and answers without it.
TEST_F(ElectionTest, AClosedSelectorKeptAfterItsTermLetsGoOfItsClient) {
  std::weak_ptr<detail::ClientCore> core;
  std::optional<LeaderSelector> s;
  Mailbox<bool> entered;
  {
    Client c(options());
    core = etcd::detail::ClientAccess::core(c);
    s.emplace(c, key("selkept"), "s", [&](std::stop_token stop, LeaderTerm&) {
      entered.put(true);
      hold_until_stopped(stop);
    });
    s->start();
    ASSERT_TRUE(entered.take(10s).has_value());
    s->close();
  }
  EXPECT_TRUE(eventually([&] { return core.expired(); }, 15s)) << "the closed selector still holds its client";
  EXPECT_EQ(count_under(client(), key("selkept/")), 0) << "its key went before the client";
  EXPECT_TRUE(s->participants().wait().status().is(Errc::kClosed));
  EXPECT_FALSE(s->requeue());
  EXPECT_FALSE(s->is_held());
  s.reset();
}

TEST_F(ElectionTest, SelectorClosedFromItsOwnCallbackRelinquishesOnlyWhenItReturns) {
  std::atomic<bool> first_running{false}, overlap{false};
  Mailbox<bool> second_started;
  LeaderSelector s1(client(), key("selfclose"), "s1", [&](std::stop_token stop, LeaderTerm&) {
    overlap = overlap || first_running;
    second_started.put(true);
    hold_until_stopped(stop);
  });
  std::unique_ptr<LeaderSelector> s0;
  s0 = std::make_unique<LeaderSelector>(client(), key("selfclose"), "s0", [&](std::stop_token stop, LeaderTerm&) {
    first_running = true;
    s1.start();
    EXPECT_TRUE(eventually([&] { return count_under(client(), key("selfclose/")) == 2; }));
    s0->close();  // from inside: it cannot wait for itself
    EXPECT_TRUE(stop.stop_requested());
    std::this_thread::sleep_for(300ms);  // slow clean-up: nobody else may lead meanwhile
    first_running = false;
  });
  s0->start();
  ASSERT_TRUE(second_started.take(15s).has_value());
  EXPECT_FALSE(overlap.load());
  EXPECT_FALSE(s0->requeue());
  s0.reset();  // idempotent close, the detached thread has ended its job
  s1.close();
}

TEST_F(ElectionTest, ResignCanBeAwaitedFromAListener) {
  LeaderLatch a(client(), key("listener"), "a");
  Mailbox<Result<bool>> out;
  auto sub = a.on_is_leader([&](int64_t) { out.put(a.resign().timeout(5s).wait()); });
  a.start();
  auto r = out.take(10s);
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->ok()) << r->status().to_string();
  EXPECT_TRUE(**r);
  EXPECT_EQ(count_under(client(), key("listener/")), 0);
}

// Without auto-requeue, a caller that ends a term and asks to lead again at
// once (the blocking "lead once" loop) is queued as soon as the old key is
// gone, rather than refused because the term was still ending.
TEST_F(ElectionTest, SelectorRequeueAskedWhileATermEndsJoinsOnceItsKeyIsGone) {
  Mailbox<int64_t> started;
  LeaderSelector s(client(), key("selrejoin"), "s", [&](std::stop_token stop, LeaderTerm& term) {
    started.put(term.token());
    hold_until_stopped(stop);
  });
  s.set_auto_requeue(false);
  s.start();
  auto first = started.take(10s);
  ASSERT_TRUE(first.has_value());
  for (int round = 0; round < 5; ++round) {
    s.interrupt();
    EXPECT_TRUE(s.requeue());  // the term is still ending: joins after it
    auto next = started.take(5s);
    ASSERT_TRUE(next.has_value()) << "round " << round << ": not queued again";
    EXPECT_GT(*next, *first);
    first = next;
  }
  s.close();
  EXPECT_TRUE(eventually([&] { return count_under(client(), key("selrejoin/")) == 0; }));
}

TEST_F(ElectionTest, SelectorResignLeavesTheElection) {
  Mailbox<int64_t> started;
  LeaderSelector s(client(), key("selresign"), "s", [&](std::stop_token stop, LeaderTerm& term) {
    started.put(term.token());
    hold_until_stopped(stop);
  });
  s.start();
  ASSERT_TRUE(started.take(10s).has_value());
  s.resign();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("selresign/")) == 0 && !s.is_held(); }));
  EXPECT_FALSE(started.take(300ms).has_value());  // not re-queued
  EXPECT_TRUE(s.requeue());
  ASSERT_TRUE(started.take(10s).has_value());
}

// --- LeaderObserver --------------------------------------------------------------------------

struct LeaderLog {
  std::mutex mu;
  std::vector<std::optional<LeaderInfo>> seen;
  std::function<void(const std::optional<LeaderInfo>&)> listener() {
    return [this](const std::optional<LeaderInfo>& l) {
      std::lock_guard lock(mu);
      seen.push_back(l);
    };
  }
  std::optional<std::optional<LeaderInfo>> last() {
    std::lock_guard lock(mu);
    if (seen.empty()) return std::nullopt;
    return seen.back();
  }
  bool last_value_is(const std::string& v) {
    auto l = last();
    return l && *l && (*l)->value == v;
  }
  bool last_is_none() {
    auto l = last();
    return l && !*l;
  }
};

TEST_F(ElectionTest, ObserverFollowsTheLeader) {
  LeaderObserver observer(client(), key("obs"));
  LeaderLog log;
  auto sub = observer.on_change(log.listener());
  EXPECT_EQ(observer.wait_initialized().wait().status().code(), StatusCode::kFailedPrecondition);
  observer.start();
  ASSERT_TRUE(observer.wait_initialized().timeout(5s).wait().ok());
  ASSERT_TRUE(eventually([&] { return log.last_is_none(); }));  // the initial state: no leader
  EXPECT_FALSE(observer.current().has_value());

  LeaderLatch a(client(), key("obs"), "a"), b(client(), key("obs"), "b");
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  ASSERT_TRUE(eventually([&] { return log.last_value_is("a"); }));
  EXPECT_EQ(observer.current()->term, a.hold().token());
  EXPECT_EQ(observer.current()->key, a.hold().key());
  b.start();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("obs/")) == 2; }));
  ASSERT_TRUE(a.proclaim("a2").wait().ok());
  ASSERT_TRUE(eventually([&] { return log.last_value_is("a2"); }));
  a.close();
  ASSERT_TRUE(eventually([&] { return log.last_value_is("b"); }));
  b.close();
  ASSERT_TRUE(eventually([&] { return log.last_is_none(); }));
  std::lock_guard lock(log.mu);
  // none, a, a2, b, none: one call per change, the waiting candidate b's
  // arrival was not a change.
  ASSERT_EQ(log.seen.size(), 5u);
  EXPECT_EQ(log.seen[1]->value, "a");
  EXPECT_EQ(log.seen[3]->value, "b");
}

class ElectionProxyTest : public ElectionTest {
 protected:
  void SetUp() override {
    ElectionTest::SetUp();
    proxy_ = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  }
  void TearDown() override {
    proxy_.reset();
    ElectionTest::TearDown();
  }
  ClientOptions proxied() const {
    ClientOptions o;
    o.endpoints = {proxy_->endpoint()};
    return o;
  }
  std::unique_ptr<etcd::testing::FaultProxy> proxy_;
};

TEST_F(ElectionProxyTest, ObserverRecoversAfterTheRevisionItWatchedWasCompacted) {
  Client cut_off(proxied());
  const long cut_off_baseline = etcd::detail::ClientAccess::core(cut_off).use_count();
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  RecipeOptions opts;
  opts.metrics = metrics;
  auto observer_ptr = std::make_unique<LeaderObserver>(cut_off, key("gap"), opts);
  auto& observer = *observer_ptr;
  LeaderLog log;
  auto sub = observer.on_change(log.listener());
  LeaderLatch a(client(), key("gap"), "a"), b(client(), key("gap"), "b");
  a.start();
  ASSERT_TRUE(a.await_for(5s));
  b.start();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("gap/")) == 2; }));
  observer.start();
  ASSERT_TRUE(eventually([&] { return log.last_value_is("a"); }));

  proxy_->cut();
  a.close();  // b leads, then proclaims, all while the observer is cut off
  ASSERT_TRUE(b.await_for(5s));
  ASSERT_TRUE(b.proclaim("b-during-gap").wait().ok());
  auto probe = client().put(key("probe"), "x").wait();
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(client().compact(probe->header.revision).wait().ok());
  proxy_->restore();

  ASSERT_TRUE(eventually([&] { return log.last_value_is("b-during-gap"); }, 20s));
  EXPECT_EQ(observer.current()->term, b.hold().token());
  EXPECT_GE(metrics->value("etcd_recipes_leader_observer_resyncs_total", {{"election", key("gap")}}), 1);
  // And it keeps following after the resync.
  ASSERT_TRUE(b.proclaim("b-after").wait().ok());
  ASSERT_TRUE(eventually([&] { return log.last_value_is("b-after"); }));
  observer_ptr.reset();
  settle(cut_off, cut_off_baseline);
}

// --- etcdctl interoperability -------------------------------------------------------------------

void ElectionTest::etcdctl_leads_and_ours_waits(RecipeOptions layout) {
  const std::string name = key("ctl-leads");
  Subprocess ctl(etcdctl(cluster().endpoint(0), {"elect", name, "etcdctl-proposal"}));
  // etcdctl prints its key and value once it leads.
  ASSERT_TRUE(eventually([&] { return ctl.has("etcdctl-proposal"); })) << ctl.output();

  LeaderObserver observer(client(), name);
  observer.start();
  ASSERT_TRUE(observer.wait_initialized().timeout(5s).wait().ok());
  ASSERT_TRUE(observer.current().has_value());
  EXPECT_EQ(observer.current()->value, "etcdctl-proposal");
  EXPECT_EQ(observer.current()->key.rfind(name + "/", 0), 0u);

  LeaderLatch ours(client(), name, "ours", layout);
  ours.start();
  EXPECT_FALSE(ours.await_for(1s));  // etcdctl leads
  ctl.signal(SIGINT);                // etcdctl resigns on SIGINT
  ASSERT_TRUE(ours.await_for(10s));
  EXPECT_GE(ctl.wait(5s), 0);
  ASSERT_TRUE(eventually([&] { return observer.current() && observer.current()->value == "ours"; }));
}

TEST_F(ElectionTest, EtcdctlLeaderIsSeenByOurObserverAndOurLatchWaitsForIt) { etcdctl_leads_and_ours_waits({}); }
TEST_F(ElectionTest, EtcdctlLeaderIsSeenByOurObserverAndOurLatchWaitsForItInTheOrderedLayout) {
  etcdctl_leads_and_ours_waits(ordered_layout());
}

void ElectionTest::etcdctl_waits_for_our_leader(RecipeOptions layout) {
  const std::string name = key("we-lead");
  LeaderLatch ours(client(), name, "our-proposal", layout);
  ours.start();
  ASSERT_TRUE(ours.await_for(5s));

  Subprocess listen(etcdctl(cluster().endpoint(0), {"elect", "--listen", name}));
  ASSERT_TRUE(eventually([&] { return listen.has("our-proposal"); })) << listen.output();
  ASSERT_TRUE(ours.proclaim("our-second-proposal").wait().ok());
  ASSERT_TRUE(eventually([&] { return listen.has("our-second-proposal"); })) << listen.output();

  // A campaigning etcdctl waits behind us...
  Subprocess ctl(etcdctl(cluster().endpoint(0), {"elect", name, "etcdctl-proposal"}));
  ASSERT_TRUE(eventually([&] { return count_under(client(), name + "/") == 2; }));
  EXPECT_TRUE(ours.is_held());
  EXPECT_FALSE(ctl.has("etcdctl-proposal"));
  // ...and leads once we resign; the listener shows it.
  EXPECT_TRUE(*ours.resign().wait());
  ASSERT_TRUE(eventually([&] { return ctl.has("etcdctl-proposal"); })) << ctl.output();
  ASSERT_TRUE(eventually([&] { return listen.has("etcdctl-proposal"); })) << listen.output();
  ctl.signal(SIGINT);
  EXPECT_GE(ctl.wait(5s), 0);
  ASSERT_TRUE(eventually([&] { return count_under(client(), name + "/") == 0; }));
}

TEST_F(ElectionTest, EtcdctlSeesOurLeaderAndWaitsForIt) { etcdctl_waits_for_our_leader({}); }
TEST_F(ElectionTest, EtcdctlSeesOurLeaderAndWaitsForItInTheOrderedLayout) {
  etcdctl_waits_for_our_leader(ordered_layout());
}

// --- bad input ------------------------------------------------------------------------------------

TEST_F(ElectionTest, BadInputIsRejectedBeforeAnyWrite) {
  const auto before = client().stats().rpcs_started;
  // The lifecycle rule (docs/recipes.md): start() throws, every operation
  // fails with Errc::kBadArgument, nothing is sent.
  for (std::string bad : {std::string(), key("trailing/"), std::string("nul\0byte", 8)}) {
    LeaderLatch latch(client(), bad, "v");
    EXPECT_THROW(latch.start(), etcd::Error);
    auto r = latch.await_leadership().wait();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    EXPECT_TRUE(r.status().is(Errc::kBadArgument));
    EXPECT_EQ(latch.participants().wait().status().code(), StatusCode::kInvalidArgument);

    LeaderSelector selector(client(), bad, "v", [](LeaderTerm&) {});
    EXPECT_THROW(selector.start(), etcd::Error);
    EXPECT_EQ(selector.participants().wait().status().code(), StatusCode::kInvalidArgument);

    LeaderObserver observer(client(), bad);
    EXPECT_THROW(observer.start(), etcd::Error);
    EXPECT_EQ(observer.wait_initialized().wait().status().code(), StatusCode::kInvalidArgument);
  }
  LeaderLatch zero_ttl(client(), key("ttl"), "v", ttl(0));
  EXPECT_THROW(zero_ttl.start(), etcd::Error);
  auto r = zero_ttl.await_leadership().wait();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  EXPECT_NE(r.status().message().find("session_ttl"), std::string::npos) << r.status().message();

  LeaderSelector no_callback(client(), key("nocb"), "v", LeaderSelector::Callback());
  try {
    no_callback.start();
    ADD_FAILURE() << "start() accepted an empty callback";
  } catch (const etcd::Error& e) {
    EXPECT_NE(e.status().message().find("callback"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client().stats().rpcs_started, before);
}

// --- a 3-member cluster ------------------------------------------------------------------------------

TEST(ElectionClusterTest, OneLeaderThroughARaftLeaderFailover) {
  auto cluster = etcd::testing::EtcdCluster::start_three();
  // Latches go first (and their background work ends) before the clients.
  struct Fleet {
    std::vector<std::unique_ptr<Client>> clients;
    std::vector<long> baselines;
    std::vector<std::unique_ptr<LeaderLatch>> latches;
    ~Fleet() {
      latches.clear();
      for (size_t i = 0; i < clients.size(); ++i) settle(*clients[i], baselines[i]);
    }
  } fleet;
  auto& latches = fleet.latches;
  for (int i = 0; i < 3; ++i) {
    ClientOptions o;
    o.endpoints = cluster->endpoints();
    std::rotate(o.endpoints.begin(), o.endpoints.begin() + i, o.endpoints.end());  // each on its own member first
    fleet.clients.push_back(std::make_unique<Client>(o));
    fleet.baselines.push_back(etcd::detail::ClientAccess::core(*fleet.clients.back()).use_count());
    latches.push_back(std::make_unique<LeaderLatch>(*fleet.clients.back(), "/t/cluster/e", "n" + std::to_string(i)));
    latches.back()->start();
  }
  auto describe = [&] {
    std::string out;
    for (const auto& l : latches) {
      out += l->hold().key() + (l->is_held() ? " leads" : "") + ";";
      for (const auto& e : l->errors()) out += " " + e.to_string();
      out += "\n";
    }
    return out;
  };
  ASSERT_TRUE(eventually([&] { return leaders(latches) == 1; }, 20s)) << describe();
  int who = -1;
  for (int i = 0; i < 3; ++i) {
    if (latches[i]->is_held()) who = i;
  }
  const int64_t term = latches[who]->hold().token();
  const int raft_leader = cluster->wait_for_leader(10s);
  cluster->kill(raft_leader);
  cluster->wait_for_leader(15s);
  // The election's leader is unaffected by raft's (its lease outlives the
  // failover), and there is never more than one.
  for (int i = 0; i < 20; ++i) {
    EXPECT_LE(leaders(latches), 1);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(eventually([&] { return leaders(latches) == 1; }, 20s));
  // Hand-off still works with one member down.
  int next = -1;
  for (int i = 0; i < 3; ++i) {
    if (latches[i]->is_held()) next = i;
  }
  EXPECT_EQ(latches[next]->hold().token(), term);
  latches[next]->close();
  ASSERT_TRUE(eventually([&] { return leaders(latches) == 1; }, 20s));
  for (int i = 0; i < 3; ++i) {
    if (i != next) {
      EXPECT_TRUE(!latches[i]->is_held() || latches[i]->hold().token() > term);
    }
  }
}

}  // namespace
}  // namespace etcd::test
