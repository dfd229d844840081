// demo: starts a private etcd and runs a short scripted scenario against
// it, several processes included, with a live view of the recipes' state.
//
// The scenario is the kSteps table at the bottom of the file: a step is a
// title and a function over the shared Demo state (demo.h). New scenes are
// new functions (here or in demo_steps.cpp) plus a row in that table.

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "demo.h"
#include "demo_steps.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/path_children_cache.h"
#include "etcd/recipes/service_provider.h"
#include "process.h"

namespace etcd_cli::demo {

// --- the shared state --------------------------------------------------------

// Events of the demo's watch, kept until a step expects them.
class EventLog {
 public:
  void add(const std::vector<etcd::Event>& events) {
    std::lock_guard lock(mutex_);
    events_.insert(events_.end(), events.begin(), events.end());
    ++generation_;
    changed_.notify_all();
  }
  void fail(etcd::Status status) {
    std::lock_guard lock(mutex_);
    error_ = std::move(status);
    ++generation_;
    changed_.notify_all();
  }
  // The next `type` event on `key`; events before it are dropped.
  etcd::Event expect(etcd::Event::Type type, const std::string& key, etcd::Deadline deadline, std::stop_token stop) {
    std::unique_lock lock(mutex_);
    for (;;) {
      for (auto it = events_.begin(); it != events_.end(); ++it) {
        if (it->type == type && it->kv.key == key) {
          etcd::Event found = *it;
          events_.erase(events_.begin(), it + 1);
          return found;
        }
      }
      if (error_) throw Failure("watch demo/", *error_);
      auto seen = generation_;
      if (!changed_.wait_until(lock, stop, deadline, [&] { return generation_ != seen; })) {
        if (stop.stop_requested()) throw Interrupted{};
        throw StepFailed(
            cat("the watch saw no ", type == etcd::Event::Type::kPut ? "PUT" : "DELETE", " of ", key, " in time"));
      }
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<etcd::Event> events_;
  std::optional<etcd::Status> error_;
  uint64_t generation_ = 0;
};

std::string shell_words(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out += ' ';
    out += a.find_first_of(" \t\"'") == std::string::npos && !a.empty() ? a : "\"" + a + "\"";
  }
  return out;
}

Demo::Demo(Context& c, Options o)
    : ctx(c),
      options(std::move(o)),
      screen(std::make_shared<Screen>(choose_view_mode(options.view) == ViewMode::kPanel, color_allowed())),
      progress(screen),
      events(std::make_shared<EventLog>()) {}

etcd::Event Demo::expect(etcd::Event::Type type, const std::string& key) {
  return events->expect(type, key, deadline(), ctx.stop());
}

std::vector<std::string> Demo::self_argv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {self, "--endpoints", cluster->endpoints_csv(), "--timeout", ctx.global().timeout};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::string Demo::run_self(const std::vector<std::string>& args) {
  auto child = ChildProcess::spawn(self_argv(args));
  say(cat("pid ", child.pid(), " started: etcd-recipes ", shell_words(args)));
  auto code = child.wait(ctx.stop(), deadline() + 5s);
  if (!code) {
    if (ctx.stop().stop_requested()) throw Interrupted{};
    throw StepFailed(cat("pid ", child.pid(), " (etcd-recipes ", shell_words(args), ") did not finish in time"));
  }
  if (*code != 0) throw StepFailed(cat("pid ", child.pid(), " (etcd-recipes ", shell_words(args), ") exited ", *code));
  std::string out = child.output();
  while (!out.empty() && out.back() == '\n') out.pop_back();
  say(cat("pid ", child.pid(), " exited 0 and printed \"", out, "\""));
  return out;
}

void Demo::show_keys() {
  if (!client) return;
  etcd::GetOptions prefix;
  prefix.prefix = true;
  auto r = call(etcd().get("demo/", prefix), "get demo/");
  std::string line = "keys now:";
  for (const auto& kv : r.kvs) line += " " + kv.key + "=" + kv.value;
  if (r.kvs.empty()) line += " (none)";
  if (line != last_keys) say(line);
  last_keys = std::move(line);
}

namespace {

std::string describe(const etcd::Event& ev) {
  return ev.type == etcd::Event::Type::kPut ? "PUT " + ev.kv.key + " = " + ev.kv.value : "DELETE " + ev.kv.key;
}

// --- the steps ---------------------------------------------------------------

// The live view's rows: the recipes of the scenes below, by name.
std::vector<ViewRow> view_rows() {
  return {
      {"leader", std::string(names::kElection), false, "term"},
      {"lock", std::string(names::kLock)},
      {"semaphore", std::string(names::kSemaphore)},
      {"rwlock", std::string(names::kRwLock)},
      {"queue", std::string(names::kQueue)},
      {"priority queue", std::string(names::kPriorityQueue)},
      {"work queue", std::string(names::kWorkQueue)},
      {"barrier", std::string(names::kBarrier)},
      {"cache", std::string(names::kConfig), true},
      {"services", std::string(names::kServices)},
      {"counter", std::string(names::kCounter)},
      {"transient", std::string(names::kWorkers), true},
  };
}

void start_view(Demo& d) {
  const ViewMode mode = choose_view_mode(d.options.view);
  if (mode == ViewMode::kOff) return;
  d.view = std::make_unique<LiveView>(d.etcd(), std::string(names::kPrefix), view_rows(), mode, d.progress);
  d.view->start(d.deadline(), d.ctx.stop());
  d.say(
      mode == ViewMode::kPanel
          ? "live view: the panel below shows the recipes' state under demo/ as it changes"
          : "live view: a `view:` line shows the recipes' state under demo/ whenever it changed (at most 4 a second)");
}

// --dashboard: `etcd-recipes dashboard demo` as a child of the demo, on the
// address given; the scenes then run while the page shows them.
void start_dashboard(Demo& d) {
  const auto address = parse_host_port(d.options.dashboard);
  if (!address) throw StepFailed("--dashboard " + d.options.dashboard + ": not HOST:PORT");
  d.dashboard.emplace(ChildProcess::spawn(d.self_argv({"dashboard", std::string(names::kPrefix), "--listen",
                                                       d.options.dashboard})));
  // Serving once its port takes connections (it reads demo/ first).
  until(
      d,
      [&] {
        if (d.dashboard->exited()) throw StepFailed("the dashboard did not start (its error is above)");
        return port_open(address->host, address->port);
      },
      "the dashboard serves");
  const std::string host = address->host.find(':') != std::string::npos ? "[" + address->host + "]" : address->host;
  d.say(cat("dashboard (pid ", d.dashboard->pid(), "): open http://", host, ":", address->port,
            "/ to watch the scenes"));
}

void start_etcd(Demo& d) {
  const int n = d.options.members;
  // --etcd, else $ETCD_RECIPES_ETCD, else etcd on PATH.
  const std::string binary =
      d.options.etcd_binary.empty() ? etcd::testing::default_etcd_binary() : d.options.etcd_binary;
  const auto version = etcd::testing::etcd_version(binary);
  d.say(cat("starting ", n, " etcd ", version.text, n == 1 ? " member" : " members", " (", binary,
            ") on free loopback ports..."));
  etcd::testing::EtcdClusterOptions options;
  options.members = n;
  options.etcd_binary = binary;
  d.cluster = etcd::testing::EtcdCluster::start(std::move(options));
  std::string pids;
  for (int i = 0; i < n; ++i) pids += cat(i == 0 ? "" : ", ", d.cluster->pid(i));
  std::string endpoints;
  for (int i = 0; i < n; ++i) endpoints += cat(i == 0 ? "" : ", ", d.cluster->endpoint(i));
  d.say(
      cat(n == 1 ? "etcd pid " : "etcd pids ", pids, " serving ", endpoints, ", data in ", d.cluster->dir().string()));
  etcd::ClientOptions client_options;
  // Every member: the client fails over between them when one goes.
  client_options.endpoints = d.cluster->endpoints();
  client_options.default_timeout = d.ctx.timeout();
  d.client.emplace(std::move(client_options));
  start_view(d);
  if (!d.options.dashboard.empty()) start_dashboard(d);
}

void put_and_get(Demo& d) {
  auto put = d.call(d.etcd().put("demo/greeting", "hello"), "put demo/greeting");
  d.revision = put.header.revision;
  d.say(cat("put demo/greeting = hello: store revision is now ", d.revision));
  auto get = d.call(d.etcd().get("demo/greeting"), "get demo/greeting");
  if (!get.first() || get.first()->value != "hello") throw StepFailed("get demo/greeting did not return \"hello\"");
  d.say(cat("get demo/greeting: \"", get.first()->value, "\" (version ", get.first()->version, ", created at revision ",
            get.first()->create_revision, ")"));
}

void start_watch(Demo& d) {
  // Anchored at the revision after our last write: nothing in between can
  // be missed, however late the watch gets established.
  etcd::WatchOptions options;
  options.prefix = true;
  options.start_revision = d.revision + 1;
  d.watcher = d.etcd().watch("demo/", options, [events = d.events, progress = d.progress](auto r) {
    if (!r.ok()) {
      progress.say("  watch: ended with " + r.status().to_string());
      events->fail(std::move(r).status());
      return;
    }
    for (const auto& ev : r->events)
      progress.say(cat("  watch: ", describe(ev), " (revision ", ev.kv.mod_revision, ")"));
    events->add(r->events);
  });
  if (!d.watcher.wait_created(d.deadline())) throw StepFailed("the server did not confirm the watch");
  d.say(cat("watching every key under demo/ from revision ", d.revision + 1));
}

void create_if_absent(Demo& d) {
  auto attempt = [&](const std::string& value) {
    auto txn = etcd::Txn()
                   .when(etcd::Compare::absent("demo/owner"))
                   .then(etcd::Op::put("demo/owner", value))
                   .otherwise(etcd::Op::get("demo/owner"));
    return d.call(d.etcd().txn(txn), "txn on demo/owner");
  };
  auto first = attempt("first");
  if (!first.succeeded) throw StepFailed("the first create-if-absent of demo/owner failed");
  d.revision = first.header.revision;
  d.say("txn 1  if demo/owner absent then put demo/owner=first else get: the compare held, put done");
  d.expect(etcd::Event::Type::kPut, "demo/owner");

  auto second = attempt("second");
  if (second.succeeded) throw StepFailed("the second create-if-absent overwrote demo/owner");
  const auto& existing = second.responses.at(0).get();
  if (existing.kvs.empty() || existing.kvs.front().value != "first") {
    throw StepFailed("the else branch did not read demo/owner=first");
  }
  d.say("txn 2  same with demo/owner=second: the compare failed, the else branch read demo/owner=first");
}

void another_process_writes(Demo& d) {
  auto printed = d.run_self({"kv", "put", "demo/from-child", "hello from another process"});
  auto ev = d.expect(etcd::Event::Type::kPut, "demo/from-child");
  if (std::to_string(ev.kv.mod_revision) != printed) {
    throw StepFailed(cat("the child printed revision ", printed, " but the watch saw ", ev.kv.mod_revision));
  }
  d.say(cat("this process's watch saw the child's write at the revision the child printed (", printed, ")"));
  auto owner = d.run_self({"kv", "get", "demo/owner"});
  if (owner != "first") throw StepFailed("the child read demo/owner=" + owner + ", expected first");
}

void kept_lease_keeps_key(Demo& d) {
  constexpr auto kTtl = 2s;
  d.lease = d.call(d.etcd().lease(kTtl), "grant a lease");
  const auto id = d.lease.id();
  etcd::PutOptions with_lease;
  with_lease.lease = id;
  d.call(d.etcd().put("demo/session", "alive", with_lease), "put demo/session");
  d.say(cat("lease ", lease_hex(id), " granted with TTL ", d.lease.ttl().count(),
            "s and kept alive by this process; put demo/session on it"));
  d.expect(etcd::Event::Type::kPut, "demo/session");
  for (int second = 1; second <= 3; ++second) {
    d.pause(1s);
    auto get = d.call(d.etcd().get("demo/session"), "get demo/session");
    if (!get.first()) throw StepFailed("demo/session vanished although its lease was kept alive");
    auto ttl = d.call(d.etcd().lease_time_to_live(id), "lease time-to-live");
    d.say(
        cat(second, "s later (TTL ", kTtl.count(), "s): demo/session still there, the lease has ", ttl.ttl, "s left"));
  }
}

void revoke_lease(Demo& d) {
  const auto id = d.lease.id();
  d.call(d.lease.revoke(), "revoke the lease");
  d.say(cat("revoked lease ", lease_hex(id)));
  auto ev = d.expect(etcd::Event::Type::kDelete, "demo/session");
  d.say(cat("the watch saw demo/session deleted at revision ", ev.kv.mod_revision, ": the key went with its lease"));
  // The recipes below write many keys each; one line per key would bury
  // their story. The live view (a cache of demo/) summarizes them instead.
  d.watcher.cancel();
  d.say(d.view ? "watch cancelled: from here on the live view follows the keys under demo/"
               : "watch cancelled: from here on each step tells what its keys did");
}

void cluster_status(Demo& d) {
  for (int i = 0; i < d.cluster->size(); ++i) {
    const auto endpoint = d.cluster->endpoint(i);
    auto s = d.call(d.etcd().status(endpoint), "status " + endpoint);
    if (s.leader == 0) throw StepFailed(cat("member m", i, " reports no raft leader"));
    d.say(cat(endpoint, " (m", i, "): etcd ", s.version, ", member ", member_hex(s.header.member_id), ", leader ",
              member_hex(s.leader), s.leader == s.header.member_id ? " (itself)" : "", ", raft term ", s.raft_term,
              ", raft index ", s.raft_index, ", db size ", human_bytes(s.db_size)));
    if (s.leader == s.header.member_id && d.cluster->size() > 1) {
      d.note("etcd", cat(d.cluster->size(), " members up; raft leader m", i));
    }
  }
}

// One `etcd-recipes lock` process of the lock handover, and what its
// command printed so far.
struct Contender {
  Contender(std::string n, ChildProcess p) : name(std::move(n)), process(std::move(p)) {}

