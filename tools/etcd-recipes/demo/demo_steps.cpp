#include "demo_steps.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/inspect.h"
#include "etcd/recipes/priority_queue.h"
#include "etcd/recipes/queue.h"

namespace etcd_cli::demo {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) out.push_back(text.substr(at, nl - at));
  if (at < text.size()) out.push_back(text.substr(at));
  return out;
}

// "1.9 s", "722 ms": the time since `since`, for the narration.
std::string seconds_since(etcd::Deadline since) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(etcd::Clock::now() - since).count());
  return text;
}
std::string ms_since(etcd::Deadline since) {
  return cat(std::chrono::duration_cast<std::chrono::milliseconds>(etcd::Clock::now() - since).count(), " ms");
}

// Waits for a child of the scene to exit; fails the step if it does not
// in time or exits with anything but `expected`.
void expect_exit(Demo& d, ChildProcess& p, const std::string& name, int expected = 0) {
  auto code = p.wait(d.ctx.stop(), d.deadline() + 5s);
  if (!code) {
    if (d.ctx.stop().stop_requested()) throw Interrupted{};
    throw StepFailed(cat("process ", name, " did not finish in time"));
  }
  if (*code != expected) throw StepFailed(cat("process ", name, " exited ", *code, ", not ", expected));
}

// Reads what a child printed meanwhile; fails the step if it exited.
void still_running(Demo& d, ChildProcess& p, const std::string& name) {
  if (auto code = p.wait(d.ctx.stop(), etcd::Clock::now())) {
    throw StepFailed(cat("process ", name, " exited ", *code, " (it should still run)"));
  }
  if (d.ctx.stop().stop_requested()) throw Interrupted{};
}

bool present(Demo& d, const std::string& key) { return d.call(d.etcd().get(key), "get " + key).first() != nullptr; }

// The recipe NAME as `etcd-recipes inspect` reads it from its keys now.
std::optional<inspect::Recipe> inspect_recipe(Demo& d, const std::string& name) {
  etcd::GetOptions prefix;
  prefix.prefix = true;
  auto r = d.call(d.etcd().get(name + "/", prefix), "get " + name + "/");
  auto report = inspect::build_report(std::move(r.kvs), r.header.revision);
  for (auto& recipe : report.recipes) {
    if (recipe.name == name) return std::move(recipe);
  }
  return std::nullopt;
}

// The processes behind a recipe's holders or waiters: the recipes' CLI
// writes HOST:PID as the value of a contender's key.
std::string who(const inspect::Recipe& r, inspect::Role role, const std::map<pid_t, std::string>& names) {
  std::string out;
  for (const auto& e : r.entries) {
    if (e.role != role) continue;
    const auto colon = e.kv.value.rfind(':');
    std::string name = e.kv.value;
    if (colon != std::string::npos) {
      const auto it = names.find(static_cast<pid_t>(std::atoll(e.kv.value.c_str() + colon + 1)));
      if (it != names.end()) name = it->second;
    }
    out += (out.empty() ? "" : ", ") + name + " (token " + std::to_string(e.kv.create_revision) + ")";
  }
  return out;
}

// A command that runs until the file PATH exists: the scene decides when
// a holder is done, so that what it shows lasts as long as it needs, and
// no more.
std::vector<std::string> until_exists(const std::filesystem::path& path) {
  return {"sh", "-c", "until [ -e \"$0\" ]; do sleep 0.05; done", path.string()};
}

void create_file(const std::filesystem::path& path) {
  std::ofstream out(path);
  if (!out) throw StepFailed("cannot create " + path.string());
}

}  // namespace

