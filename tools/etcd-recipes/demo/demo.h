// What the demo's steps share: the Demo state they run over, and helpers to
// start `etcd-recipes` child processes and to wait for conditions. The
// steps are in demo.cpp (the scenario's table at its bottom) and
// demo_steps.cpp; the live view in demo_view.h.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.h"
#include "demo_view.h"
#include "etcd/testing/etcd_cluster.h"
#include "process.h"

namespace etcd_cli::demo {

using namespace std::chrono_literals;

// A stop was requested: unwind the scenario straight to the cleanup.
struct Interrupted {};

// The scenario did not go as it should.
class StepFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Events of the demo's watch, kept until a step expects them (demo.cpp).
class EventLog;

// ARGS as a shell would read them back (for the narration).
std::string shell_words(const std::vector<std::string>& args);

// The names the scenes use: all under demo/, which the live view follows.
namespace names {
inline constexpr std::string_view kPrefix = "demo";
inline constexpr std::string_view kLock = "demo/lock";
inline constexpr std::string_view kElection = "demo/leader";
inline constexpr std::string_view kSemaphore = "demo/permits";
inline constexpr std::string_view kRwLock = "demo/rwlock";
inline constexpr std::string_view kQueue = "demo/queue";
inline constexpr std::string_view kPriorityQueue = "demo/urgent";
inline constexpr std::string_view kWorkQueue = "demo/jobs";
inline constexpr std::string_view kBarrier = "demo/barrier";
inline constexpr std::string_view kConfig = "demo/config";
inline constexpr std::string_view kServices = "demo/services";
inline constexpr std::string_view kCounter = "demo/hits";
inline constexpr std::string_view kWorkers = "demo/workers";
}  // namespace names

struct Options {
  std::string etcd_binary;  // empty: $ETCD_RECIPES_ETCD, else etcd on PATH
  int members = 1;
  bool view = true;
  std::string dashboard;  // HOST:PORT to serve `etcd-recipes dashboard demo` on; empty: none
  std::string linger;     // keep the cluster (and dashboard) up this long after the scenes; empty: not at all
};

struct Demo {
  Demo(Context& c, Options o);

  Context& ctx;
  Options options;
  std::shared_ptr<Screen> screen;
  Progress progress;
  std::string self = self_executable();
  // Members are destroyed in reverse: lease, watch and view before the
  // client, the client before the etcd it talks to.
  std::unique_ptr<etcd::testing::EtcdCluster> cluster;
  // `etcd-recipes dashboard demo` (--dashboard), stopped before the cluster.
  std::optional<ChildProcess> dashboard;
  std::optional<etcd::Client> client;
  std::unique_ptr<LiveView> view;
  std::shared_ptr<EventLog> events;
  etcd::Watcher watcher;
  etcd::Lease lease;
  int64_t revision = 0;   // the store revision after this process's last write
  std::string last_keys;  // the last "keys now" line shown

  void say(std::string_view text) const { progress.say("  " + std::string(text)); }
  etcd::Client& etcd() { return *client; }
  etcd::Deadline deadline() const { return etcd::Clock::now() + ctx.timeout(); }

  template <class T>
  T call(etcd::Call<T> c, std::string_view what) {
    return check(std::move(c).stop_token(ctx.stop()).wait(), what);
  }
  void pause(std::chrono::milliseconds d) const {
    if (!sleep_for(d, ctx.stop())) throw Interrupted{};
  }
  // The next `type` event on `key` the demo's watch saw (see EventLog).
  etcd::Event expect(etcd::Event::Type type, const std::string& key);
  // A row the demo fills itself in the live view (if there is one).
  void note(const std::string& label, std::string text) {
    if (view) view->note(label, std::move(text));
  }

  // `etcd-recipes --endpoints ... --timeout ... ARGS...`: this program
  // against the private etcd.
  std::vector<std::string> self_argv(const std::vector<std::string>& args) const;
  // Runs `etcd-recipes ARGS...` as a separate process against the private
  // etcd and returns what it printed (without the final newline).
  std::string run_self(const std::vector<std::string>& args);
  // Every key under demo/ whenever that changed, so the reader sees the
  // state grow and shrink.
  void show_keys();
};

// Background `etcd-recipes ARGS...` processes of a scene, terminated
// (SIGTERM, which each passes on and cleans up after) however it ends.
class Processes {
 public:
  explicit Processes(Demo& d) : d_(d) {}
  Processes(const Processes&) = delete;
  Processes& operator=(const Processes&) = delete;
  ~Processes() {
    for (auto it = all_.rbegin(); it != all_.rend(); ++it) it->second.terminate();
  }
  ChildProcess& start(const std::string& name, const std::vector<std::string>& args) {
    auto& p = all_.emplace_back(name, ChildProcess::spawn(d_.self_argv(args))).second;
    d_.say(cat("process ", name, " (pid ", p.pid(), ") started: etcd-recipes ", shell_words(args)));
    return p;
  }

 private:
  Demo& d_;
  std::deque<std::pair<std::string, ChildProcess>> all_;
};

// Polls `done` every 20 ms until it holds, or fails the step at the
// deadline.
template <class Done>
void until(Demo& d, Done done, std::string_view what) {
  const auto deadline = d.deadline() + 5s;
  while (!done()) {
    if (etcd::Clock::now() >= deadline) throw StepFailed(cat("timed out waiting until ", what));
    d.pause(20ms);
  }
}

}  // namespace etcd_cli::demo