  std::string name;
  ChildProcess process;
  size_t seen = 0;    // bytes of output already parsed
  int64_t token = 0;  // set once its command printed "holds TOKEN KEY"
  std::string key;
  bool command_done = false;  // its command printed "releasing"
  std::optional<int> exit_code;

  // Reads what the process printed meanwhile (waits up to ~25 ms).
  void poll(std::stop_token stop) {
    if (!exit_code) {
      exit_code = process.wait(stop, etcd::Clock::now() + 25ms);
      if (stop.stop_requested()) throw Interrupted{};
    }
    const std::string& out = process.output();
    for (size_t nl; (nl = out.find('\n', seen)) != std::string::npos; seen = nl + 1) {
      std::istringstream line(out.substr(seen, nl - seen));
      std::string word;
      line >> word;
      if (word == "holds") line >> token >> key;
      if (word == "releasing") command_done = true;
    }
  }
};

// Two processes contend for one lock: the second waits for the first, and
// its fencing token is larger.
void lock_handover(Demo& d) {
  const std::string lock(names::kLock);
  const std::string script = "echo holds $ETCD_RECIPES_FENCING_TOKEN $ETCD_RECIPES_LOCK_KEY; sleep 1; echo releasing";
  std::optional<Contender> a;
  std::optional<Contender> b;
  // However the step ends: SIGTERM, which `lock` forwards to its command
  // before it releases and exits (SIGKILL if that takes too long).
  struct StopBoth {
    std::optional<Contender>& a;
    std::optional<Contender>& b;
    ~StopBoth() {
      for (auto* c : {&b, &a}) {
        if (*c) (*c)->process.terminate();
      }
    }
  } stop_both{a, b};

  auto start = [&](std::optional<Contender>& c, std::string name) {
    c.emplace(name, ChildProcess::spawn(d.self_argv({"lock", lock, "--", "sh", "-c", script})));
    d.say(cat("process ", name, " (pid ", c->process.pid(), ") started: etcd-recipes lock ", lock, " -- sh -c '",
              script, "'"));
  };
  // Polls both until `done()`; checks on the way that they never overlap.
  auto until = [&](auto done, std::string_view what) {
    const auto deadline = d.deadline() + 5s;
    for (;;) {
      // B before A: whatever B printed, what A printed before it is read too.
      if (b) b->poll(d.ctx.stop());
      if (a) a->poll(d.ctx.stop());
      if (b && b->token != 0 && !a->command_done) {
        throw StepFailed(cat("process B holds ", lock, " while process A's command still runs"));
      }
      for (auto* c : {&a, &b}) {
        if (*c && (*c)->exit_code && *(*c)->exit_code != 0) {
          throw StepFailed(cat("process ", (*c)->name, " exited ", *(*c)->exit_code));
        }
      }
      if (done()) return;
      if (etcd::Clock::now() >= deadline) throw StepFailed(cat("timed out waiting until ", what));
    }
  };
  auto contenders = [&] {
    etcd::GetOptions prefix;
    prefix.prefix = true;
    return d.call(d.etcd().get(lock + "/", prefix), "get " + lock + "/").kvs;
  };

  start(a, "A");
  until([&] { return a->token != 0; }, "process A holds " + lock);
  d.say(cat("process A holds ", lock, " (fencing token ", a->token, ", key ", a->key, ")"));

  start(b, "B");
  std::string b_key;
  until(
      [&] {
        if (a->command_done) return true;
        for (const auto& kv : contenders()) {
          if (kv.key != a->key) b_key = kv.key;
        }
        return !b_key.empty();
      },
      "process B queues for " + lock);
  if (!b_key.empty()) {
    d.say(cat("process B waiting: its key ", b_key, " queues behind A's (the oldest key holds the lock)"));
  } else {
    d.say("process B was not queued yet when A finished: it will not have to wait");
  }

  until([&] { return a->exit_code.has_value(); }, "process A exits");
  d.say("process A's command finished; A released " + lock + " and exited 0");
  until([&] { return b->token != 0; }, "process B holds " + lock);
  if (b->token <= a->token) {
    throw StepFailed(cat("fencing tokens did not increase: A had ", a->token, ", B has ", b->token));
  }
  d.say(cat("process B holds ", lock, " now (fencing token ", b->token, " > A's ", a->token, ", key ", b->key, ")"));
  until([&] { return b->exit_code.has_value(); }, "process B exits");
  d.say("process B's command finished; B released " + lock + " and exited 0");
}

// One `etcd-recipes workqueue work` process of the work-queue scene, and
// what it and its commands printed so far (stderr merged into stdout).
struct WorkerProcess {
  WorkerProcess(std::string n, ChildProcess p) : name(std::move(n)), process(std::move(p)) {}