// Rounds of three processes, and two threads of this one meanwhile, add to
// one counter at once. Each add is a transaction guarded by the value it
// read, retried after a conflict: each returns the value it committed, all
// are distinct, and the total is exact.
void counter_adds(Demo& d) {
  const std::string counter(names::kCounter);
  constexpr int kRounds = 5;
  constexpr int kProcesses = 3;
  constexpr int kThreads = 2;
  constexpr int kAddsPerThread = 10;
  constexpr int kTotal = kRounds * kProcesses + kThreads * kAddsPerThread;

  etcd::recipes::DistributedAtomicLong reader(d.etcd(), counter);
  const int64_t base = d.call(reader.get(), "counter get " + counter);
  struct Mine {
    std::mutex mutex;
    std::vector<int64_t> values;
    std::optional<std::string> error;
  } mine;
  std::vector<int64_t> values;
  {
    // Paced, so that they overlap the processes' adds.
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&mine, client = d.etcd(), counter, timeout = d.ctx.timeout(), stop = d.ctx.stop()] {
        etcd::recipes::DistributedAtomicLong c(client, counter);
        for (int k = 0; k < kAddsPerThread && sleep_for(20ms, stop); ++k) {
          auto r = c.increment().timeout(timeout).stop_token(stop).wait();
          std::lock_guard lock(mine.mutex);
          if (!r.ok()) {
            if (!mine.error) mine.error = r.status().to_string();
            return;
          }
          mine.values.push_back(*r);
        }
      });
    }
    const std::vector<std::string> add = {"counter", "add", counter, "1"};
    d.say(cat(kThreads, " threads of this process add 1 to ", counter, " ", kAddsPerThread,
              " times each (DistributedAtomicLong), while ", kRounds, " rounds of ", kProcesses,
              " processes run etcd-recipes ", shell_words(add), " at once"));
    // A process per add, each the demo's own child: an interruption stops
    // every one of them.
    for (int round = 1; round <= kRounds; ++round) {
      std::vector<ChildProcess> adders;
      for (int p = 0; p < kProcesses; ++p) adders.push_back(ChildProcess::spawn(d.self_argv(add)));
      std::string pids;
      std::string printed;
      for (auto& p : adders) {
        expect_exit(d, p, cat("pid ", p.pid()));
        const auto out = lines_of(p.output());
        if (out.size() != 1) throw StepFailed(cat("pid ", p.pid(), " printed ", out.size(), " lines"));
        values.push_back(std::atoll(out.front().c_str()));
        pids += cat(pids.empty() ? "" : ", ", p.pid());
        printed += cat(printed.empty() ? "" : ", ", out.front());
      }
      d.say(cat("round ", round, ": pids ", pids, " exited 0 and printed ", printed));
    }
  }
  if (d.ctx.stop().stop_requested()) throw Interrupted{};
  if (mine.error) throw StepFailed("an add of this process failed: " + *mine.error);

  d.say(cat("this process's threads committed ", mine.values.size(), " adds meanwhile"));
  values.insert(values.end(), mine.values.begin(), mine.values.end());
  std::sort(values.begin(), values.end());
  bool exact = values.size() == kTotal;
  for (size_t i = 0; exact && i < values.size(); ++i) exact = values[i] == base + static_cast<int64_t>(i) + 1;
  if (!exact) {
    throw StepFailed(cat("the ", values.size(), " adds did not return the values ", base + 1, "..", base + kTotal));
  }
  d.say(cat("all ", kTotal, " adds returned the value each committed: ", kTotal, " distinct values, exactly ", base + 1,
            " to ", base + kTotal, " (an add that lost a race read the new value and tried again)"));
  const auto printed = d.run_self({"counter", "get", counter});
  if (printed != std::to_string(base + kTotal)) {
    throw StepFailed(cat(counter, " holds ", printed, ", not ", base + kTotal));
  }
  d.say(cat(counter, " = ", printed, ": no add lost, none applied twice"));
}

// Two workers announce themselves with transient keys, each on a lease of
// its own (TTL 2 s). Another process cannot take a key that is present. A
// SIGKILLed worker's key outlives it until its lease expires; a worker
// that exits cleanly takes its key with it at once.
void transient_keys(Demo& d) {
  const std::string base(names::kWorkers);
  const std::string k1 = base + "/w1";
  const std::string k2 = base + "/w2";
  Processes processes(d);
  auto& w1 = processes.start("w1", {"transient", k1, "busy with job-7", "--ttl", "2"});
  auto& w2 = processes.start("w2", {"transient", k2, "idle", "--ttl", "2"});
  until(
      d, [&] { return present(d, k1) && present(d, k2); }, "both workers' keys exist");
  d.say(cat("both keys exist while their workers run: ", k1, " = \"busy with job-7\", ", k2, " = \"idle\""));

  const std::vector<std::string> steal = {"transient", k1, "mine now", "--ttl", "2"};
  auto other = ChildProcess::spawn(d.self_argv(steal), true);
  d.say(cat("pid ", other.pid(), " started: etcd-recipes ", shell_words(steal)));
  expect_exit(d, other, cat("pid ", other.pid()), 1);
  const auto said = lines_of(other.output());
  d.say(cat("pid ", other.pid(), " exited 1, nothing written: ", said.empty() ? std::string() : said.front()));
  const auto kept = d.call(d.etcd().get(k1), "get " + k1);
  if (!kept.first() || kept.first()->value != "busy with job-7") throw StepFailed(k1 + " was overwritten");

  w1.kill_now();
  const auto killed_at = etcd::Clock::now();
  if (!present(d, k1)) throw StepFailed(k1 + " went at the kill, before its lease expired");
  d.say("worker w1 SIGKILLed: it cannot delete its key, which stays until its lease expires (TTL 2 s)");
  until(
      d, [&] { return !present(d, k1); }, k1 + " expires");
  d.say(cat(k1, " gone ", seconds_since(killed_at), " after the kill: etcd expired w1's lease and the key with it"));

  const auto stopped_at = etcd::Clock::now();
  w2.terminate();
  expect_exit(d, w2, "w2");
  if (present(d, k2)) throw StepFailed(k2 + " outlived its owner's clean exit");
  d.say(cat("worker w2 SIGTERMed: it deleted its key and revoked its lease, then exited 0 (", ms_since(stopped_at),
            "): ", k2, " was gone at once"));
}

