// Mutual exclusion under faults (SPEC §8): four lock_worker processes take
// one DistributedMutex many times on a 3-member cluster while a non-leader
// member is killed and restarted, the leader is killed, and one worker is
// paused (SIGSTOP) in the middle of a hold for longer than its session TTL.
// Then a checker reads every worker's log and etcd's history:
//
//  * fencing tokens strictly increase in the time order of acquisition;
//  * no two holds overlap in time, except where the earlier hold reported
//    its loss (lost listener / hold_token, or unlock() returned false);
//  * the paused holder's loss was reported and its guarded write, made after
//    it resumed, was refused;
//  * every guarded write that succeeded is in etcd under NAME-log/<token>,
//    none that was refused is, and replaying etcd's history from revision 1
//    shows each of them landing while its hold's key was the lowest live
//    key (so it was the holder as etcd sees it, never after a loss); their
//    revisions increase with the tokens.
//
// The worker binary comes from the build: LOCK_WORKER_PATH (without it the
// test is skipped).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "etcd/client.h"
#include "support/child_process.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

namespace fs = std::filesystem;

constexpr int kWorkers = 4;
constexpr int kIterations = 25;
constexpr int kTtlSeconds = 2;
constexpr int kHoldMs = 80;
constexpr auto kTestBound = 88s;  // the whole test, cluster start included
const std::string kLock = "/mx/lock";

[[maybe_unused]] int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Hold {
  int worker = 0;
  int64_t token = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool unlock_ok = false;
  bool write_ok = false;
  bool lost_reported = false;
  int64_t write_ns = 0;
  std::string write_status;
  bool loss_reported() const { return lost_reported || !unlock_ok; }
};

struct WorkerLog {
  std::vector<std::pair<int64_t, int64_t>> acquired;  // (token, start_ns)
  std::vector<Hold> holds;
};

[[maybe_unused]] WorkerLog read_log(const fs::path& path, int worker) {
  WorkerLog log;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (line.rfind("acquired ", 0) == 0) {
      std::string word;
      int64_t token = 0, start = 0;
      if (fields >> word >> token >> start) log.acquired.emplace_back(token, start);
      continue;
    }
    Hold h;
    h.worker = worker;
    int unlock = 0, write = 0, lost = 0;
    if (fields >> h.token >> h.start_ns >> h.end_ns >> unlock >> write >> lost >> h.write_ns >> h.write_status) {
      h.unlock_ok = unlock == 1;
      h.write_ok = write == 1;
      h.lost_reported = lost == 1;
      log.holds.push_back(h);
    }
    // A torn last line (the writer is mid-write) is read again next time.
  }
  return log;
}

struct Worker {
  pid_t pid = -1;
  fs::path out;
  fs::path err;
  bool exited = false;
  int status = 0;
};

// SIGKILLs and reaps every worker still running (also on a failed ASSERT).
struct WorkerReaper {
  std::vector<Worker>& workers;
  ~WorkerReaper() {
    for (auto& w : workers) {
      if (w.pid > 0 && !w.exited) {
        ::kill(w.pid, SIGCONT);
        ::kill(w.pid, SIGKILL);
        ::waitpid(w.pid, &w.status, 0);
        w.exited = true;
      }
    }
  }
};