  struct Start {
    std::string job;
    int attempt = 0;
    etcd::Deadline at{};
  };

  std::string name;
  ChildProcess process;
  size_t seen = 0;
  std::map<std::string, std::string> job_of;  // item id -> job
  std::vector<Start> starts;
  std::optional<std::string> working_on;  // the job its command runs now
  int acked = 0;
  std::optional<int> exit_code;
  bool killed = false;

  // Reads what the process printed meanwhile (waits up to ~25 ms) and
  // narrates it: its command's "starts JOB ID ATTEMPT" and the worker's own
  // report lines ("... item ID attempt N: RESULT (T s)").
  void poll(const Demo& d) {
    if (!exit_code && !killed) {
      exit_code = process.wait(d.ctx.stop(), etcd::Clock::now() + 25ms);
      if (d.ctx.stop().stop_requested()) throw Interrupted{};
    }
    const std::string& out = process.output();
    for (size_t nl; (nl = out.find('\n', seen)) != std::string::npos; seen = nl + 1) {
      const std::string line = out.substr(seen, nl - seen);
      std::istringstream words(line);
      std::string word;
      words >> word;
      if (word == "starts") {
        Start s;
        std::string id;
        words >> s.job >> id >> s.attempt;
        s.at = etcd::Clock::now();
        job_of[id] = s.job;
        working_on = s.job;
        starts.push_back(s);
        d.say(cat("worker ", name, " starts ", s.job, " (attempt ", s.attempt, ")"));
        continue;
      }
      const auto item = line.find(": item ");
      if (item == std::string::npos) continue;
      std::istringstream report(line.substr(item + 7));
      std::string id, attempt_word, attempt;
      report >> id >> attempt_word >> attempt;
      std::string rest;
      std::getline(report, rest);
      const auto job = job_of.contains(id) ? job_of[id] : id;
      if (rest.find("acked") != std::string::npos) ++acked;
      if (working_on == job) working_on.reset();
      d.say(cat("worker ", name, ": ", job, rest));
    }
  }
};

// Two workers share a work queue; one is SIGKILLed in the middle of a job,
// which comes back to the other once the dead worker's lease expires (the
// visibility timeout), and nothing is lost.
void work_queue_crash(Demo& d) {
  const std::string queue(names::kWorkQueue);
  const std::string visibility = "2";
  // $0 is the worker's name; the job's value comes on standard input.
  const std::string script = "job=$(cat); echo starts $job $ETCD_RECIPES_ITEM_ID $ETCD_RECIPES_ATTEMPT; sleep 1.5";
  d.run_self({"workqueue", "push", queue, "job-1", "job-2", "job-3", "job-4"});
  d.say(cat("4 jobs in the work queue ", queue, " (one transaction); each stays until a worker acks it"));

  std::optional<WorkerProcess> a;
  std::optional<WorkerProcess> b;
  // However the step ends: SIGTERM, on which `work` stops its command and
  // gives its job back at once.
  struct StopBoth {
    std::optional<WorkerProcess>& a;
    std::optional<WorkerProcess>& b;
    ~StopBoth() {
      for (auto* w : {&b, &a}) {
        if (*w) (*w)->process.terminate();
      }
    }
  } stop_both{a, b};
  auto start = [&](std::optional<WorkerProcess>& w, const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"workqueue", "work", queue, "--visibility", visibility};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "sh", "-c", script, name});
    w.emplace(name, ChildProcess::spawn(d.self_argv(args), true));
    d.say(cat("worker ", name, " (pid ", w->process.pid(), ") started: etcd-recipes ", shell_words(args)));
  };
  auto until = [&](auto done, std::string_view what) {
    const auto deadline = etcd::Clock::now() + 20s;
    for (;;) {
      if (a) a->poll(d);
      if (b) b->poll(d);
      for (auto* w : {&a, &b}) {
        if (*w && (*w)->exit_code && *(*w)->exit_code != 0) {
          throw StepFailed(cat("worker ", (*w)->name, " exited ", *(*w)->exit_code));
        }
      }
      if (done()) return;
      if (etcd::Clock::now() >= deadline) throw StepFailed(cat("timed out waiting until ", what));
    }
  };