// A queue: two consumer processes wait on it; a producer process pushes
// three items in one transaction; each consumer takes exactly one; this
// process takes the one left. A priority queue serves its most
// urgent item first, whatever the order of arrival.
void queues(Demo& d) {
  const std::string queue(names::kQueue);
  Processes processes(d);
  std::vector<std::pair<std::string, ChildProcess*>> consumers;
  for (const char* name : {"Q1", "Q2"}) {
    consumers.emplace_back(name, &processes.start(name, {"queue", "pop", queue, "--timeout", "20s"}));
  }
  d.run_self({"queue", "push", queue, "job-a", "job-b", "job-c"});
  std::vector<std::string> taken;
  std::string told;
  for (auto& [name, p] : consumers) {
    expect_exit(d, *p, name);
    auto out = lines_of(p->output());
    if (out.size() != 1) throw StepFailed(cat("process ", name, " printed ", out.size(), " items"));
    taken.push_back(out.front());
    told += cat(told.empty() ? "" : ", ", name, " took ", out.front());
  }
  std::vector<std::string> left = {"job-a", "job-b", "job-c"};
  for (const auto& t : taken) {
    const auto it = std::find(left.begin(), left.end(), t);
    if (it == left.end()) throw StepFailed(cat("a consumer took ", t, ", which was not in the queue (or twice)"));
    left.erase(it);
  }
  // Two consumers racing for the head: the one that loses takes the next
  // item (queue.h: FIFO within a window under contention), never the same.
  d.say(told + ": each item went to exactly one of the consumers");
  etcd::recipes::DistributedQueue q(d.etcd(), queue);
  const auto size = d.call(q.size(), "queue size " + queue);
  const auto last = d.call(q.try_dequeue(), "take from " + queue);
  if (size != 1 || last != left.front()) throw StepFailed(cat(queue, " did not hold ", left.front(), " alone"));
  d.say(cat("this process took the item left, ", *last, "; ", queue, " is empty: none lost, none taken twice"));

  const std::string urgent(names::kPriorityQueue);
  etcd::recipes::DistributedPriorityQueue pq(d.etcd(), urgent);
  const std::pair<const char*, int64_t> arrivals[] = {{"nightly-backup", 200}, {"resize-disk", 10}, {"page-oncall", 0}};
  for (const auto& [value, priority] : arrivals) d.call(pq.enqueue(value, priority), "enqueue on " + urgent);
  d.say(cat("priority queue ", urgent,
            ": enqueued nightly-backup (priority 200), resize-disk (10), page-oncall (0, the most urgent)"));
  std::string order;
  for (int i = 0; i < 3; ++i) {
    auto v = d.call(pq.try_dequeue(), "take from " + urgent);
    order += cat(order.empty() ? "" : ", ", v.value_or("(none)"));
  }
  if (order != "page-oncall, resize-disk, nightly-backup") throw StepFailed("the priority queue served " + order);
  d.say("served in priority order: " + order);
}

