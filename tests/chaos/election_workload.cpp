// The election: three LeaderLatch candidates, each leader writing the
// fenced register with its term while it leads and now and then resigning
// (so that there are many terms), each waiting one now and then
// withdrawing from the line and standing again, and a LeaderObserver.
//
// Checker:
//   * at most one leader per term: no term token is reported (on_is_leader)
//     to two candidates;
//   * terms increase: the observer never sees a term older than one it saw
//     before, and every accepted register write carries the highest term so
//     far (fenced_register.h);
//   * two leaders never write interleaved: no leader's write is refused as
//     stale while its term was intact;
//   * progress: once every fault has healed, a leader writes within the
//     quiet period.
#include <map>
#include <mutex>
#include <set>

#include "etcd/recipes/election.h"
#include "fenced_register.h"
#include "workload.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;

class ElectionWorkload : public Workload {
 public:
  std::string name() const override { return "election"; }

  void setup(Context& ctx) override { reg_.init(*ctx.admin); }

  void start(Context& ctx) override {
    History& h = *ctx.history;
    observer_.emplace(ctx.clients[0], kName);
    observer_subs_.push_back(observer_->on_change([this, &h](const std::optional<etcd::recipes::LeaderInfo>& l) {
      if (!l) return;
      const int64_t at = h.add("election.observer", "info", "leader", l->value + " term " + std::to_string(l->term));
      std::lock_guard lk(mu_);
      ++counts_["observed-changes"];
      if (l->term < last_observed_) {
        found_.push_back({"election",
                          "the observer saw term " + std::to_string(l->term) + " (" + l->value + ") after term " +
                              std::to_string(last_observed_),
                          at});
      }
      last_observed_ = std::max(last_observed_, l->term);
    }));
    observer_->start();
    for (int p = 0; p < 3; ++p) {
      threads_.spawn([this, &ctx, p](std::stop_token stop) { candidate(ctx, p, stop); });
    }
  }

  void stop() override {
    threads_.stop();
    observer_subs_.clear();
    if (observer_) observer_->close();
  }

  std::vector<Violation> check(Context& ctx) override {
    std::vector<Violation> out;
    std::lock_guard lk(mu_);
    out.insert(out.end(), found_.begin(), found_.end());
    if (healed_at_ >= 0 && last_write_ < healed_at_) {
      out.push_back({"election", "no leader wrote in the quiet period after every fault had healed", -1});
    }
    for (const auto& [term, who] : leaders_) {
      if (who.size() > 1) {
        std::string names;
        for (const auto& w : who) names += " " + w;
        out.push_back({"election", "term " + std::to_string(term) + " had " + std::to_string(who.size()) +
                                       " leaders:" + names, -1});
      }
    }
    auto v = reg_.check_log("election", reg_.accepted(*ctx.admin));
    out.insert(out.end(), v.begin(), v.end());
    return out;
  }

  std::map<std::string, int64_t> counts() const override {
    std::lock_guard lk(mu_);
    auto c = counts_;
    c["terms"] = static_cast<int64_t>(leaders_.size());
    return c;
  }

 private:
  static constexpr const char* kName = "/chaos/election/leader";