  start(a, "A", {});
  until([&] { return a->working_on.has_value(); }, "worker A starts a job");
  start(b, "B", {"--idle-exit", "1500ms"});
  until([&] { return b->working_on.has_value(); }, "worker B starts a job");

  const std::string lost_job = *a->working_on;
  const pid_t a_pid = a->process.pid();
  a->process.kill_now();
  a->killed = true;
  const auto killed_at = etcd::Clock::now();
  d.say(cat("SIGKILL worker A (pid ", a_pid, ") in the middle of ", lost_job,
            ": its command dies with it; the job stays claimed until A's lease expires (--visibility ", visibility,
            "s), then comes back in its place in line"));

  // The claim of the killed worker's job goes when its lease expires.
  std::string lost_claim;
  for (const auto& [id, job] : a->job_of) {
    if (job == lost_job) lost_claim = queue + "/claims/" + id;
  }
  bool claim_gone = false;
  until(
      [&] {
        if (!claim_gone && !d.call(d.etcd().get(lost_claim), "get " + lost_claim).first()) {
          claim_gone = true;
          char after[32];
          std::snprintf(after, sizeof after, "%.1f s",
                        std::chrono::duration<double>(etcd::Clock::now() - killed_at).count());
          d.say(cat("worker A's lease expired ", after, " after the kill: etcd deleted its claim on ", lost_job,
                    ", which is ready again, first in line"));
        }
        return std::any_of(b->starts.begin(), b->starts.end(), [&](const auto& s) { return s.job == lost_job; });
      },
      "worker B gets " + lost_job);
  const auto& again =
      *std::find_if(b->starts.begin(), b->starts.end(), [&](const auto& s) { return s.job == lost_job; });
  if (again.attempt < 2) throw StepFailed(cat(lost_job, " came back with attempt ", again.attempt));
  char after[32];
  std::snprintf(after, sizeof after, "%.1f s", std::chrono::duration<double>(again.at - killed_at).count());
  d.say(cat(lost_job, " was redelivered to worker B at its next receive, ", after, " after the kill (attempt ",
            again.attempt, ")"));