// Three processes want one of two permits: two hold, the third waits until
// one is given back. Two readers share a read-write lock; a writer waits
// until both have left. The holders' commands end when the scene says so.
void semaphore_and_rwlock(Demo& d) {
  std::map<pid_t, std::string> pids;
  {
    const std::string sem(names::kSemaphore);
    const auto release = d.cluster->dir() / "permits-done";
    Processes processes(d);
    std::vector<std::pair<std::string, ChildProcess*>> all;
    for (const char* name : {"S1", "S2", "S3"}) {
      std::vector<std::string> args = {"semaphore", sem, "2", "--"};
      for (auto& a : until_exists(release)) args.push_back(a);
      all.emplace_back(name, &processes.start(name, args));
      pids[all.back().second->pid()] = name;
    }
    std::optional<inspect::Recipe> state;
    until(
        d,
        [&] {
          state = inspect_recipe(d, sem);
          return state && inspect::count(*state, inspect::Role::kHolder) == 2 &&
                 inspect::count(*state, inspect::Role::kWaiting) == 1;
        },
        "two processes hold permits and one waits");
    d.say(cat("inspect reads ", sem, ": 2 of ", state->permits.value_or(0), " permits held by ",
              who(*state, inspect::Role::kHolder, pids), "; ", who(*state, inspect::Role::kWaiting, pids), " waits"));
    create_file(release);
    for (auto& [name, p] : all) expect_exit(d, *p, name);
    d.say("the holders' commands ended and gave their permits back; the third took one in turn; all exited 0");
  }
  {
    const std::string rw(names::kRwLock);
    const auto release = d.cluster->dir() / "readers-done";
    Processes processes(d);
    std::vector<std::pair<std::string, ChildProcess*>> readers;
    for (const char* name : {"R1", "R2"}) {
      std::vector<std::string> args = {"rwlock", rw, "read", "--"};
      for (auto& a : until_exists(release)) args.push_back(a);
      readers.emplace_back(name, &processes.start(name, args));
      pids[readers.back().second->pid()] = name;
    }
    std::optional<inspect::Recipe> state;
    until(
        d,
        [&] {
          state = inspect_recipe(d, rw);
          return state && inspect::count(*state, inspect::Role::kHolder) == 2;
        },
        "both readers hold the read lock");
    auto& writer = processes.start("W", {"rwlock", rw, "write", "--", "true"});
    pids[writer.pid()] = "W";
    until(
        d,
        [&] {
          state = inspect_recipe(d, rw);
          return state && inspect::count(*state, inspect::Role::kWaiting) == 1;
        },
        "the writer waits");
    d.say(cat("inspect reads ", rw, ": read-locked by ", who(*state, inspect::Role::kHolder, pids), " at once; ",
              who(*state, inspect::Role::kWaiting, pids), " waits to write"));
    still_running(d, writer, "W");
    create_file(release);
    for (auto& [name, p] : readers) expect_exit(d, *p, name);
    expect_exit(d, writer, "W");
    d.say("the readers left; then W held the write lock alone, ran its command and exited 0");
  }
}