  // Resigns (leadership, or the place in line) and stands again.
  void withdraw(etcd::recipes::LeaderLatch& latch, History& h, const std::string& proc, std::mt19937_64& rng) {
    auto r = latch.resign().timeout(3s).wait();
    h.add(proc, r.ok() ? "ok" : "fail", "resign", r.ok() ? (*r ? "was leading" : "was not") : r.status().to_string());
    {
      std::lock_guard lk(mu_);
      ++counts_[r.ok() && *r ? "resigned" : "withdrew"];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 200)(rng)));
    try {
      latch.start();
    } catch (const std::exception& e) {
      h.add(proc, "fail", "start", e.what());
    }
  }

  void candidate(Context& ctx, int p, std::stop_token stop) {
    std::mt19937_64 rng(ctx.seed * 31 + static_cast<uint64_t>(p));
    const std::string proc = "election." + std::to_string(p);
    History& h = *ctx.history;
    etcd::recipes::RecipeOptions options;
    options.client_id = proc;
    options.session_ttl = 2s;
    etcd::recipes::LeaderLatch latch(ctx.clients[static_cast<size_t>(p) % ctx.clients.size()], kName, proc, options);
    auto on_leader = latch.on_is_leader([this, &h, proc](int64_t term) {
      h.add(proc, "ok", "leader", "term " + std::to_string(term));
      std::lock_guard lk(mu_);
      leaders_[term].insert(proc);
      ++counts_["became-leader"];
    });
    auto on_not = latch.on_not_leader([&h, proc](const etcd::Status& why) {
      h.add(proc, "info", "not-leader", why.ok() ? "resigned" : why.to_string());
    });
    latch.start();
    auto participants = [&] {
      auto r = latch.participants().timeout(2s).wait();
      if (!r.ok()) return std::string("? ") + r.status().to_string();
      std::string out;
      for (const auto& c : *r) out += " " + c.value + "@" + std::to_string(c.term);
      return out;
    };
    auto next_report = Clock::now() + 5s;
    auto next_withdraw = Clock::now() + 1s;
    int64_t seq = 0;
    while (!stop.stop_requested()) {
      if (Clock::now() >= next_report) {
        // Every 5 s: the candidates as etcd has them, and this one's state.
        next_report = Clock::now() + 5s;
        h.add(proc, "info", "candidates", participants() + (latch.is_held() ? " (leading)" : ""));
      }
      etcd::recipes::Hold term = latch.hold();
      if (!term.valid() || !term.is_held()) {
        std::this_thread::sleep_for(20ms);
        // Now and then a waiting candidate withdraws and comes back: the
        // one behind it must then wait on the next in line, not lead.
        if (Clock::now() >= next_withdraw) {
          next_withdraw = Clock::now() + std::chrono::milliseconds(std::uniform_int_distribution<int>(500, 3000)(rng));
          if (!latch.is_held()) withdraw(latch, h, proc, rng);
        }
        continue;
      }
      const int64_t s = ++seq;
      auto w = reg_.write(term, proc, s);
      const int64_t at = h.add(proc, w.outcome == FencedRegister::Outcome::kOk ? "ok" : "fail", "write",
                               "#" + std::to_string(s) + " term " + std::to_string(term.token()) + " " +
                                   FencedRegister::name(w.outcome) +
                                   (w.seen.empty() ? "" : " register holds '" + w.seen + "'"));
      {
        std::lock_guard lk(mu_);
        ++counts_[std::string("write-") + FencedRegister::name(w.outcome)];
        if (w.outcome == FencedRegister::Outcome::kOk) last_write_ = h.now();
        if (w.outcome == FencedRegister::Outcome::kStale) {
          found_.push_back({"election",
                            proc + " (term " + std::to_string(term.token()) +
                                ") had a fenced write refused as stale while its term was intact: the register held '" +
                                w.seen + "' — another leader wrote during its term",
                            at});
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(30, 120)(rng)));
      if (std::uniform_int_distribution<int>(0, 15)(rng) == 0) withdraw(latch, h, proc, rng);
    }
    // What stopped the campaign, if anything did (in the history).
    for (const auto& e : latch.errors()) h.add(proc, "info", "error", e.to_string());
    latch.close();
  }

  FencedRegister reg_{"/chaos/election/register"};
  std::optional<etcd::recipes::LeaderObserver> observer_;
  std::vector<etcd::Subscription> observer_subs_;
  mutable std::mutex mu_;
  std::map<int64_t, std::set<std::string>> leaders_;
  int64_t last_observed_ = 0;
  double last_write_ = -1;
  std::map<std::string, int64_t> counts_;
  std::vector<Violation> found_;
  Threads threads_;  // last: joined first
};

}  // namespace

std::unique_ptr<Workload> make_election_workload() { return std::make_unique<ElectionWorkload>(); }

}  // namespace chaos