  until([&] { return b->exit_code.has_value(); }, "worker B has nothing left to do and exits");
  d.say("worker B found no job for 1.5 s (--idle-exit) and exited 0");
  etcd::GetOptions count;
  count.prefix = true;
  count.count_only = true;
  const auto left = d.call(d.etcd().get(queue + "/items/", count), "count " + queue + "/items/").count;
  const auto dead = d.call(d.etcd().get(queue + "/dead/", count), "count " + queue + "/dead/").count;
  if (left != 0 || dead != 0) throw StepFailed(cat(left, " jobs left in ", queue, ", ", dead, " dead letters"));
  if (a->acked + b->acked < 3) throw StepFailed(cat("only ", a->acked + b->acked, " acks were reported"));
  d.say(cat("the queue is empty, no dead letters: every job acked (", lost_job,
            " twice delivered, once done), none lost"));
}

std::string leader_name(const std::optional<etcd::recipes::LeaderInfo>& l) {
  return l ? cat("\"", l->value, "\" (term ", l->term, ")") : std::string("none");
}

// Two processes campaign; the leader is SIGKILLed (it cannot resign): the
// other takes over once the dead leader's lease (TTL 2 s) expires, with a
// larger term token.
void leader_failover(Demo& d) {
  const std::string election(names::kElection);
  Processes processes(d);
  etcd::recipes::LeaderObserver observer(d.etcd(), election);
  observer.start();
  d.call(observer.wait_initialized(), "observe " + election);
  auto& a = processes.start("A", {"elect", election, "--value", "node-A", "--ttl", "2"});
  until(
      d, [&] { return observer.current() && observer.current()->value == "node-A"; }, "node-A leads");
  processes.start("B", {"elect", election, "--value", "node-B", "--ttl", "2"});
  const auto first = *observer.current();
  d.say(cat("the observer sees leader ", leader_name(first), "; node-B waits in line"));
  a.kill_now();
  const auto killed_at = etcd::Clock::now();
  d.say("process A SIGKILLed: it cannot resign; its leadership ends when its lease (TTL 2 s) expires");
  until(
      d, [&] { return observer.current() && observer.current()->value == "node-B"; }, "node-B takes over");
  const auto second = *observer.current();
  if (second.term <= first.term) throw StepFailed("the term token did not increase");
  d.say(cat("node-B leads ",
            std::chrono::duration_cast<std::chrono::milliseconds>(etcd::Clock::now() - killed_at).count(),
            " ms after the kill: ", leader_name(second), ", a larger term than node-A's ", first.term));
}