TEST(MutualExclusionTest, HoldsNeverOverlapUnlessALossIsReported) {
#ifndef LOCK_WORKER_PATH
  GTEST_SKIP() << "built without LOCK_WORKER_PATH (the lock_worker binary)";
#else
  const fs::path worker_binary = LOCK_WORKER_PATH;
  ASSERT_TRUE(fs::exists(worker_binary)) << worker_binary;
  const auto test_start = std::chrono::steady_clock::now();
  const auto test_deadline = test_start + kTestBound;
  const auto time_left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(test_deadline - std::chrono::steady_clock::now());
  };
  const auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - test_start).count();
  };

  auto cluster = etcd::testing::EtcdCluster::start_three();
  cluster->wait_for_leader(10s);
  ClientOptions copts;
  copts.endpoints = cluster->endpoints();
  Client client(copts);

  char tmpl[] = "/tmp/mutual-exclusion-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;

  std::vector<Worker> workers(kWorkers);
  WorkerReaper reaper{workers};
  for (int i = 0; i < kWorkers; ++i) {
    // Each worker starts on a different member (the client uses its first
    // endpoint until it fails), so the member kills hit some of them.
    std::vector<std::string> eps = cluster->endpoints();
    std::rotate(eps.begin(), eps.begin() + (i % static_cast<int>(eps.size())), eps.end());
    std::string csv;
    for (const auto& e : eps) csv += (csv.empty() ? "" : ",") + e;
    workers[i].out = dir / ("w" + std::to_string(i) + ".log");
    workers[i].err = dir / ("w" + std::to_string(i) + ".err");
    workers[i].pid =
        spawn_child({worker_binary.string(), "--endpoints", csv, "--name", kLock, "--worker", "w" + std::to_string(i),
                     "--iterations", std::to_string(kIterations), "--ttl", std::to_string(kTtlSeconds), "--hold-ms",
                     std::to_string(kHoldMs), "--out", workers[i].out.string()},
                    workers[i].err);
    ASSERT_GT(workers[i].pid, 0);
  }

  const auto diagnostics = [&] {
    std::string out;
    for (int i = 0; i < kWorkers; ++i)
      out += "--- worker " + std::to_string(i) + " stderr:\n" + tail_of(workers[i].err);
    return out;
  };
  const auto logs = [&] {
    std::vector<WorkerLog> all;
    for (int i = 0; i < kWorkers; ++i) all.push_back(read_log(workers[i].out, i));
    return all;
  };
  const auto acquisitions = [&] {
    std::size_t n = 0;
    for (const auto& l : logs()) n += l.acquired.size();
    return n;
  };
  const auto reap = [&] {
    bool all = true;
    for (auto& w : workers) {
      if (!w.exited && ::waitpid(w.pid, &w.status, WNOHANG) == w.pid) w.exited = true;
      all = all && w.exited;
    }
    return all;
  };
  // Polls (every 10 ms) until `pred` or the test's bound.
  const auto wait_until = [&](const std::function<bool()>& pred) {
    while (!pred()) {
      if (time_left() <= 0ms) return false;
      reap();
      std::this_thread::sleep_for(10ms);
    }
    return true;
  };
  std::vector<std::string> timeline;
  const auto event = [&](const std::string& what) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%6.2f s ", seconds_since_start());
    timeline.push_back(buf + what);
  };

  // --- faults, paced by the workers' progress -------------------------------
  ASSERT_TRUE(wait_until([&] { return acquisitions() >= 6; })) << diagnostics();
  const int leader0 = cluster->wait_for_leader(10s);
  const int follower = (leader0 + 1) % 3;
  cluster->kill(follower);
  event("killed follower " + std::to_string(follower));

  ASSERT_TRUE(wait_until([&] { return acquisitions() >= 14; })) << diagnostics();
  cluster->restart(follower);
  cluster->wait_healthy(15s);
  event("restarted follower " + std::to_string(follower));

  ASSERT_TRUE(wait_until([&] { return acquisitions() >= 22; })) << diagnostics();
  const int leader1 = cluster->wait_for_leader(10s);
  cluster->kill(leader1);
  event("killed leader " + std::to_string(leader1));
  const int leader2 = cluster->wait_for_leader(10s);
  event("new leader " + std::to_string(leader2));

  ASSERT_TRUE(wait_until([&] { return acquisitions() >= 30; })) << diagnostics();
  cluster->restart(leader1);
  cluster->wait_healthy(15s);
  event("restarted old leader " + std::to_string(leader1));

  // Pause a worker early in a hold (before its guarded write) for longer
  // than its TTL: until etcd deleted its key and another worker took the
  // lock. Retried if the pause missed the hold phase.
  int paused = -1;
  int64_t paused_token = 0, stop_ns = 0, cont_ns = 0;
  bool pause_in_hold = false;
  for (int attempt = 0; attempt < 4 && !pause_in_hold; ++attempt) {
    ASSERT_TRUE(wait_until([&] { return acquisitions() >= static_cast<std::size_t>(38 + 8 * attempt); }))
        << diagnostics();
    // A hold that started less than a quarter of its length ago.
    ASSERT_TRUE(wait_until([&] {
      const auto all = logs();
      const int64_t now = mono_ns();
      for (int i = 0; i < kWorkers; ++i) {
        const auto& l = all[i];
        if (l.acquired.empty() || workers[i].exited) continue;
        const auto [token, start] = l.acquired.back();
        const bool open = l.holds.empty() || l.holds.back().token != token || l.holds.back().start_ns != start;
        if (open && now - start < int64_t{kHoldMs} * 1'000'000 / 4) {
          ::kill(workers[i].pid, SIGSTOP);
          stop_ns = mono_ns();
          paused = i;
          paused_token = token;
          return true;
        }
      }
      return false;
    })) << diagnostics();
    event("SIGSTOP worker " + std::to_string(paused) + " holding token " + std::to_string(paused_token));
    // Its lease expires on the server: its key goes away.
    ASSERT_TRUE(wait_until([&] {
      auto r = client.get(kLock + "/", {.prefix = true}).timeout(2s).wait();
      if (!r.ok()) return false;
      return std::none_of(r->kvs.begin(), r->kvs.end(),
                          [&](const KeyValue& kv) { return kv.create_revision == paused_token; });
    })) << "the paused worker's lock key was never deleted\n"
        << diagnostics();
    event("paused holder's key deleted by etcd");
    // Someone else takes the lock while the paused one still "holds" it
    // (bounded: the others may have finished their iterations).
    const auto others_deadline = std::chrono::steady_clock::now() + 5s;
    const bool taken = wait_until([&] {
      if (std::chrono::steady_clock::now() > others_deadline) return true;
      const auto all = logs();
      for (int i = 0; i < kWorkers; ++i) {
        if (i != paused && !all[i].acquired.empty() && all[i].acquired.back().first > paused_token) return true;
      }
      return false;
    });
    ASSERT_TRUE(taken) << diagnostics();
    std::this_thread::sleep_for(100ms);
    cont_ns = mono_ns();
    ::kill(workers[paused].pid, SIGCONT);
    event("SIGCONT worker " + std::to_string(paused) + " after " + std::to_string((cont_ns - stop_ns) / 1'000'000) +
          " ms");
    // Did the pause land before its guarded write?
    ASSERT_TRUE(wait_until([&] {
      for (const auto& h : read_log(workers[paused].out, paused).holds) {
        if (h.token == paused_token && h.start_ns < stop_ns) return true;
      }
      return workers[paused].exited;
    })) << diagnostics();
    for (const auto& h : read_log(workers[paused].out, paused).holds) {
      if (h.token == paused_token && h.start_ns < stop_ns && h.write_ns > cont_ns) pause_in_hold = true;
    }
    if (!pause_in_hold) event("the pause missed the hold phase; again");
  }
  ASSERT_TRUE(pause_in_hold) << "could not pause a worker inside a hold\n" << diagnostics();

  // --- all workers finish ---------------------------------------------------
  ASSERT_TRUE(wait_until(reap)) << "workers still running at the test's bound\n" << diagnostics();
  event("all workers exited");
  for (int i = 0; i < kWorkers; ++i) {
    ASSERT_TRUE(WIFEXITED(workers[i].status) && WEXITSTATUS(workers[i].status) == 0)
        << "worker " << i << " status " << workers[i].status << "\n"
        << diagnostics();
  }

  // --- the checker ----------------------------------------------------------
  std::vector<Hold> holds;
  for (const auto& l : logs()) {
    EXPECT_EQ(l.holds.size(), static_cast<std::size_t>(kIterations));
    holds.insert(holds.end(), l.holds.begin(), l.holds.end());
  }
  std::sort(holds.begin(), holds.end(), [](const Hold& a, const Hold& b) { return a.start_ns < b.start_ns; });
  const auto describe = [](const Hold& h) {
    std::ostringstream s;
    s << "w" << h.worker << " token " << h.token << " [" << h.start_ns << ", " << h.end_ns << "] unlock " << h.unlock_ok
      << " write " << h.write_status << " lost " << h.lost_reported;
    return s.str();
  };

  // Tokens strictly increase in the order of acquisition. The one exception
  // is not a new hold: a worker whose unlock failed (its delete did not
  // go through) and whose key therefore still stood takes that same key again.
  int continuations = 0;
  for (std::size_t i = 1; i < holds.size(); ++i) {
    const Hold& a = holds[i - 1];
    const Hold& b = holds[i];
    if (a.token == b.token && a.worker == b.worker && !a.unlock_ok) {
      ++continuations;
      continue;
    }
    EXPECT_LT(a.token, b.token) << "tokens out of order:\n  " << describe(a) << "\n  " << describe(b);
  }

  // Overlaps in time only where the earlier hold reported its loss.
  int overlaps = 0, unexplained = 0;
  for (std::size_t i = 0; i < holds.size(); ++i) {
    for (std::size_t j = i + 1; j < holds.size() && holds[j].start_ns < holds[i].end_ns; ++j) {
      ++overlaps;
      if (!holds[i].loss_reported()) {
        ++unexplained;
        ADD_FAILURE() << "holds overlap without a reported loss:\n  " << describe(holds[i]) << "\n  "
                      << describe(holds[j]);
      }
    }
  }

  // The paused holder: loss reported, write after resuming refused.
  const auto paused_hold = std::find_if(holds.begin(), holds.end(), [&](const Hold& h) {
    return h.worker == paused && h.token == paused_token && h.start_ns < stop_ns;
  });
  ASSERT_NE(paused_hold, holds.end());
  EXPECT_TRUE(paused_hold->lost_reported) << describe(*paused_hold);
  EXPECT_FALSE(paused_hold->unlock_ok) << describe(*paused_hold);
  EXPECT_FALSE(paused_hold->write_ok) << describe(*paused_hold);
  EXPECT_EQ(paused_hold->write_status, "hold_lost") << describe(*paused_hold);
  EXPECT_GT(paused_hold->write_ns, cont_ns);

  // etcd's view: the log keys, and the history from revision 1.
  auto logged = client.get(kLock + "-log/", {.prefix = true}).timeout(10s).wait();
  ASSERT_TRUE(logged.ok()) << logged.status().to_string();
  std::map<int64_t, KeyValue> log_keys;  // token → key
  for (const auto& kv : logged->kvs) log_keys[std::stoll(kv.key.substr(kLock.size() + 5))] = kv;
  std::map<int64_t, const Hold*> by_token;
  for (const auto& h : holds) by_token[h.token] = &h;  // a continuation's last hold wins; both wrote the same key
  int writes_ok = 0, writes_refused = 0, writes_unknown = 0;
  for (const auto& h : holds) {
    const auto it = log_keys.find(h.token);
    if (h.write_ok) {
      ++writes_ok;
      ASSERT_NE(it, log_keys.end()) << "a successful guarded write is missing: " << describe(h);
      EXPECT_EQ(it->second.value, "w" + std::to_string(h.worker) + " " + std::to_string(h.token));
    } else if (h.write_status == "hold_lost") {
      ++writes_refused;
    } else {
      ++writes_unknown;
    }
  }
  for (const auto& [token, kv] : log_keys) {
    const auto h = by_token.find(token);
    ASSERT_NE(h, by_token.end()) << "a log key no hold wrote: " << kv.key;
    bool some_write_may_have_landed = false;
    for (const auto& x : holds) {
      if (x.token == token && x.write_status != "hold_lost") some_write_may_have_landed = true;
    }
    EXPECT_TRUE(some_write_may_have_landed) << "a refused guarded write landed: " << kv.key;
  }
  int64_t last_rev = 0, last_token = 0;
  for (const auto& [token, kv] : log_keys) {
    EXPECT_GT(kv.mod_revision, last_rev) << "the write of token " << token << " landed before the write of token "
                                         << last_token;
    last_rev = kv.mod_revision;
    last_token = token;
  }

  // Replay etcd's history: each log write landed while its token's key was
  // the lowest live lock key (the holder as etcd sees it).
  std::mutex hist_mu;
  std::vector<Event> history;
  bool history_done = false;
  const std::string end_key = kLock + "-zz-end";
  auto history_watch = client.watch(kLock, {.prefix = true, .start_revision = 1}, [&](Result<WatchResponse> r) {
    if (!r.ok()) return;
    std::lock_guard lock(hist_mu);
    for (auto& e : r->events) {
      if (e.kv.key == end_key) history_done = true;
      history.push_back(std::move(e));
    }
  });
  ASSERT_TRUE(client.put(end_key, "").timeout(10s).wait().ok());
  ASSERT_TRUE(wait_until([&] {
    std::lock_guard lock(hist_mu);
    return history_done;
  }));
  history_watch.cancel();
  std::map<std::string, int64_t> live;  // lock key → create revision
  std::set<int64_t> live_revs;
  std::set<int64_t> created;
  int history_writes = 0;
  {
    std::lock_guard lock(hist_mu);
    for (const auto& e : history) {
      const std::string& k = e.kv.key;
      if (k.rfind(kLock + "/", 0) == 0) {
        if (e.type == Event::Type::kPut) {
          if (!live.contains(k)) {
            live[k] = e.kv.create_revision;
            live_revs.insert(e.kv.create_revision);
            created.insert(e.kv.create_revision);
          }
        } else if (auto it = live.find(k); it != live.end()) {
          live_revs.erase(it->second);
          live.erase(it);
        }
      } else if (k.rfind(kLock + "-log/", 0) == 0 && e.type == Event::Type::kPut) {
        ++history_writes;
        const int64_t token = std::stoll(k.substr(kLock.size() + 5));
        EXPECT_TRUE(!live_revs.empty() && *live_revs.begin() == token)
            << "guarded write of token " << token << " landed at revision " << e.kv.mod_revision
            << " while the lowest live lock key was "
            << (live_revs.empty() ? std::string("none") : std::to_string(*live_revs.begin()));
      }
    }
  }
  for (const auto& h : holds) EXPECT_TRUE(created.contains(h.token)) << "no lock key was created at " << describe(h);

  const double duration = seconds_since_start();
  std::string summary;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "mutual exclusion: %zu holds, %d overlaps (%d unexplained), %d same-key continuations, max token "
      "%lld, guarded writes ok %d / refused %d / unknown %d, %d writes in etcd history, %.1f s\n",
      holds.size(), overlaps, unexplained, continuations,
      static_cast<long long>(holds.empty() ? 0
                                           : std::max_element(holds.begin(), holds.end(),
                                                              [](auto& a, auto& b) { return a.token < b.token; })
                                                 ->token),
      writes_ok, writes_refused, writes_unknown, history_writes, duration);
  summary += line;
  for (const auto& t : timeline) summary += "  " + t + "\n";
  std::fputs(summary.c_str(), stdout);
  std::fflush(stdout);
  for (int i = 0; i < kWorkers; ++i) {
    std::ifstream err(workers[i].err);
    for (std::string l; std::getline(err, l);) std::printf("  [w%d] %s\n", i, l.c_str());
  }
  EXPECT_GE(overlaps, 1) << "the pause should have produced an (explained) overlap";
  EXPECT_LT(duration, 90.0);
  if (!HasFailure()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  } else {
    cluster->mark_failed();
    std::printf("worker logs kept in %s\n", dir.c_str());
  }
#endif
}

}  // namespace
}  // namespace etcd::test
