// The command-line tool's Go-style durations and lease ids.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "parse.h"

namespace etcd_cli {
namespace {

using std::chrono::milliseconds;

TEST(CliParse, GoDurations) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("5s"), milliseconds(5000));
  EXPECT_EQ(parse_duration("1m30s"), milliseconds(90'000));
  EXPECT_EQ(parse_duration("1.5h"), milliseconds(5'400'000));
  EXPECT_EQ(parse_duration("2h45m"), milliseconds((2 * 60 + 45) * 60'000));
  EXPECT_EQ(parse_duration("7"), milliseconds(7000));    // a bare number is seconds
  EXPECT_EQ(parse_duration("1500us"), milliseconds(2));  // rounded up, never to 0
  EXPECT_EQ(parse_duration("1ns"), milliseconds(1));
  EXPECT_EQ(parse_duration("\xC2\xB5s"), std::nullopt);  // a unit needs a number
  EXPECT_EQ(parse_duration("3\xC2\xB5s"), milliseconds(1));
}

TEST(CliParse, BadDurationsAreRefused) {
  for (const char* bad : {"", "0", "0s", "-1s", "s", "5x", "1m30", "1..5s", "5 s", "ms5", "1e3s"}) {
    EXPECT_EQ(parse_duration(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(CliParse, LongDurationsSaturate) {
  // Past the maximum a wait means "forever": the value stays usable in
  // deadline arithmetic (now + d fits the clocks' nanoseconds).
  EXPECT_EQ(parse_duration("99999999h"), kMaxDuration);
  EXPECT_EQ(parse_duration("876000h"), kMaxDuration);
  EXPECT_EQ(parse_duration(std::string(400, '9') + "s"), kMaxDuration);
  EXPECT_EQ(parse_duration("875999h"), std::chrono::hours(875'999));
  const auto far = std::chrono::steady_clock::now() + *parse_duration("99999999h");
  EXPECT_GT(far, std::chrono::steady_clock::now());
  const auto far_wall = std::chrono::system_clock::now() + *parse_duration("99999999h");
  EXPECT_GT(far_wall, std::chrono::system_clock::now());

  EXPECT_TRUE(past_max_duration("99999999h"));
  EXPECT_TRUE(past_max_duration("876000h1ms"));
  EXPECT_FALSE(past_max_duration("876000h"));
  EXPECT_FALSE(past_max_duration("5s"));
  EXPECT_FALSE(past_max_duration("bogus"));
}

TEST(CliParse, NearestWordForATypo) {
  const std::vector<std::string> commands = {"kv", "lease", "lock", "semaphore", "rwlock", "workqueue", "status"};
  EXPECT_EQ(nearest_word("lcok", commands), "lock");  // two letters swapped: one edit
  EXPECT_EQ(nearest_word("loc", commands), "lock");
  EXPECT_EQ(nearest_word("workqeue", commands), "workqueue");
  EXPECT_EQ(nearest_word("semaphor", commands), "semaphore");
  EXPECT_EQ(nearest_word("frobnicate", commands), "");  // nothing close: no guess
  EXPECT_EQ(nearest_word("xy", commands), "");
  EXPECT_EQ(nearest_word("gett", {"get", "put", "del", "watch", "compact"}), "get");
}

TEST(CliParse, LeaseIds) {
  EXPECT_EQ(parse_lease_id("694d7d5b2bad7c0b"), 0x694d7d5b2bad7c0bLL);
  EXPECT_EQ(parse_lease_id("0x1f"), 0x1f);
  EXPECT_EQ(parse_lease_id("0X1F"), 0x1f);
  EXPECT_EQ(parse_lease_id("ff"), 0xff);
  EXPECT_EQ(parse_lease_id("12345"), 0x12345) << "always hex, never guessed from the digits";
  EXPECT_EQ(parse_lease_id("10"), 16);
  EXPECT_EQ(parse_lease_id("0000000000000010"), 0x10);
  // The printed form may use the sign bit: etcd ids are int64 on the wire.
  EXPECT_EQ(parse_lease_id("ffffffffffffffff"), -1);
}

TEST(CliParse, BadLeaseIdsAreRefused) {
  for (const char* bad : {"", "0", "0x", "0x0", "xyz", "12g", "-5", "10000000000000000", "0x1_f", " 12"}) {
    EXPECT_EQ(parse_lease_id(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(CliParse, ListenAddresses) {
  const auto hp = [](std::string_view text) {
    const auto a = parse_host_port(text);
    return a ? a->host + " " + std::to_string(a->port) : std::string("none");
  };
  EXPECT_EQ(hp("127.0.0.1:9464"), "127.0.0.1 9464");
  EXPECT_EQ(hp("[::1]:0"), "::1 0");
  EXPECT_EQ(hp("0.0.0.0:65535"), "0.0.0.0 65535");
  EXPECT_EQ(hp("metrics.example:80"), "metrics.example 80");
  for (const char* bad :
       {"", "9464", ":9464", "::1:9464", "[::1]", "host:", "host:65536", "host:-1", "host:9x", "[]:1", "a b:1"}) {
    EXPECT_EQ(hp(bad), "none") << '"' << bad << '"';
  }
}

TEST(CliParse, OnlyLoopbackAddressesAreLoopback) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "localhost", "::1"}) EXPECT_TRUE(is_loopback_host(host)) << host;
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "127.0.0.1.example", "127.0.0", "127.0.0.256", "1127.0.0.1",
                           "localhost.example", "myhost"}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

}  // namespace
}  // namespace etcd_cli