// Three processes wait at a barrier for 3 parties: the first two stay
// blocked until the third arrives, then all three go on.
void barrier_group(Demo& d) {
  const std::string barrier(names::kBarrier);
  Processes processes(d);
  std::vector<ChildProcess*> parties;
  for (const char* name : {"P1", "P2"}) {
    parties.push_back(&processes.start(name, {"barrier", "wait", barrier, "--parties", "3", "--timeout", "20s"}));
  }
  etcd::GetOptions count;
  count.prefix = true;
  count.count_only = true;
  until(
      d, [&] { return d.call(d.etcd().get(barrier + "/parties/", count), "count parties").count == 2; },
      "two parties wait");
  d.pause(300ms);
  for (auto* p : parties) {
    if (p->wait(d.ctx.stop(), etcd::Clock::now())) throw StepFailed("a party went on before the third arrived");
  }
  d.say("two parties arrived and wait (still blocked 300 ms later)");
  parties.push_back(&processes.start("P3", {"barrier", "wait", barrier, "--parties", "3", "--timeout", "20s"}));
  const auto third_at = etcd::Clock::now();
  for (auto* p : parties) {
    auto code = p->wait(d.ctx.stop(), d.deadline());
    if (!code) throw StepFailed("a party did not go on");
    if (*code != 0) throw StepFailed(cat("a party exited ", *code));
  }
  d.say(cat("the third arrived: all three went on (exit 0) within ",
            std::chrono::duration_cast<std::chrono::milliseconds>(etcd::Clock::now() - third_at).count(), " ms"));
}

