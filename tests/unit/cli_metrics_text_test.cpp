// `etcd-recipes exporter`'s text (tools/etcd-recipes/metrics_text.h):
// inspection reports of hand-made keys rendered in Prometheus's text
// format 0.0.4: label values escaped, every family's HELP and TYPE once
// before all of its samples, the values each recipe's metrics stand for.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "etcd/recipes/inspect.h"
#include "metrics_text.h"
#include "recipes/queues/work_record.h"
#include "unit/test_keys.h"

namespace etcd_cli::metrics {
namespace {

namespace in = etcd::recipes::inspect;
namespace wr = etcd::recipes::detail;

constexpr int64_t kNow = 1'700'000'000'000;

using test_keys::kv;

PrefixScrape scraped(std::string prefix, std::vector<etcd::KeyValue> kvs, int64_t revision) {
  PrefixScrape s;
  s.prefix = std::move(prefix);
  s.report = in::build_report(std::move(kvs), revision);
  s.seconds = 0.25;
  s.requests = 2;
  return s;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Whether `text` has `line` as one of its lines.
bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text)) {
    if (l == line) return true;
  }
  return false;
}

TEST(CliMetricsText, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(escape_label_value(R"(a\b"c)"), R"(a\\b\"c)");
  EXPECT_EQ(escape_label_value("line 1\nline 2"), R"(line 1\nline 2)");
  EXPECT_EQ(escape_label_value("/locks/orders"), "/locks/orders");
  // Valid UTF-8 stays as it is; other bytes and controls become the text \xHH.
  EXPECT_EQ(escape_label_value("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(escape_label_value("a\xff"), R"(a\\xff)");
  EXPECT_EQ(escape_label_value("a\tb"), R"(a\\x09b)");
}

TEST(CliMetricsText, LeaderValueIsAnEscapedLabel) {
  const std::string text =
      render_metrics({scraped("/e", {kv("/e/billing/694d", "node \"2\"\\x\nnext", 10, 0x694d)}, 11)}, kNow);
  EXPECT_TRUE(
      has_line(text, R"(etcd_recipes_election_leader_info{election="/e/billing",leader="node \"2\"\\x\nnext"} 1)"))
      << text;
  // Each series stays on its one line.
  for (const auto& line : lines_of(text)) EXPECT_FALSE(line.empty()) << text;
}

TEST(CliMetricsText, HelpAndTypeOncePerFamilyBeforeAllItsSamples) {
  const std::string p = "00000000000000aa";
  const std::string text = render_metrics(
      {scraped("/a", {kv("/a/q1/items/" + p + "-0000000000000001", "x", 5), kv("/a/q2/items/" + p + "-01", "y", 6)}, 7),
       scraped("/b", {kv("/b/q3/items/" + p + "-0000000000000001", "z", 8)}, 9)},
      kNow);
  std::map<std::string, int> help, type;
  std::string family;  // the family of the last TYPE line
  for (const auto& line : lines_of(text)) {
    std::istringstream words(line);
    std::string hash, tag, name;
    words >> hash >> tag >> name;
    if (hash == "#" && tag == "HELP") {
      ++help[name];
    } else if (hash == "#" && tag == "TYPE") {
      ++type[name];
      family = name;
      std::string kind;
      words >> kind;
      EXPECT_EQ(kind, "gauge") << line;
    } else if (hash != "#") {
      // A sample belongs to the family announced last.
      EXPECT_EQ(line.substr(0, line.find_first_of("{ ")), family) << text;
    }
  }
  for (const auto& [name, n] : help) EXPECT_EQ(n, 1) << name;
  for (const auto& [name, n] : type) EXPECT_EQ(n, 1) << name;
  EXPECT_EQ(help.size(), type.size());
  EXPECT_EQ(help.count("etcd_recipes_queue_depth"), 1u);
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_queue_depth{queue="/a/q1",kind="queue"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_queue_depth{queue="/b/q3",kind="queue"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_exporter_up{prefix="/b"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_exporter_revision{prefix="/a"} 7)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_exporter_scrape_duration_seconds{prefix="/a"} 0.25)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_exporter_scrape_requests{prefix="/a"} 2)")) << text;
  // No family without samples.
  EXPECT_EQ(help.count("etcd_recipes_counter_value"), 0u) << text;
}

TEST(CliMetricsText, ASeriesIsGivenOnce) {
  const auto s = scraped("/c", {kv("/c/hits", "42", 3)}, 4);
  const std::string text = render_metrics({s, s}, kNow);
  int n = 0;
  for (const auto& line : lines_of(text)) n += line == R"(etcd_recipes_counter_value{counter="/c/hits"} 42)";
  EXPECT_EQ(n, 1) << text;
}

TEST(CliMetricsText, LocksSemaphoresAndTheirWaiters) {
  const std::string text =
      render_metrics({scraped("/l",
                              {kv("/l/orders/7b", "host:3", 30, 0x7b), kv("/l/orders/694d", "host:1", 10, 0x694d),
                               kv("/l/orders/1a", "host:2", 20, 0x1a), kv("/l/sem/permits", "2", 5),
                               kv("/l/sem/holders/a-1", "h1", 6, 0xa), kv("/l/sem/holders/b-1", "h2", 7, 0xb),
                               kv("/l/sem/holders/c-1", "h3", 8, 0xc)},
                              40)},
                     kNow);
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_lock_holders{lock="/l/orders",kind="lock_or_election"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_lock_waiters{lock="/l/orders",kind="lock_or_election"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_lock_token{lock="/l/orders",kind="lock_or_election"} 10)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_election_leader_info{election="/l/orders",leader="host:1"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_lock_holders{lock="/l/sem",kind="semaphore"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_lock_waiters{lock="/l/sem",kind="semaphore"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_semaphore_permits{semaphore="/l/sem"} 2)")) << text;
}

TEST(CliMetricsText, QueuesInFlightDeadLettersAndTheAgeOnlyARecordGives) {
  const std::string p = "00000000000000aa";
  const std::string text = render_metrics(
      {scraped("/q",
               {kv("/q/plain/items/" + p + "-0000000000000001", "a", 11),
                kv("/q/plain/items/" + p + "-0000000000000002", "b", 12),
                // Work queue: the oldest ready item became ready 90 s ago; one is
                // in flight, one delayed, one dead.
                kv("/q/wq/items/a", wr::encode_work_record("due", kNow - 90'000), 20),
                kv("/q/wq/items/b", wr::encode_work_record("busy"), 21), kv("/q/wq/claims/b", "worker:7", 25, 0x77),
                kv("/q/wq/items/c", wr::encode_work_record("later", kNow + 30'000), 22),
                kv("/q/wq/dead/d", wr::encode_dead_record("bad", 5, kNow - 1000, "exit 3"), 23)},
               30)},
      kNow);
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_queue_depth{queue="/q/plain",kind="queue"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_queue_oldest_create_revision{queue="/q/plain",kind="queue"} 11)")) << text;
  // A plain queue's items carry no time: no age rather than an invented one.
  EXPECT_EQ(text.find(R"(etcd_recipes_queue_oldest_age_seconds{queue="/q/plain")"), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_queue_depth{queue="/q/wq",kind="work_queue"} 2)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_queue_oldest_age_seconds{queue="/q/wq",kind="work_queue"} 90)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_workqueue_in_flight{queue="/q/wq"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_workqueue_dead_letters{queue="/q/wq"} 1)")) << text;

  // The oldest ready item without a time in its record: no age either.
  const std::string plain_record =
      render_metrics({scraped("/w",
                              {kv("/w/items/a", wr::encode_work_record("now"), 5),
                               kv("/w/items/b", wr::encode_work_record("due", kNow - 90'000), 6)},
                              7)},
                     kNow);
  EXPECT_EQ(plain_record.find("etcd_recipes_queue_oldest_age_seconds{"), std::string::npos) << plain_record;
}

TEST(CliMetricsText, BarriersCountersAndServices) {
  const auto instance = [](const std::string& name, const std::string& id) {
    return R"({"name":")" + name + R"(","id":")" + id +
           R"(","address":"10.0.0.1","port":80,"sslPort":null,"payload":null,"registrationTimeUTC":1,"enabled":true})";
  };
  const std::string text =
      render_metrics({scraped("/x",
                              {kv("/x/start/parties/a", "", 3, 0xa), kv("/x/start/parties/b", "", 4, 0xb),
                               kv("/x/hits", "-7", 5), kv("/x/gate", "me", 6, 0xc), kv("/x/gate/set-by", "me", 6),
                               kv("/x/services/api/a1", instance("api", "a1"), 7, 0xd),
                               kv("/x/services/api/a2", instance("api", "a2"), 8, 0xe)},
                              9)},
                     kNow);
  EXPECT_NE(text.find(R"(etcd_recipes_barrier_parties{barrier="/x/start",kind=")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(barrier="/x/start",kind="count_or_double_barrier"} 2)"), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_barrier_set{barrier="/x/gate"} 1)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_counter_value{counter="/x/hits"} -7)")) << text;
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_service_instances{service="/x/services/api"} 2)")) << text;
}

TEST(CliMetricsText, AFailedPrefixIsDownWithItsCauseInAComment) {
  PrefixScrape failed;
  failed.prefix = "/secret";
  failed.error = "exporter /secret: permission denied\nsecond line";
  failed.seconds = 0.5;
  const std::string text = render_metrics({failed}, kNow);
  EXPECT_TRUE(has_line(text, R"(etcd_recipes_exporter_up{prefix="/secret"} 0)")) << text;
  EXPECT_TRUE(has_line(text, R"(# prefix="/secret" not read: exporter /secret: permission denied\nsecond line)"))
      << text;
  EXPECT_EQ(text.find("etcd_recipes_exporter_revision"), std::string::npos) << text;
}

TEST(CliMetricsText, SampleValues) {
  EXPECT_EQ(format_value(2.0), "2");
  EXPECT_EQ(format_value(0.125), "0.125");
  EXPECT_EQ(format_value(-1.5e-7), "-1.5e-07");
  EXPECT_EQ(format_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
}

}  // namespace
}  // namespace etcd_cli::metrics
