// The work queue under worker crashes: 5,000
// items, several work_worker processes (tests/fault/work_worker.cpp), and
// SIGKILLs of random workers while they process an item, each replaced by a
// fresh worker, until the queue is empty. Then a checker reads the workers'
// shared log and etcd:
//
//  * nothing is lost: every item was started; NAME/items/, NAME/claims/ and
//    NAME/dead/ are empty (only an ack deletes an item);
//  * no item was acked twice (an ack is guarded by its claim);
//  * an item started more than once was, each time but the last, with a
//    worker that was killed holding it or whose ack returned false (its
//    claim was lost); deliveries no log line shows (a worker killed between
//    its claim and its log line) are no more than the kills;
//  * the item a killed worker held is started again by another worker
//    within the visibility timeout + 1 s of the kill on average, and each
//    within + 2 s (the claim's lease expires within the visibility timeout;
//    etcd notices an expired lease in a periodic check and revokes it
//    through raft, which a loaded machine delays by hundreds of ms; a
//    missed wake-up would cost far more: the item would look claimed to
//    every consumer until something else made them read again).
//
// WORKQUEUE_CRASH_RUNS=N runs the scenario N times in a row (a fresh etcd
// each time); --gtest_repeat=N does the same. The worker binary comes from
// the build: WORK_WORKER_PATH (without it the test is skipped).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "etcd/client.h"
#include "etcd/recipes/work_queue.h"
#include "support/child_process.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

namespace fs = std::filesystem;

constexpr int kItems = 5000;
constexpr int kWorkers = 4;
constexpr int kVisibilitySeconds = 2;
// High enough that kills alone never dead-letter an item.
constexpr int kMaxDeliveries = 50;
// Each item's "work": a random sleep of up to this long, so that a kill
// lands inside an item and the run lasts long enough for many kills.
constexpr int kWorkMs = 40;
constexpr auto kRedeliveryMeanBound = std::chrono::seconds(kVisibilitySeconds) + 1s;
constexpr auto kRedeliveryBound = std::chrono::seconds(kVisibilitySeconds) + 2s;
constexpr auto kRunBound = 85s;  // one run, etcd start included
const std::string kQueue = "/wq/crash";

int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One line of the shared log (see work_worker.cpp).
struct Entry {
  std::string id;
  std::string kind;  // "start", "acked", "stale", "ackerr"
  int64_t attempt = 0;
  pid_t pid = 0;
  int64_t ns = 0;
};

// Reads the log as it grows: only complete lines, each once.
class LogReader {
 public:
  explicit LogReader(fs::path path) : path_(std::move(path)) {}
  // The entries added since the last call.
  std::vector<Entry> poll() {
    std::vector<Entry> out;
    std::ifstream in(path_, std::ios::binary);
    if (!in) return out;
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = 0;
    for (size_t nl; (nl = chunk.find('\n', at)) != std::string::npos; at = nl + 1) {
      std::istringstream fields(chunk.substr(at, nl - at));
      Entry e;
      std::string second;
      if (!(fields >> e.id >> second >> e.pid >> e.ns)) {
        bad_.push_back(chunk.substr(at, nl - at));
        continue;
      }
      if (second == "acked" || second == "stale" || second == "ackerr") {
        e.kind = second;
      } else {
        e.kind = "start";
        e.attempt = std::stoll(second);
      }
      out.push_back(std::move(e));
    }
    offset_ += at;
    return out;
  }
  const std::vector<std::string>& bad_lines() const { return bad_; }

 private:
  fs::path path_;
  size_t offset_ = 0;
  std::vector<std::string> bad_;
};

struct Worker {
  pid_t pid = -1;
  bool killed = false;
  int64_t killed_ns = 0;
  std::optional<std::string> last_started;  // the item it started last and did not finish
};

struct Kill {
  pid_t pid = 0;
  int64_t ns = 0;
  std::optional<std::string> holding;  // the item it was working on, if its log says so
};

struct RunResult {
  int kills = 0;
  int measured = 0;
  double max_redelivery_s = 0;
  double mean_redelivery_s = 0;
  int duplicates = 0;
  int stale = 0;
  int unlogged_deliveries = 0;
  double seconds = 0;
};