// A cache in this process follows what other processes write under a
// prefix: added, updated, removed, in order.
void cache_follows(Demo& d) {
  const std::string path(names::kConfig);
  etcd::recipes::PathChildrenCache cache(d.etcd(), path);
  auto log = std::make_shared<std::pair<std::mutex, std::vector<std::string>>>();
  auto sub = cache.on_event([log](const etcd::recipes::ChildEvent<std::string>& e) {
    using T = etcd::recipes::ChildEvent<std::string>::Type;
    std::string line = e.type == T::kAdded     ? "ADDED " + e.name + "=" + *e.current->value
                       : e.type == T::kUpdated ? "UPDATED " + e.name + "=" + *e.current->value
                       : e.type == T::kRemoved ? "REMOVED " + e.name
                                               : std::string();
    if (line.empty()) return;
    std::lock_guard lock(log->first);
    log->second.push_back(std::move(line));
  });
  cache.start();
  d.call(cache.wait_initialized(), "start a cache of " + path);
  auto seen = [&](size_t n) {
    std::lock_guard lock(log->first);
    return log->second.size() >= n;
  };
  d.run_self({"kv", "put", path + "/limit", "10"});
  d.run_self({"kv", "put", path + "/limit", "20"});
  d.run_self({"kv", "del", path + "/limit"});
  until(
      d, [&] { return seen(3); }, "the cache saw three changes");
  std::lock_guard lock(log->first);
  const std::vector<std::string> expected = {"ADDED limit=10", "UPDATED limit=20", "REMOVED limit"};
  if (log->second != expected) throw StepFailed("the cache's events were not the three changes in order");
  d.say("the cache's listener saw, in order: " + log->second[0] + ", " + log->second[1] + ", " + log->second[2]);
}

// Two processes register instances of a service; a provider in this
// process picks among them; one process is SIGKILLed (it cannot
// unregister), and once its lease expires the provider stops picking it.
void service_leaves_provider(Demo& d) {
  const std::string service = "demo-api";
  struct Instance {
    std::string id;
    std::string port;
    std::optional<ChildProcess> process;
  };
  Instance instances[] = {{"api-1", "9001", {}}, {"api-2", "9002", {}}};
  struct StopAll {
    Instance (&all)[2];
    ~StopAll() {
      for (auto& i : all) {
        if (i.process) i.process->terminate();
      }
    }
  } stop_all{instances};
  const std::string base(names::kServices);
  for (auto& i : instances) {
    const std::vector<std::string> args = {"discovery", "register",  service,  "--base", base,    "--id", i.id,
                                           "--address", "127.0.0.1", "--port", i.port,   "--ttl", "2"};
    i.process.emplace(ChildProcess::spawn(d.self_argv(args)));
    d.say(cat("process ", i.id, " (pid ", i.process->pid(), ") started: etcd-recipes ", shell_words(args)));
  }
  etcd::recipes::ServiceProviderOptions provider_options;
  provider_options.base_path = base;
  etcd::recipes::ServiceProvider provider(d.etcd(), service, std::move(provider_options));
  d.call(provider.wait_initialized(), "start a provider of " + service);
  auto until = [&](auto done, std::string_view what) { demo::until(d, done, what); };
  auto picks = [&](int n) {
    std::string out;
    for (int k = 0; k < n; ++k) {
      auto p = provider.pick();
      out += (out.empty() ? "" : ", ") + (p ? p->id : std::string("none"));
    }
    return out;
  };
  until([&] { return provider.candidates().size() == 2; }, "both instances are registered");
  d.say(cat("the provider (round robin) picks: ", picks(4)));

  instances[1].process->kill_now();
  const auto killed_at = etcd::Clock::now();
  d.say(cat("process api-2 SIGKILLed: it cannot unregister; its registration expires with its lease (TTL 2 s)"));
  until([&] { return provider.candidates().size() == 1; }, "api-2's registration expires");
  d.say(cat("the cache saw api-2 removed ",
            std::chrono::duration_cast<std::chrono::milliseconds>(etcd::Clock::now() - killed_at).count(),
            " ms after the kill; the provider picks: ", picks(4)));
  if (picks(100).find("api-2") != std::string::npos) throw StepFailed("the provider picked a removed instance");

  instances[0].process->terminate();
  until([&] { return provider.candidates().empty(); }, "api-1 unregisters");
  d.say("process api-1 SIGTERMed: it unregistered at once; the provider has none to pick: " + picks(1));
}

struct Step {
  std::string_view title;
  void (*run)(Demo&);
  // A step of the key-value part: the keys under demo/ are listed after it
  // (the recipes' keys are the live view's business).
  bool kv = false;
  // Runs only on a cluster of at least this many members (--members).
  int members = 1;
};

constexpr Step kSteps[] = {
    {"start a private etcd", start_etcd, true},
    {"put a key and read it back", put_and_get, true},
    {"watch the demo/ prefix", start_watch, true},
    {"transaction: create-if-absent succeeds once, then fails", create_if_absent, true},
    {"other processes write and read; the watch sees their write", another_process_writes, true},
    {"a kept-alive lease keeps its key past the TTL", kept_lease_keeps_key, true},
    {"revoking the lease deletes its key", revoke_lease, true},
    {"cluster status", cluster_status},
    {"lock handover between processes", lock_handover},
    {"a semaphore admits two processes of three; a read-write lock shares reading, not writing", semaphore_and_rwlock},
    {"leader election: the leader is killed, the other candidate takes over", leader_failover},
    {"a barrier releases a group of three processes together", barrier_group},
    {"a cache follows what other processes write", cache_follows},
    {"queues: each item to exactly one consumer; a priority queue serves the most urgent first", queues},
    {"a work queue survives a worker killed mid-job", work_queue_crash},
    {"a counter: processes and threads add at once, the total is exact", counter_adds},
    {"transient keys: present while their owner lives, gone when it dies or exits", transient_keys},
    {"service discovery: a killed instance leaves the provider's picks", service_leaves_provider},
    {"etcd member failover: the raft leader member is killed while recipes run", member_failover, false, 3},
};

