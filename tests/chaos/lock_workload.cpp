// The lock family: DistributedMutex, DistributedReadWriteLock and
// DistributedSemaphore. Parties take the lock with short deadlines (some
// give up while queued, so waiters leave the queue from the middle too)
// and, while holding, write a fenced register (fenced_register.h).
//
// Checker:
//   * no fenced write is refused as stale while its writer's hold was
//     intact (two holders' writes interleaved);
//   * the register's log: every accepted write carries the highest token so
//     far; each accepted write is one the client made and was not told was
//     refused; each write the client was told succeeded is in the log;
//   * read-write lock: a reader's two reads of the register (at the start
//     and the end of its read hold, both guarded by it) see the same value —
//     no writer wrote while it read;
//   * progress: once every fault has healed, the lock is taken again within
//     the quiet period (a key left behind by a failed acquisition would
//     keep it, or a permit, blocked for as long as its session lives);
//   * semaphore (2 permits): at each grant the holder writes a marker under
//     its permit's lease and counts the markers in the same Txn: never more
//     than the permits.
#include <algorithm>
#include <condition_variable>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "etcd/recipes/mutex.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "fenced_register.h"
#include "workload.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;
using etcd::recipes::Hold;

enum class Kind { kMutex, kRwLock, kSemaphore };
enum class Role { kWriter, kReader, kOccupant };

constexpr int kPermits = 2;

struct WriteRecord {
  std::string writer;
  int64_t seq = 0;
  int64_t token = 0;
  FencedRegister::Outcome outcome = FencedRegister::Outcome::kUnknown;
  int64_t at = -1;
};

class LockWorkload : public Workload {
 public:
  explicit LockWorkload(Kind kind)
      : kind_(kind),
        name_(kind == Kind::kMutex ? "mutex" : kind == Kind::kRwLock ? "rwlock" : "semaphore"),
        reg_("/chaos/" + name_ + "/register") {}

  std::string name() const override { return name_; }

  void setup(Context& ctx) override { reg_.init(*ctx.admin); }

  void start(Context& ctx) override {
    const int parties = kind_ == Kind::kRwLock ? 5 : 4;
    for (int p = 0; p < parties; ++p) {
      Role role = Role::kWriter;
      if (kind_ == Kind::kRwLock && p >= 3) role = Role::kReader;
      if (kind_ == Kind::kSemaphore) role = Role::kOccupant;
      const uint64_t seed = ctx.seed * 1000003 + static_cast<uint64_t>(p) * 7919 + std::hash<std::string>()(name_);
      threads_.spawn([this, &ctx, p, role, seed](std::stop_token stop) { party(ctx, p, role, seed, stop); });
    }
    threads_.spawn([this, &ctx](std::stop_token stop) { watch_keys(ctx, stop); });
  }

  void stop() override {
    threads_.stop();
  }

  std::vector<Violation> check(Context& ctx) override {
    std::vector<Violation> out;
    std::lock_guard lk(mu_);
    out.insert(out.end(), found_.begin(), found_.end());
    if (healed_at_ >= 0 && last_acquired_ < healed_at_) {
      out.push_back({name_,
                     "no party took the lock in the quiet period after every fault had healed (last acquisition at " +
                         std::to_string(last_acquired_) + " s, healed at " + std::to_string(healed_at_) + " s)",
                     -1});
    }
    auto log = reg_.accepted(*ctx.admin);
    auto v = reg_.check_log(name_, log);
    out.insert(out.end(), v.begin(), v.end());
    std::map<std::pair<std::string, int64_t>, const WriteRecord*> by_id;
    for (const auto& w : writes_) by_id[{w.writer, w.seq}] = &w;
    std::set<std::pair<std::string, int64_t>> logged;
    for (const auto& a : log) {
      logged.insert({a.writer, a.seq});
      auto it = by_id.find({a.writer, a.seq});
      if (it == by_id.end()) {
        out.push_back({name_, "accepted write " + a.writer + "#" + std::to_string(a.seq) + " that no client made", -1});
        continue;
      }
      const auto o = it->second->outcome;
      if (o == FencedRegister::Outcome::kLost || o == FencedRegister::Outcome::kStale) {
        out.push_back({name_,
                       "write " + a.writer + "#" + std::to_string(a.seq) + " (token " + std::to_string(a.token) +
                           ") was accepted at revision " + std::to_string(a.revision) + " but its client was told " +
                           FencedRegister::name(o),
                       it->second->at});
      }
    }
    for (const auto& w : writes_) {
      if (w.outcome == FencedRegister::Outcome::kOk && !logged.count({w.writer, w.seq})) {
        out.push_back({name_, "acknowledged write " + w.writer + "#" + std::to_string(w.seq) + " is not in the log",
                       w.at});
      }
    }
    return out;
  }

  std::map<std::string, int64_t> counts() const override {
    std::lock_guard lk(mu_);
    return counts_;
  }