void run_once(int run_no, const fs::path& worker_binary, RunResult& result) {
  const auto run_start = std::chrono::steady_clock::now();
  const auto run_deadline = run_start + kRunBound;
  auto cluster = etcd::testing::EtcdCluster::start_single();
  ClientOptions copts;
  copts.endpoints = cluster->endpoints();
  Client client(copts);

  char tmpl[] = "/tmp/workqueue-crash-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const fs::path log_path = dir / "work.log";
  const fs::path err_path = dir / "workers.err";

  // --- the items ------------------------------------------------------------
  std::vector<std::string> ids;
  {
    etcd::recipes::DistributedWorkQueue producer(client, kQueue);
    for (int batch = 0; batch < kItems / 100; ++batch) {
      std::vector<std::string> values;
      for (int i = 0; i < 100; ++i) values.push_back("item " + std::to_string(batch * 100 + i));
      auto done = producer.enqueue_all(std::move(values)).timeout(10s).wait();
      ASSERT_TRUE(done.ok()) << done.status().to_string();
      for (const auto& key : done->keys) ids.push_back(key.substr(key.rfind('/') + 1));
    }
  }
  ASSERT_EQ(ids.size(), static_cast<size_t>(kItems));
  ASSERT_EQ(count_under(client, kQueue + "/items/"), kItems);

  // --- workers, and kills -----------------------------------------------------
  std::map<pid_t, Worker> workers;
  struct Reaper {
    std::map<pid_t, Worker>& workers;
    ~Reaper() {
      for (auto& [pid, w] : workers) {
        if (!w.killed) {
          ::kill(pid, SIGKILL);
          int status;
          ::waitpid(pid, &status, 0);
        }
      }
    }
  } reaper{workers};
  const auto start_worker = [&] {
    const pid_t pid =
        spawn_child({worker_binary.string(), "--endpoints", cluster->endpoints_csv(), "--name", kQueue, "--visibility",
                     std::to_string(kVisibilitySeconds), "--max-deliveries", std::to_string(kMaxDeliveries),
                     "--work-ms", std::to_string(kWorkMs), "--log", log_path.string()},
                    err_path);
    if (pid > 0) workers[pid].pid = pid;
    return pid > 0;
  };
  for (int i = 0; i < kWorkers; ++i) ASSERT_TRUE(start_worker());

  LogReader reader(log_path);
  std::vector<Entry> entries;
  const auto absorb = [&] {
    for (auto& e : reader.poll()) {
      auto it = workers.find(e.pid);
      if (it != workers.end()) {
        if (e.kind == "start") {
          it->second.last_started = e.id;
        } else if (it->second.last_started == e.id) {
          it->second.last_started.reset();
        }
      }
      entries.push_back(std::move(e));
    }
  };
  const auto diagnostics = [&] {
    std::ifstream in(err_path);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return "--- workers' stderr (last 3000 bytes):\n" + (all.size() > 3000 ? all.substr(all.size() - 3000) : all);
  };

  std::mt19937 rng(static_cast<unsigned>(mono_ns()) + static_cast<unsigned>(run_no));
  std::vector<Kill> kills;
  auto next_kill = std::chrono::steady_clock::now() + 1s;
  int64_t left = kItems;
  auto next_count = std::chrono::steady_clock::now();
  while (left > 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), run_deadline)
        << left << " items still in the queue at the run's bound\n"
        << diagnostics();
    std::this_thread::sleep_for(10ms);
    absorb();
    for (auto& [pid, w] : workers) {
      int status;
      if (!w.killed && ::waitpid(pid, &status, WNOHANG) == pid)
        FAIL() << "worker " << pid << " exited\n" << diagnostics();
    }
    const auto now = std::chrono::steady_clock::now();
    // Kill a worker that is inside an item (its last line is a start), at
    // a random moment; the queue must still hold work for the others.
    if (now >= next_kill && left > kItems / 20) {
      std::vector<pid_t> busy;
      for (const auto& [pid, w] : workers) {
        if (!w.killed && w.last_started) busy.push_back(pid);
      }
      if (!busy.empty()) {
        const pid_t victim = busy[std::uniform_int_distribution<size_t>(0, busy.size() - 1)(rng)];
        ::kill(victim, SIGKILL);
        const int64_t killed_ns = mono_ns();
        int status;
        ::waitpid(victim, &status, 0);
        Worker& w = workers[victim];
        w.killed = true;
        w.killed_ns = killed_ns;
        absorb();  // every line it wrote is in the file now
        kills.push_back({victim, killed_ns, w.last_started});
        ASSERT_TRUE(start_worker());
        next_kill = now + std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 1500)(rng));
      }
    }
    if (now >= next_count) {
      left = count_under(client, kQueue + "/items/");
      if (left < 0) left = 1;
      next_count = now + 100ms;
    }
  }
  // Empty: only acks delete items. Nothing may be claimed or dead.
  const int64_t claims = count_under(client, kQueue + "/claims/");
  const int64_t dead = count_under(client, kQueue + "/dead/");
  absorb();
  const int64_t end_ns = mono_ns();
  for (auto& [pid, w] : workers) {
    if (!w.killed) {
      ::kill(pid, SIGKILL);
      int status;
      ::waitpid(pid, &status, 0);
      w.killed = true;  // after the end: not a kill of the scenario
      w.killed_ns = end_ns;
    }
  }
  absorb();
  EXPECT_EQ(claims, 0) << "claims left with the queue empty";
  EXPECT_EQ(dead, 0) << "dead letters although no item reached " << kMaxDeliveries << " deliveries";
  EXPECT_TRUE(reader.bad_lines().empty()) << "torn log line: " << reader.bad_lines().front();

  // --- the checker ------------------------------------------------------------
  std::map<pid_t, int64_t> killed_at;  // the scenario's kills only
  for (const auto& k : kills) killed_at[k.pid] = k.ns;
  struct ItemLog {
    std::vector<const Entry*> starts;
    int acked = 0;
    std::set<pid_t> failed_ack;  // stale or ackerr, by worker
    std::set<pid_t> acked_by;
  };
  std::map<std::string, ItemLog> items;
  for (const auto& e : entries) {
    auto& item = items[e.id];
    if (e.kind == "start") {
      item.starts.push_back(&e);
    } else if (e.kind == "acked") {
      ++item.acked;
      item.acked_by.insert(e.pid);
    } else {
      item.failed_ack.insert(e.pid);
      if (e.kind == "stale") ++result.stale;
    }
  }
  const std::set<std::string> known(ids.begin(), ids.end());
  int never_started = 0, acked_twice = 0, unexplained = 0, ack_unlogged = 0;
  for (const auto& id : ids) {
    const auto it = items.find(id);
    if (it == items.end() || it->second.starts.empty()) {
      if (++never_started <= 5) ADD_FAILURE() << "item " << id << " was never started";
      continue;
    }
    const ItemLog& item = it->second;
    if (item.acked > 1 && ++acked_twice <= 5) ADD_FAILURE() << "item " << id << " acked " << item.acked << " times";
    // Its ack line can only be missing if the worker died after the ack
    // landed and before it logged it.
    if (item.acked == 0) {
      if (killed_at.contains(item.starts.back()->pid)) {
        ++ack_unlogged;
      } else {
        ADD_FAILURE() << "item " << id << " is gone from etcd but its last worker (" << item.starts.back()->pid
                      << ", not killed) never logged its ack";
      }
    }
    if (item.starts.size() > 1) ++result.duplicates;
    int64_t last_attempt = 0;
    for (size_t i = 0; i < item.starts.size(); ++i) {
      const Entry& s = *item.starts[i];
      // Attempts increase; a gap is a delivery no line shows.
      EXPECT_GT(s.attempt, last_attempt) << "item " << id << ": attempt " << s.attempt << " after " << last_attempt;
      result.unlogged_deliveries += static_cast<int>(std::max<int64_t>(0, s.attempt - last_attempt - 1));
      last_attempt = s.attempt;
      if (i + 1 == item.starts.size()) break;
      const bool killed_holding = killed_at.contains(s.pid) && !item.acked_by.contains(s.pid);
      const bool lost_claim = item.failed_ack.contains(s.pid);
      if (!killed_holding && !lost_claim && ++unexplained <= 5) {
        ADD_FAILURE() << "item " << id << " delivered again after attempt " << s.attempt << " by worker " << s.pid
                      << ", which was not killed and whose ack did not fail";
      }
    }
  }
  for (const auto& [id, item] : items) {
    EXPECT_TRUE(known.contains(id)) << "a log line for an item never enqueued: " << id;
  }
  EXPECT_EQ(never_started, 0);
  EXPECT_EQ(acked_twice, 0);
  EXPECT_EQ(unexplained, 0);
  EXPECT_LE(result.unlogged_deliveries, static_cast<int>(kills.size()))
      << "more deliveries without a log line than kills could explain";

  // Redelivery after each kill: the next start of the item the victim held.
  double sum = 0;
  int already = 0, ack_landed = 0;
  for (const auto& k : kills) {
    if (!k.holding) continue;
    const ItemLog& item = items[*k.holding];
    // The start after the victim's own last start of it.
    const Entry* next = nullptr;
    for (size_t i = item.starts.size(); i-- > 0;) {
      if (item.starts[i]->pid == k.pid) {
        if (i + 1 < item.starts.size()) next = item.starts[i + 1];
        break;
      }
    }
    if (next == nullptr) {
      ++ack_landed;  // its ack went through just before the kill
      continue;
    }
    if (next->ns < k.ns) {
      ++already;  // the victim had lost the claim before it died
      continue;
    }
    const double s = static_cast<double>(next->ns - k.ns) / 1e9;
    ++result.measured;
    sum += s;
    result.max_redelivery_s = std::max(result.max_redelivery_s, s);
    EXPECT_LE(s, std::chrono::duration<double>(kRedeliveryBound).count())
        << "item " << *k.holding << " held by killed worker " << k.pid << " was started again only " << s
        << " s after the kill";
  }
  result.kills = static_cast<int>(kills.size());
  result.mean_redelivery_s = result.measured > 0 ? sum / result.measured : 0;
  EXPECT_LE(result.mean_redelivery_s, std::chrono::duration<double>(kRedeliveryMeanBound).count())
      << "items held by killed workers came back " << result.mean_redelivery_s << " s after the kill on average";
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  EXPECT_GE(result.kills, 5) << "too few kills landed for the run to mean much";
  EXPECT_GE(result.measured, 3) << "too few kills hit an item that came back";

  std::printf(
      "run %d: %d items, %d kills (%d redeliveries measured: mean %.2f s, max %.2f s; %d acks that landed before "
      "the kill, %d claims lost before it), %d items started more than once, %d stale acks, %d deliveries without a "
      "log line, %d acks without one, %.1f s\n",
      run_no, kItems, result.kills, result.measured, result.mean_redelivery_s, result.max_redelivery_s, ack_landed,
      already, result.duplicates, result.stale, result.unlogged_deliveries, ack_unlogged, result.seconds);
  std::fflush(stdout);
  EXPECT_LT(result.seconds, 90.0);
  if (!::testing::Test::HasFailure()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  } else {
    cluster->mark_failed();
    std::printf("worker log kept in %s\n", dir.c_str());
  }
}

TEST(WorkQueueCrashTest, NoItemLostWhenWorkersAreKilled) {
#ifndef WORK_WORKER_PATH
  GTEST_SKIP() << "built without WORK_WORKER_PATH (the work_worker binary)";
#else
  const fs::path worker_binary = WORK_WORKER_PATH;
  ASSERT_TRUE(fs::exists(worker_binary)) << worker_binary;
  int runs = 1;
  if (const char* n = std::getenv("WORKQUEUE_CRASH_RUNS")) runs = std::max(1, std::atoi(n));
  for (int run = 1; run <= runs; ++run) {
    SCOPED_TRACE("run " + std::to_string(run) + " of " + std::to_string(runs));
    RunResult result;
    run_once(run, worker_binary, result);
    if (HasFatalFailure()) return;
  }
#endif
}

}  // namespace
}  // namespace etcd::test
