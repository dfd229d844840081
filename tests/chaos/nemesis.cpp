#include "nemesis.h"

#include <condition_variable>
#include <mutex>

namespace chaos {

using namespace std::chrono_literals;

Nemesis::Nemesis(etcd::testing::EtcdCluster& cluster, std::vector<etcd::testing::FaultProxy*> proxies,
                 etcd::Client admin, History& history, uint64_t seed)
    : cluster_(cluster), proxies_(std::move(proxies)), admin_(std::move(admin)), history_(history), rng_(seed) {}

bool Nemesis::rest(std::chrono::milliseconds d, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lk(mu);
  return !cv.wait_for(lk, stop, d, [] { return false; });
}

int Nemesis::any_member() { return std::uniform_int_distribution<int>(0, cluster_.size() - 1)(rng_); }

int Nemesis::leader_or_any() {
  auto l = cluster_.leader(500ms);
  return l ? *l : any_member();
}

void Nemesis::note(Fault f) {
  history_.add("nemesis", "info", f.kind, f.detail + " (" + std::to_string(f.end - f.start).substr(0, 4) + " s)");
  schedule_.push_back(std::move(f));
}

void Nemesis::run(Clock::time_point until, std::stop_token stop) {
  while (Clock::now() < until && !stop.stop_requested()) {
    // A restart that failed is tried again before the next fault, so that
    // at most one member is ever down.
    for (int i = 0; i < cluster_.size(); ++i) {
      if (cluster_.is_running(i)) continue;
      try {
        cluster_.restart(i);
      } catch (const std::exception& e) {
        history_.add("nemesis", "fail", "restart", e.what());
      }
    }
    one(stop);
    rest(std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 1500)(rng_)), stop);
  }
}

void Nemesis::one(std::stop_token stop) {
  const auto d = std::chrono::milliseconds(std::uniform_int_distribution<int>(500, 4000)(rng_));
  // Weights: kill-leader 2, pause 2, isolate 2, one-way 1, blackhole 1,
  // blackhole-then-reset 1, cut 1, slow link 1, compaction 1.
  static const std::vector<std::string> kinds = {"kill-leader", "kill-leader", "pause",     "pause",
                                                 "isolate",     "isolate",     "one-way",   "link-blackhole",
                                                 "link-blackhole-reset",       "link-cut",  "link-slow",
                                                 "compaction"};
  const std::string kind = kinds[std::uniform_int_distribution<size_t>(0, kinds.size() - 1)(rng_)];
  Fault f;
  f.kind = kind;
  f.start = history_.now();
  try {
    if (kind == "kill-leader") {
      const int m = leader_or_any();
      f.detail = "m" + std::to_string(m);
      history_.add("nemesis", "invoke", kind, f.detail);
      cluster_.kill(m);
      rest(d, stop);
      cluster_.restart(m);
    } else if (kind == "pause") {
      const int m = any_member();
      f.detail = "m" + std::to_string(m);
      history_.add("nemesis", "invoke", kind, f.detail);
      cluster_.pause(m);
      rest(d, stop);
      cluster_.resume(m);
    } else if (kind == "isolate") {
      const int m = std::uniform_int_distribution<int>(0, 1)(rng_) ? leader_or_any() : any_member();
      f.detail = "m" + std::to_string(m) + " from the others";
      history_.add("nemesis", "invoke", kind, f.detail);
      cluster_.isolate(m);
      rest(d, stop);
      cluster_.heal();
    } else if (kind == "one-way") {
      const int m = leader_or_any();
      std::vector<int> others;
      for (int i = 0; i < cluster_.size(); ++i) {
        if (i != m) others.push_back(i);
      }
      const bool from = std::uniform_int_distribution<int>(0, 1)(rng_) != 0;
      f.detail = from ? "m" + std::to_string(m) + " -> others dropped" : "others -> m" + std::to_string(m) + " dropped";
      history_.add("nemesis", "invoke", kind, f.detail);
      if (from) {
        cluster_.partition_one_way({m}, others);
      } else {
        cluster_.partition_one_way(others, {m});
      }
      rest(d, stop);
      cluster_.heal();
    } else if (kind == "compaction") {
      auto r = admin_.get("/chaos/").timeout(5s).wait();
      if (r.ok()) {
        const int64_t rev = r->header.revision;
        auto c = admin_.compact(rev).timeout(5s).wait();
        f.detail = "at revision " + std::to_string(rev) + (c.ok() ? "" : " failed: " + c.status().to_string());
      } else {
        f.detail = "skipped: " + r.status().to_string();
      }
      history_.add("nemesis", "invoke", kind, f.detail);
    } else {
      const int m = any_member();
      auto* p = proxies_[static_cast<size_t>(m)];
      f.detail = "clients <-> m" + std::to_string(m);
      if (kind == "link-slow") {
        const int delay = std::uniform_int_distribution<int>(50, 400)(rng_);
        f.detail += " delayed " + std::to_string(delay) + " ms";
        history_.add("nemesis", "invoke", kind, f.detail);
        p->set_delay(std::chrono::milliseconds(delay));
      } else {
        history_.add("nemesis", "invoke", kind, f.detail);
        if (kind == "link-blackhole") p->blackhole();
        if (kind == "link-blackhole-reset") p->blackhole_then_reset();
        if (kind == "link-cut") p->cut();
      }
      rest(d, stop);
      p->restore();
    }
  } catch (const std::exception& e) {
    f.detail += " — error: " + std::string(e.what()).substr(0, 300);
  }
  f.end = history_.now();
  note(std::move(f));
}

void Nemesis::heal_all() {
  try {
    cluster_.heal();
  } catch (const std::exception& e) {
    history_.add("nemesis", "fail", "heal", e.what());
  }
  for (auto* p : proxies_) p->restore();
  for (int i = 0; i < cluster_.size(); ++i) {
    if (cluster_.is_paused(i)) cluster_.resume(i);
    for (int attempt = 0; attempt < 3 && !cluster_.is_running(i); ++attempt) {
      try {
        cluster_.restart(i);
      } catch (const std::exception& e) {
        history_.add("nemesis", "fail", "restart", e.what());
      }
    }
  }
  cluster_.wait_healthy(60s);
  history_.add("nemesis", "info", "healed", "every member up, no partition, every link passing");
}

}  // namespace chaos