// Stops everything the demo started and says so; the destructors do the
// work (the cluster's kills and reaps etcd and removes its directory).
void tear_down(std::unique_ptr<Demo> demo) {
  const Progress progress = demo->progress;
  // The view first: its last state is shown before the cleanup's lines.
  if (demo->view) demo->view->stop();
  if (!demo->cluster) return;
  std::string pids;
  for (int i = 0; i < demo->cluster->size(); ++i) {
    if (demo->cluster->pid(i) > 0) pids += cat(pids.empty() ? "" : ", ", demo->cluster->pid(i));
  }
  const bool several = pids.find(',') != std::string::npos;
  const auto dir = demo->cluster->dir();
  demo.reset();
  std::error_code ec;
  progress.say(cat("cleanup: etcd ", several ? "pids " : "pid ", pids, " stopped, ", dir.string(),
                   std::filesystem::exists(dir, ec) ? " LEFT BEHIND" : " removed"));
}

int run_demo(Context& ctx, Options options) {
  auto demo = std::make_unique<Demo>(ctx, std::move(options));
  const Progress progress = demo->progress;
  std::vector<const Step*> steps;
  for (const auto& s : kSteps) {
    if (demo->options.members >= s.members) steps.push_back(&s);
  }
  const int total = static_cast<int>(steps.size());
  std::string failed_step;
  std::string error;
  for (int i = 0; i < total && failed_step.empty(); ++i) {
    if (ctx.stop().stop_requested()) break;
    progress.say(cat("step ", i + 1, "/", total, ": ", steps[i]->title));
    try {
      steps[i]->run(*demo);
      if (steps[i]->kv) demo->show_keys();
    } catch (const Interrupted&) {
      break;
    } catch (const std::exception& e) {
      // A call cancelled by the stop surfaces as an error: not the step's fault.
      if (ctx.stop().stop_requested()) break;
      failed_step = steps[i]->title;
      error = e.what();
      progress.say(cat("FAILED: ", error));
    }
  }
  if (failed_step.empty() && !ctx.stop().stop_requested() && !demo->options.linger.empty()) {
    progress.say(cat("the scenes are done; ", demo->dashboard ? "etcd and the dashboard stay" : "etcd stays",
                     " up for ", demo->options.linger, " (Ctrl-C ends it sooner)"));
    if (const auto linger = parse_duration(demo->options.linger)) {
      (void)sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(*linger), ctx.stop());
    }
  }
  tear_down(std::move(demo));

  if (!failed_step.empty()) {
    std::cerr << kProgram << ": demo: step \"" << failed_step << "\" failed: " << error << std::endl;
    return kExitFailed;
  }
  if (ctx.stop().stop_requested()) {
    const int sig = stop_signal();
    const char* name = sigabbrev_np(sig);
    progress.say(name ? cat("demo interrupted by SIG", name) : cat("demo interrupted by signal ", sig));
    return kExitSignalBase + sig;
  }
  progress.say("demo finished OK");
  return kExitOk;
}

}  // namespace
}  // namespace etcd_cli::demo

namespace etcd_cli {

void add_demo_command(Commands& commands) {
  auto options = std::make_shared<demo::Options>();
  auto* cmd = commands.root().add_subcommand(
      "demo",
      "Start a private etcd in a temporary directory and run a short scripted scenario against it, every recipe "
      "family in several processes, with a live view of their state (needs no --endpoints; cleans up on exit and "
      "on SIGINT/SIGTERM)");
  cmd->add_option("--etcd", options->etcd_binary,
                  "The etcd server binary (a path, or a name searched on PATH); default: $ETCD_RECIPES_ETCD, else "
                  "etcd on PATH");
  cmd->add_option("--members", options->members,
                  "etcd members: 1, or 3 to also kill the raft leader member while recipes run")
      ->check(CLI::IsMember({1, 3}))
      ->capture_default_str();
  cmd->add_flag(
      "--no-view", [options](int64_t) { options->view = false; },
      "No live view: neither the panel (on a terminal) nor the `view:` lines (elsewhere)");
  cmd->add_option("--dashboard", options->dashboard,
                  "Also serve the dashboard of demo/ (etcd-recipes dashboard) on HOST:PORT, to watch the scenes in a "
                  "browser; with --linger to look around afterwards")
      ->expected(0, 1)
      ->default_str("127.0.0.1:8080");
  cmd->add_option("--linger", options->linger,
                  "After the scenes, keep the cluster (and the dashboard) up for this long before cleaning up (e.g. "
                  "10m); Ctrl-C ends it sooner")
      ->check(duration_validator());
  commands.on_run(cmd, [options](Context& ctx) { return demo::run_demo(ctx, *options); });
}

}  // namespace etcd_cli
