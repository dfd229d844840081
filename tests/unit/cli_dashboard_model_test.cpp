// The dashboard's model (tools/etcd-recipes/dashboard_model.h) on
// hand-made keys: which scope a change re-reads, how a scoped read
// replaces what was held (and only that), the delta a page gets, ages from
// the revision clock, and the bounds of what is kept (entries per recipe,
// chart series).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dashboard_model.h"
#include "etcd/recipes/inspect.h"
#include "recipes/queues/work_record.h"
#include "unit/test_keys.h"

namespace etcd_cli::dashboard {
namespace {

using test_keys::kv;

const std::string kProducer = "00000000000000aa";

std::string item(const std::string& queue, int seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "-%016d", seq);
  return queue + "/items/" + kProducer + buf;
}

in::Report report_of(std::vector<etcd::KeyValue> kvs, int64_t revision) {
  return in::build_report(std::move(kvs), revision);
}

std::vector<std::string> ids_of(const std::vector<nlohmann::json>& upserts) {
  std::vector<std::string> ids;
  for (const auto& j : upserts) ids.push_back(j["id"]);
  return ids;
}

TEST(CliDashboardModel, DisplayTextKeepsUtf8EscapesOtherBytesAndCuts) {
  EXPECT_EQ(display_text("/locks/caf\xc3\xa9"), "/locks/caf\xc3\xa9");
  EXPECT_EQ(display_text("a\xff\tb"), "a\\xff\\x09b");
  EXPECT_EQ(display_text("abcdef", 3), "abc\u2026");
  EXPECT_EQ(display_text("abc", 3), "abc");
  // Whatever the bytes, the result is valid JSON text.
  EXPECT_NO_THROW((void)nlohmann::json(display_text(std::string("\x80\xc3(\0z", 5))).dump());
}

TEST(CliDashboardModel, WithinMeansTheNameOrUnderItNeverASibling) {
  EXPECT_TRUE(key_within("/app/lock", "/app/lock"));
  EXPECT_TRUE(key_within("/app/lock/694d", "/app/lock"));
  EXPECT_FALSE(key_within("/app/locksmith", "/app/lock"));
  EXPECT_FALSE(key_within("/app", "/app/lock"));
  EXPECT_TRUE(key_within("anything", ""));
}

TEST(CliDashboardModel, RevisionClockIsExactForWatchedRevisionsAndABoundOtherwise) {
  RevisionClock clock;
  EXPECT_EQ(clock.since(5).ms, 0);
  clock.observe(10, 1'000, false);  // read at 10 when the dashboard started
  clock.observe(15, 2'000, true);   // watched
  clock.observe(12, 9'999, true);   // older than the newest: ignored
  clock.observe(20, 3'000, false);  // read
  // Before the start: happened no later than the first read.
  EXPECT_EQ(clock.since(3).ms, 1'000);
  EXPECT_FALSE(clock.since(3).exact);
  EXPECT_EQ(clock.since(15).ms, 2'000);
  EXPECT_TRUE(clock.since(15).exact);
  // Between observations: no later than the next one.
  EXPECT_EQ(clock.since(13).ms, 2'000);
  EXPECT_FALSE(clock.since(13).exact);
  EXPECT_EQ(clock.since(99).ms, 3'000);
  EXPECT_FALSE(clock.since(99).exact);
}

TEST(CliDashboardModel, RevisionClockStaysBoundedAndItsAgesStayBounds) {
  RevisionClock clock;
  for (int64_t r = 1; r <= static_cast<int64_t>(RevisionClock::kMaxPoints) * 3; ++r) clock.observe(r, r * 10, true);
  EXPECT_LE(clock.size(), RevisionClock::kMaxPoints + 1);
  // A thinned revision is dated no earlier than it happened.
  for (int64_t r : {1, 2, 3, 1001, 50'001}) {
    const Since s = clock.since(r);
    EXPECT_GE(s.ms, r * 10) << r;
  }
  EXPECT_TRUE(clock.since(static_cast<int64_t>(RevisionClock::kMaxPoints) * 3).exact);
}

TEST(CliDashboardModel, AChangeReReadsItsRecipeOrANewRecipesDirectoryNeverThePrefix) {
  const std::set<std::string> names = {"/app/lock", "/app/jobs", "/app"};
  // A key of a recipe held: that recipe.
  EXPECT_EQ(scope_for("/app/lock/694d", "/app", names), "/app/lock");
  EXPECT_EQ(scope_for(item("/app/jobs", 1), "/app", names), "/app/jobs");
  EXPECT_EQ(scope_for("/app/lock", "/app", names), "/app/lock");
  // A new recipe: the key's directory.
  EXPECT_EQ(scope_for("/app/locks/db/694d", "/app", {}), "/app/locks/db");
  // A directory of recipes of their own (transient keys): a new one is read alone.
  EXPECT_EQ(scope_for("/app/sessions/c", "/app", {"/app/sessions/a", "/app/sessions/b"}), "/app/sessions/c");
  EXPECT_EQ(scope_for("/app/sessions-x/c", "/app", {"/app/sessions/a"}), "/app/sessions-x");
  // A key right under the prefix (a counter, a gate): the key itself, not the prefix.
  EXPECT_EQ(scope_for("/app/hits", "/app", {}), "/app/hits");
  // A name above the base is not the key's recipe (another prefix's).
  EXPECT_EQ(scope_for("/app/new/k", "/app", {""}), "/app/new");
  // Every key: a key with no slash is its own scope.
  EXPECT_EQ(scope_for("top", "", {}), "top");
  EXPECT_EQ(scope_for("a/b/c", "", {}), "a/b");
}

TEST(CliDashboardModel, AReadOfAnItemsDirectoryAsksForTheWholeQueue) {
  const auto read = report_of({kv(item("/app/jobs", 1), "x", 5)}, 6);
  ASSERT_EQ(read.recipes.size(), 1u);
  EXPECT_EQ(wider_scope("/app/jobs/items", read), "/app/jobs");
  EXPECT_EQ(wider_scope("/app/jobs", read), std::nullopt);
}

TEST(CliDashboardModel, AScopedReadReplacesOnlyItsScopeAndSendsOnlyWhatChanged) {
  RevisionClock clock;
  clock.observe(100, 1'000, false);
  PrefixModel model("/app/", "/app");
  const auto full = report_of({kv("/app/lock/694d", "h", 10, 0x694d), kv("/app/lock/7b", "w", 11, 0x7b),
                               kv("/app/hits", "42", 12), kv(item("/app/q", 1), "a", 13)},
                              100);
  Delta d = model.apply("/app", full, {}, clock);
  EXPECT_TRUE(model.loaded());
  EXPECT_EQ(model.size(), 3u);
  EXPECT_EQ(d.upsert.size(), 3u);
  EXPECT_TRUE(d.remove.empty());

  // The holder releases: the lock is read again; only it changes.
  clock.observe(101, 2'000, true);
  d = model.apply("/app/lock", report_of({kv("/app/lock/7b", "w", 11, 0x7b)}, 101), {}, clock);
  ASSERT_EQ(ids_of(d.upsert), std::vector<std::string>{"lock_or_election:/app/lock"});
  EXPECT_TRUE(d.remove.empty());
  const auto& entries = d.upsert[0]["entries"];
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]["role"], "holder");
  EXPECT_EQ(entries[0]["token"], 11);
  EXPECT_EQ(entries[0]["lease"], "000000000000007b");
  EXPECT_FALSE(entries[0]["since_exact"].get<bool>()) << "created before the dashboard watched";
  EXPECT_EQ(model.revision(), 101);

  // The same read again: nothing to send.
  d = model.apply("/app/lock", report_of({kv("/app/lock/7b", "w", 11, 0x7b)}, 102), {}, clock);
  EXPECT_TRUE(d.empty());

  // Recipes that show a TTL: the lock's holder (its waiters' leases are not shown).
  EXPECT_EQ(model.with_ttls(10), std::vector<std::string>{"/app/lock"});
  EXPECT_TRUE(model.with_ttls(0).empty());

  // The last one leaves: the lock is gone, the rest stays.
  d = model.apply("/app/lock", report_of({}, 103), {}, clock);
  EXPECT_TRUE(d.upsert.empty());
  EXPECT_EQ(d.remove, std::vector<std::string>{"lock_or_election:/app/lock"});
  EXPECT_EQ(model.size(), 2u);

  // A read that found a recipe above its scope applies nothing outside it.
  d = model.apply("/app/q/items", report_of({kv(item("/app/q", 1), "a", 13), kv(item("/app/q", 2), "b", 104)}, 104),
                  {}, clock);
  EXPECT_TRUE(d.empty());
  const auto state = model.state_json(5'000);
  EXPECT_EQ(state["recipes"].size(), 2u);
  EXPECT_EQ(state["prefix"], "/app/");
  EXPECT_TRUE(state["error"].is_null());
}

TEST(CliDashboardModel, AnErrorIsInTheStateAndTheUpdates) {
  PrefixModel model("/app", "/app");
  model.set_error("dashboard /app: etcd: permission denied");
  EXPECT_EQ(model.state_json(1)["error"], "dashboard /app: etcd: permission denied");
  EXPECT_EQ(model.update_json({}, 1)["error"], "dashboard /app: etcd: permission denied");
}

TEST(CliDashboardModel, ARecipeSendsItsHeadAndCountsTheRest) {
  RevisionClock clock;
  clock.observe(1, 1'000, false);
  std::vector<etcd::KeyValue> kvs;
  for (int i = 0; i < 120; ++i) kvs.push_back(kv(item("/app/q", i + 1), "v", 10 + i));
  // A summary: 120 read of 500,000.
  const auto read = in::build_report(std::move(kvs), 200, {{"/app/q/items/", 500'000}});
  ASSERT_EQ(read.recipes.size(), 1u);
  clock.observe(10, 2'000, true);
  const auto j = recipe_json(read.recipes[0], "/app", {}, clock);
  EXPECT_EQ(j["entries"].size(), kEntriesPerRecipe);
  EXPECT_EQ(j["entries_omitted"], 500'000 - static_cast<int64_t>(kEntriesPerRecipe));
  EXPECT_EQ(j["metrics"]["depth"], 500'000);
  EXPECT_EQ(j["counts"]["item"], 500'000);
  EXPECT_EQ(j["oldest"]["create_revision"], 10);
  EXPECT_EQ(j["oldest"]["since_ms"], 2'000);
  EXPECT_TRUE(j["oldest"]["exact"].get<bool>());
}

TEST(CliDashboardModel, AWorkQueuesInFlightIsTheExportersCountReadOrSummarised) {
  namespace wr = etcd::recipes::detail;
  // Every key read: one claimed item, and a claim whose item is gone.
  const auto all = report_of({kv("/w/items/a", wr::encode_work_record("busy"), 5), kv("/w/claims/a", "c1", 6, 0x77),
                              kv("/w/claims/b", "c2", 7, 0x78)},
                             8);
  ASSERT_EQ(all.recipes.size(), 1u);
  EXPECT_EQ(recipe_metrics(all.recipes[0]).at("in_flight"), in::total(all.recipes[0], in::Role::kClaimed));
  // A summary of 40 claims, two of them read (one with its item): 40, not 40 + the claim-only one read.
  auto kvs = std::vector<etcd::KeyValue>{kv("/w/items/a", wr::encode_work_record("busy"), 5),
                                         kv("/w/claims/a", "c1", 6, 0x77), kv("/w/claims/b", "c2", 7, 0x78)};
  const auto summary = in::build_report(std::move(kvs), 8, {{"/w/claims/", 40}, {"/w/items/", 41}});
  ASSERT_EQ(summary.recipes.size(), 1u);
  EXPECT_EQ(recipe_metrics(summary.recipes[0]).at("in_flight"), 40);
  EXPECT_EQ(recipe_metrics(summary.recipes[0]).at("depth"), 1);
}

TEST(CliDashboardModel, SeriesKeepTheLastStepsAndABoundedNumberOfSeries) {
  Series series(3, 2);
  series.sample(1'000, {{"queue:/a", {{"depth", 1}}}});
  series.sample(2'000, {{"queue:/a", {{"depth", 2}}}, {"queue:/b", {{"depth", 7}}}});
  // A third series does not fit.
  series.sample(3'000, {{"queue:/a", {{"depth", 3}}}, {"queue:/b", {{"depth", 8}}}, {"queue:/c", {{"depth", 9}}}});
  series.sample(4'000, {{"queue:/b", {{"depth", 9}}}});
  auto h = series.history_json(4'000);
  EXPECT_EQ(h["t"], nlohmann::json({2'000, 3'000, 4'000}));
  EXPECT_EQ(h["series"]["queue:/a"]["depth"], nlohmann::json({2, 3, nullptr}));
  EXPECT_EQ(h["series"]["queue:/b"]["depth"], nlohmann::json({7, 8, 9}));
  EXPECT_FALSE(h["series"].contains("queue:/c"));
  // A series with no value left is dropped, which makes room.
  series.sample(5'000, {{"queue:/b", {{"depth", 9}}}});
  series.sample(6'000, {{"queue:/b", {{"depth", 9}}}, {"queue:/c", {{"depth", 1}}}});
  h = series.history_json(6'000);
  EXPECT_FALSE(h["series"].contains("queue:/a"));
  EXPECT_EQ(h["series"]["queue:/c"]["depth"], nlohmann::json({nullptr, nullptr, 1}));
  EXPECT_EQ(series.series(), 2u);
}

}  // namespace
}  // namespace etcd_cli::dashboard