 private:
  void count(const std::string& what) {
    std::lock_guard lk(mu_);
    ++counts_[what];
  }
  void violation(const std::string& what, int64_t at) {
    std::lock_guard lk(mu_);
    found_.push_back({name_, what, at});
  }

  void party(Context& ctx, int p, Role role, uint64_t seed, std::stop_token stop) {
    std::mt19937_64 rng(seed);
    const std::string proc = name_ + "." + std::to_string(p);
    History& h = *ctx.history;
    etcd::Client client = ctx.clients[static_cast<size_t>(p) % ctx.clients.size()];
    etcd::recipes::RecipeOptions options;
    options.client_id = proc;
    options.session_ttl = 2s;
    const std::string lock_name = "/chaos/" + name_ + "/lock";
    std::optional<etcd::recipes::DistributedMutex> mutex;
    std::optional<etcd::recipes::DistributedReadWriteLock> rw;
    std::optional<etcd::recipes::DistributedSemaphore> sem;
    if (kind_ == Kind::kMutex) mutex.emplace(client, lock_name, options);
    if (kind_ == Kind::kRwLock) rw.emplace(client, lock_name, options);
    if (kind_ == Kind::kSemaphore) sem.emplace(client, lock_name, kPermits, options);

    auto acquire = [&](std::chrono::milliseconds d) -> etcd::Result<Hold> {
      if (mutex) return mutex->acquire().timeout(d).wait();
      if (rw) return (role == Role::kReader ? rw->read_lock() : rw->write_lock()).acquire().timeout(d).wait();
      return sem->acquire().timeout(d).wait();
    };
    auto release = [&](const Hold& hold) -> etcd::Result<bool> {
      if (mutex) return mutex->release().timeout(3s).wait();
      if (rw) return (role == Role::kReader ? rw->read_lock() : rw->write_lock()).release().timeout(3s).wait();
      return hold.release().timeout(3s).wait();
    };
    auto pause = [&](int lo, int hi) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng)));
    };

    int64_t seq = 0;
    while (!stop.stop_requested()) {
      const auto wait = std::chrono::milliseconds(std::uniform_int_distribution<int>(100, 1500)(rng));
      const std::string side = role == Role::kReader ? "read" : "";
      h.add(proc, "invoke", "acquire" + side, "deadline " + std::to_string(wait.count()) + "ms");
      auto got = acquire(wait);
      if (!got.ok()) {
        h.add(proc, "fail", "acquire" + side, got.status().to_string());
        count(got.status().code() == etcd::StatusCode::kDeadlineExceeded ? "acquire-timeout" : "acquire-error");
        pause(5, 50);
        continue;
      }
      Hold hold = *got;
      h.add(proc, "ok", "acquire" + side, "token " + std::to_string(hold.token()));
      count("acquired");
      {
        std::lock_guard lk(mu_);
        last_acquired_ = h.now();
      }
      if (role == Role::kWriter) {
        const int n = std::uniform_int_distribution<int>(1, 3)(rng);
        for (int i = 0; i < n && !stop.stop_requested(); ++i) {
          const int64_t s = ++seq;
          const int64_t inv = h.add(proc, "invoke", "write", "#" + std::to_string(s) + " token " + std::to_string(hold.token()));
          auto w = reg_.write(hold, proc, s);
          const int64_t at = h.add(proc, w.outcome == FencedRegister::Outcome::kOk ? "ok" : "fail", "write",
                                   "#" + std::to_string(s) + " " + FencedRegister::name(w.outcome) +
                                       (w.revision ? " rev " + std::to_string(w.revision) : "") +
                                       (w.seen.empty() ? "" : " register holds '" + w.seen + "'") +
                                       (w.error.empty() ? "" : " " + w.error));
          count(std::string("write-") + FencedRegister::name(w.outcome));
          {
            std::lock_guard lk(mu_);
            writes_.push_back({proc, s, hold.token(), w.outcome, inv});
          }
          if (w.outcome == FencedRegister::Outcome::kStale) {
            violation(proc + " (token " + std::to_string(hold.token()) +
                          ") had a fenced write refused as stale while its hold was intact: the register held '" +
                          w.seen + "' — another holder wrote while it held",
                      at);
          }
          pause(10, 60);
        }
      } else if (role == Role::kReader) {
        read_twice(proc, hold, h, rng);
      } else {
        occupy(proc, hold, h, client);
        pause(20, 150);
      }
      auto r = release(hold);
      h.add(proc, r.ok() ? "ok" : "fail", "release" + side,
            r.ok() ? (*r ? "intact" : "had been lost") : r.status().to_string());
      count(r.ok() ? (*r ? "released" : "released-lost") : "release-error");
      pause(0, 30);
    }
  }

  // Every 5 s, the recipe's keys as etcd has them (in the history: what a
  // stall, if any, was waiting for).
  void watch_keys(Context& ctx, std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    const std::string prefix = "/chaos/" + name_ + "/lock/";
    while (!stop.stop_requested()) {
      std::unique_lock lk(m);
      if (cv.wait_for(lk, stop, 5s, [] { return false; })) break;
      auto r = ctx.admin->get(prefix, etcd::GetOptions{.prefix = true, .keys_only = true}).timeout(3s).wait();
      if (!r.ok()) continue;
      std::string keys;
      for (const auto& kv : r->kvs) {
        keys += " " + kv.key.substr(prefix.size()) + "@" + std::to_string(kv.create_revision) + "/lease " +
                std::to_string(kv.lease);
      }
      ctx.history->add(name_ + ".keys", "info", "keys", keys);
    }
  }

  // Two guarded reads of the register during one read hold.
  void read_twice(const std::string& proc, const Hold& hold, History& h, std::mt19937_64& rng) {
    auto read = [&]() -> std::optional<std::string> {
      auto r = hold.guarded(etcd::Txn().then(etcd::Op::get(reg_.key()))).timeout(3s).wait();
      if (!r.ok() || r->responses.empty() || r->responses[0].get().kvs.empty()) return std::nullopt;
      return r->responses[0].get().kvs[0].value;
    };
    auto first = read();
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 150)(rng)));
    auto second = read();
    if (!first || !second) {
      count("read-incomplete");
      return;
    }
    count("read-pair");
    const int64_t at = h.add(proc, "ok", "read", "'" + *first + "' then '" + *second + "'");
    if (*first != *second) {
      violation(proc + " (read token " + std::to_string(hold.token()) + ") saw the register change from '" + *first +
                    "' to '" + *second + "' while it held the read lock",
                at);
    }
  }

  // The semaphore: a marker under the permit's lease, counted in the same
  // Txn; removed (guarded) before the release.
  void occupy(const std::string& proc, const Hold& hold, History& h, etcd::Client& client) {
    const std::string prefix = "/chaos/" + name_ + "/holders/";
    const std::string marker = prefix + pad(hold.token());
    etcd::Txn t;
    t.then({etcd::Op::put(marker, proc, etcd::PutOptions{.lease = hold.lease()}),
            etcd::Op::get(prefix, etcd::GetOptions{.prefix = true, .keys_only = true})});
    auto r = hold.guarded(std::move(t)).timeout(3s).wait();
    if (!r.ok()) {
      h.add(proc, "fail", "occupy", r.status().to_string());
      count("occupy-failed");
      remove_marker(hold, marker, client);  // the put may have applied
      return;
    }
    const auto& holders = r->responses.at(1).get().kvs;
    std::string who;
    for (const auto& kv : holders) who += " " + kv.key.substr(prefix.size());
    const int64_t at = h.add(proc, "ok", "occupy", std::to_string(holders.size()) + " holders:" + who);
    count("occupied");
    if (static_cast<int>(holders.size()) > kPermits) {
      violation(proc + " (token " + std::to_string(hold.token()) + ") saw " + std::to_string(holders.size()) +
                    " permit holders at once (" + std::to_string(kPermits) + " permits):" + who,
                at);
    }
    remove_marker(hold, marker, client);
  }

  // The marker must be gone before the permit is released: a marker left
  // behind would count as a holder. A hold reported lost does not mean
  // its lease is gone (a hold is given up when its renewals go unanswered
  // for too long, while etcd may still keep the lease), so the marker is
  // then deleted unguarded.
  void remove_marker(const Hold& hold, const std::string& marker, etcd::Client& client) {
    auto d = hold.guarded(etcd::Txn().then(etcd::Op::del(marker))).timeout(3s).wait();
    if (d.ok()) return;
    const bool lost = d.status().is(etcd::Errc::kHoldLost);
    const auto until = Clock::now() + 30s;
    while (Clock::now() < until) {
      auto del = client.del(marker).timeout(3s).wait();
      if (del.ok()) {
        // A marker still there after its hold was lost: its lease lived on.
        if (lost && del->deleted > 0) count("marker-outlived-its-hold");
        return;
      }
    }
    count("marker-left-behind");
  }

  const Kind kind_;
  const std::string name_;
  FencedRegister reg_;
  mutable std::mutex mu_;
  std::map<std::string, int64_t> counts_;
  std::vector<WriteRecord> writes_;
  double last_acquired_ = -1;
  std::vector<Violation> found_;
  Threads threads_;  // last: joined first
};

}  // namespace

std::unique_ptr<Workload> make_mutex_workload() { return std::make_unique<LockWorkload>(Kind::kMutex); }
std::unique_ptr<Workload> make_rwlock_workload() { return std::make_unique<LockWorkload>(Kind::kRwLock); }
std::unique_ptr<Workload> make_semaphore_workload() { return std::make_unique<LockWorkload>(Kind::kSemaphore); }

}  // namespace chaos
