// The only member stalls (SIGSTOP for 5 s: a GC pause, a disk stall) while
// calls have time left. With nowhere better to go, a call waits for its
// member and succeeds once it runs again, as etcdctl's does: on an open
// connection and on one made during the stall (the member's kernel accepts
// it, but no HTTP/2 SETTINGS come until the process runs).
#include <chrono>
#include <thread>

#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using StallTest = SingleMemberTest;
constexpr auto kStall = 5s;

// Pauses the only member now and resumes it after kStall, whatever happens.
class Stall {
 public:
  explicit Stall(etcd::testing::EtcdCluster& cluster) : at_(Clock::now()) {
    cluster.pause(0);
    resumer_ = std::thread([&cluster] {
      std::this_thread::sleep_for(kStall);
      cluster.resume(0);
    });
  }
  Stall(const Stall&) = delete;
  Stall& operator=(const Stall&) = delete;
  ~Stall() { resumer_.join(); }
  Clock::time_point at() const { return at_; }

 private:
  Clock::time_point at_;
  std::thread resumer_;
};

TEST_F(StallTest, AWriteOnAnOpenConnectionWaitsOutAStallOfTheOnlyMember) {
  ASSERT_TRUE(client().put(key("warm"), "1").wait().ok());
  Stall stall(cluster());
  auto put = client().put(key("k"), "during").timeout(15s).wait();
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  EXPECT_GE(Clock::now() - stall.at(), kStall - 500ms) << "answered while the member was stopped?";
  auto got = client().get(key("k")).timeout(5s).wait();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs.front().value, "during");
  EXPECT_EQ(got->kvs.front().version, 1) << "the write was applied more than once";
}

TEST_F(StallTest, AWriteOnANewConnectionDuringAStallSucceedsAfterIt) {
  Stall stall(cluster());
  Client fresh(options());
  auto put = fresh.put(key("k"), "new-connection").timeout(15s).wait();
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  EXPECT_GE(Clock::now() - stall.at(), kStall - 500ms);
  auto got = client().get(key("k")).timeout(5s).wait();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs.front().version, 1);
}

TEST_F(StallTest, ACallWhoseDeadlineEndsDuringTheStallFailsByItsDeadline) {
  ASSERT_TRUE(client().put(key("warm"), "1").wait().ok());
  Stall stall(cluster());
  const auto started = Clock::now();
  auto put = client().put(key("k"), "v").timeout(2s).wait();
  ASSERT_FALSE(put.ok());
  EXPECT_TRUE(put.status().is(Errc::kOutcomeUnknown)) << put.status().to_string();
  EXPECT_GE(Clock::now() - started, 1900ms) << "gave up before its deadline: " << put.status().to_string();
  EXPECT_LT(Clock::now() - started, 4s);
}

}  // namespace
}  // namespace etcd::test