// With three members: the raft leader member is SIGKILLed while a process
// holds a lock, another leads an election and this process adds to a
// counter. The two others elect a new raft leader, the clients go on with
// them, and the recipes carry on: the lock and the leadership are kept
// (their leases are renewed through the members left), and no add is lost
// or doubled.
void member_failover(Demo& d) {
  auto& cluster = *d.cluster;
  const std::string lock(names::kLock);
  const std::string election(names::kElection);
  const std::string counter(names::kCounter);
  Processes processes(d);
  auto& holder = processes.start("H", {"lock", lock, "--ttl", "5"});
  auto& candidate = processes.start("L", {"elect", election, "--value", "node-L", "--ttl", "5"});
  etcd::recipes::LeaderObserver observer(d.etcd(), election);
  observer.start();
  d.call(observer.wait_initialized(), "observe " + election);
  until(
      d,
      [&] {
        still_running(d, holder, "H");
        return lines_of(holder.output()).size() >= 2;
      },
      "H holds " + lock);
  const auto held = lines_of(holder.output());
  const std::string key = held[0];
  const int64_t token = std::atoll(held[1].c_str());
  until(
      d, [&] { return observer.current() && observer.current()->value == "node-L"; }, "node-L leads");
  const auto leading = *observer.current();

  // The adds run on a thread of their own, every 20 ms, each with the
  // demo's timeout: the thread only stops between two adds, so that every
  // add's outcome is known when the scene counts them.
  struct Tally {
    std::mutex mutex;
    std::vector<std::pair<int64_t, etcd::Deadline>> values;
    std::optional<std::string> error;
    size_t count() {
      std::lock_guard guard(mutex);
      return values.size();
    }
  };
  auto tally = std::make_shared<Tally>();
  etcd::recipes::DistributedAtomicLong reader(d.etcd(), counter);
  const int64_t base = d.call(reader.get(), "counter get " + counter);
  std::jthread adder(
      [tally, client = d.etcd(), counter, timeout = d.ctx.timeout(), interrupt = d.ctx.stop()](std::stop_token stop) {
        etcd::recipes::DistributedAtomicLong c(client, counter);
        while (!stop.stop_requested() && sleep_for(20ms, stop)) {
          auto r = c.increment().timeout(timeout).stop_token(interrupt).wait();
          std::lock_guard guard(tally->mutex);
          if (!r.ok()) {
            tally->error = r.status().to_string();
            return;
          }
          tally->values.emplace_back(*r, etcd::Clock::now());
        }
      });
  until(
      d, [&] { return tally->count() >= 5; }, "this process adds to " + counter);

  const int old_leader = cluster.wait_for_leader(std::chrono::seconds(5));
  d.say(cat("H holds ", lock, " (token ", token, "), node-L leads ", election, " (term ", leading.term,
            "), this process adds 1 to ", counter, " every 20 ms; the raft leader is m", old_leader, " (pid ",
            cluster.pid(old_leader), ", ", cluster.endpoint(old_leader), ")"));
  cluster.kill(old_leader);
  const auto killed_at = etcd::Clock::now();
  const size_t adds_before = tally->count();
  d.note("etcd", cat("m", old_leader, " killed; electing"));
  d.say(cat("SIGKILL etcd member m", old_leader, ", the raft leader"));
  int new_leader = -1;
  until(
      d,
      [&] {
        const auto l = cluster.leader(std::chrono::milliseconds(200));
        if (l && *l != old_leader) new_leader = *l;
        return new_leader >= 0;
      },
      "the other members elect a raft leader");
  d.note("etcd", cat("m", old_leader, " down; raft leader m", new_leader));
  d.say(cat("m", new_leader, " is the raft leader ", ms_since(killed_at), " after the kill"));

  until(
      d, [&] { return tally->count() >= adds_before + 10 || tally->error.has_value(); }, "the adds go on");
  {
    std::lock_guard l(tally->mutex);
    if (tally->error) throw StepFailed("an add failed: " + *tally->error);
    const auto first =
        std::find_if(tally->values.begin(), tally->values.end(), [&](const auto& v) { return v.second > killed_at; });
    d.say(cat("the adds went on through the members left: the first one after the kill committed ",
              std::chrono::duration_cast<std::chrono::milliseconds>(first->second - killed_at).count(),
              " ms after it"));
  }
  still_running(d, holder, "H");
  still_running(d, candidate, "L");
  const auto now_held = d.call(d.etcd().get(key), "get " + key);
  if (!now_held.first() || now_held.first()->create_revision != token) throw StepFailed("H lost " + lock);
  const auto now_leading = observer.current();
  if (!now_leading || now_leading->key != leading.key) throw StepFailed("node-L lost the leadership of " + election);
  d.say(cat("H still holds ", lock, " with the same key and token ", token, ", node-L still leads (term ",
            now_leading->term, "): their sessions kept their leases alive through the members left"));

  cluster.restart(old_leader);
  cluster.wait_healthy(std::chrono::seconds(10));
  d.note("etcd", cat("3 members up; raft leader m", new_leader));
  d.say(cat("etcd member m", old_leader, " restarted (pid ", cluster.pid(old_leader),
            ") with its data: it rejoined as a follower and caught up"));

  adder.request_stop();
  adder.join();
  if (tally->error) throw StepFailed("an add failed: " + *tally->error);
  std::vector<int64_t> values;
  for (const auto& v : tally->values) values.push_back(v.first);
  std::sort(values.begin(), values.end());
  const auto total = d.call(reader.get(), "counter get " + counter);
  bool exact = total == base + static_cast<int64_t>(values.size());
  for (size_t i = 0; exact && i < values.size(); ++i) exact = values[i] == base + static_cast<int64_t>(i) + 1;
  if (!exact) throw StepFailed(cat(counter, " is ", total, " after ", values.size(), " adds from ", base));
  d.say(cat(values.size(), " adds, ", values.size() - adds_before, " of them after the kill: ", counter, " went from ",
            base, " to ", total, ", every add exactly once"));
  holder.terminate();
  expect_exit(d, holder, "H");
  candidate.terminate();
  expect_exit(d, candidate, "L");
  d.say("H and L SIGTERMed: H released the lock, L resigned, both exited 0");
}

}  // namespace etcd_cli::demo
