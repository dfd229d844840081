#include "call_watch.h"

#include <algorithm>
#include <asio/post.hpp>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "auth.h"
#include "connection_monitor.h"
#include "convert.h"
#include "endpoints.h"
#include "shutdown_gate.h"

namespace etcd::detail {

namespace {

// A term heard longer ago than this may be outdated by the time a call is
// sent: such a call takes its baseline from its first check.
constexpr auto kFreshTerm = std::chrono::seconds(1);
// The periodic check stops after this many ticks without calls in flight.
constexpr int kIdleTicks = 10;

long long millis(Clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

}  // namespace

CallWatch::CallWatch(const RetryPolicy& retry, asio::io_context& io, EndpointSet& endpoints, Auth& auth,
                     ShutdownGate& gate, ConnectionMonitor& connection)
    : io_(io),
      endpoints_(endpoints),
      auth_(auth),
      gate_(gate),
      connection_(connection),
      interval_(retry.member_check_interval),
      timeout_(retry.member_check_timeout),
      timer_(io) {}

void CallWatch::note_term(uint64_t term) {
  if (term == 0) return;
  uint64_t known = term_.load(std::memory_order_relaxed);
  while (known < term && !term_.compare_exchange_weak(known, term, std::memory_order_relaxed)) {
  }
  if (term >= known) term_heard_at_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

uint64_t CallWatch::add(std::weak_ptr<Watched> call, grpc::ClientContext* ctx, std::shared_ptr<Endpoint> ep) {
  if (interval_ <= Clock::duration::zero() || !ep) return 0;
  const auto now = Clock::now();
  const Clock::time_point heard(Clock::duration(term_heard_at_.load(std::memory_order_relaxed)));
  const uint64_t term = now - heard <= kFreshTerm ? term_.load(std::memory_order_relaxed) : 0;
  bool start = false;
  uint64_t ticket;
  {
    std::lock_guard lock(mu_);
    if (shut_down_) return 0;
    ticket = next_ticket_++;
    entries_.emplace(ticket, Entry{std::move(call), ctx, std::move(ep), now, term});
    idle_ticks_ = 0;
    if (!ticking_) start = ticking_ = true;
  }
  // Posted work runs before the io loop finishes (the client's close), and
  // arm() checks for shutdown, so `this` outlives it.
  if (start) asio::post(io_, [this] { arm(); });
  return ticket;
}

void CallWatch::remove(uint64_t ticket) {
  if (ticket == 0) return;
  std::lock_guard lock(mu_);
  entries_.erase(ticket);
}

void CallWatch::shutdown() {
  {
    std::lock_guard lock(mu_);
    shut_down_ = true;
    entries_.clear();
  }
  asio::post(io_, [this] { timer_.cancel(); });
}

void CallWatch::arm() {
  {
    std::lock_guard lock(mu_);
    if (shut_down_) {
      ticking_ = false;
      return;
    }
  }
  // Half the interval: a call is checked between one and one and a half
  // intervals after it was sent.
  timer_.expires_after(interval_ / 2);
  timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;  // cancelled at shutdown: `this` may be gone
    tick();
  });
}

void CallWatch::tick() {
  std::vector<std::shared_ptr<Endpoint>> overdue;
  {
    std::lock_guard lock(mu_);
    if (shut_down_) {
      ticking_ = false;
      return;
    }
    if (entries_.empty() && ++idle_ticks_ >= kIdleTicks) {
      ticking_ = false;
      return;
    }
    const auto now = Clock::now();
    for (const auto& [ticket, e] : entries_) {
      if (now - e.sent < interval_) continue;
      if (std::find(overdue.begin(), overdue.end(), e.ep) == overdue.end()) overdue.push_back(e.ep);
    }
  }
  for (const auto& ep : overdue) {
    if (!ep->checking.exchange(true)) check(ep);
  }
  arm();
}

void CallWatch::check(const std::shared_ptr<Endpoint>& ep) {
  const auto asked = Clock::now();
  const bool asking = ask(ep, [this, ep, asked](const grpc::Status& s, uint64_t leader, uint64_t term) {
    ep->checking = false;
    judge(ep, asked, s, leader, term);
  });
  if (!asking) ep->checking = false;
}

bool CallWatch::ask(const std::shared_ptr<Endpoint>& ep,
                    std::function<void(const grpc::Status&, uint64_t leader, uint64_t term)> done) {
  // Counted like a call, so that closing the client cancels the check and
  // waits for it (and with it for this object).
  if (!gate_.try_enter(/*cleanup=*/false)) return false;
  auto ctx = std::make_shared<grpc::ClientContext>();
  ctx->set_deadline(to_system(Clock::now() + timeout_));
  // Status answers from the member's own state, leader or not.
  auth_.prepare_context(*ctx, /*require_leader=*/false);
  gate_.track(ctx, /*cleanup=*/false);
  auto req = std::make_shared<etcdserverpb::StatusRequest>();
  auto resp = std::make_shared<etcdserverpb::StatusResponse>();
  ep->maintenance->async()->Status(ctx.get(), req.get(), resp.get(),
                                   [this, ctx, req, resp, done = std::move(done)](grpc::Status s) {
                                     gate_.untrack(ctx.get());
                                     done(s, resp->leader(), resp->raftterm());
                                     gate_.leave(/*cleanup=*/false);
                                   });
  return true;
}

void CallWatch::judge(const std::shared_ptr<Endpoint>& ep, Clock::time_point asked, const grpc::Status& s,
                      uint64_t leader, uint64_t term) {
  if (!s.ok()) {
    // Any other failure (cancelled at close, a permission) says nothing
    // about the member's health.
    if (s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED && s.error_code() != grpc::StatusCode::UNAVAILABLE) {
      return;
    }
    // The client is suspended (ConnectionState) until an answer comes:
    // listeners learn once that etcd is unresponsive, while the calls wait.
    connection_.note_connection_failure();
    return look_elsewhere(
        ep, asked,
        "member " + ep->address + " did not answer a check within " + std::to_string(millis(timeout_)) + " ms");
  }
  note_term(term);
  if (leader == 0) {
    endpoints_.report_failure(ep);
    return end_calls(ep, asked, Verdict::kNoLeader, "member " + ep->address + " lost its raft leader");
  }
  std::vector<std::pair<std::weak_ptr<Watched>, grpc::ClientContext*>> ended;
  std::string detail;
  {
    std::lock_guard lock(mu_);
    for (auto& [ticket, e] : entries_) {
      if (e.ep != ep || asked - e.sent < interval_) continue;
      if (e.term == 0) {
        e.term = term;
      } else if (term > e.term) {
        ended.emplace_back(e.call, e.ctx);
        if (detail.empty()) {
          detail = "the raft leader changed while it was in flight (term " + std::to_string(e.term) + " → " +
                   std::to_string(term) + " on member " + ep->address + ")";
        }
      }
    }
  }
  for (auto& [weak, ctx] : ended) {
    if (auto call = weak.lock()) call->give_up(ctx, Verdict::kNewLeader, detail);
  }
}

void CallWatch::look_elsewhere(const std::shared_ptr<Endpoint>& ep, Clock::time_point asked, std::string detail) {
  const auto others = endpoints_.except(ep);
  if (others.empty()) return;  // nowhere better: the calls wait for their member
  struct Search {
    std::atomic<bool> found{false};
    std::string detail;
  };
  auto search = std::make_shared<Search>();
  search->detail = std::move(detail);
  for (const auto& other : others) {
    ask(other, [this, ep, asked, other, search](const grpc::Status& s, uint64_t leader, uint64_t term) {
      if (s.ok()) note_term(term);
      if (s.ok() && leader != 0 && !search->found.exchange(true)) {
        endpoints_.report_stall(ep);
        end_calls(ep, asked, Verdict::kStalled, search->detail + "; member " + other->address + " can take it");
      }
    });
  }
}

void CallWatch::end_calls(const std::shared_ptr<Endpoint>& ep, Clock::time_point asked, Verdict why,
                          const std::string& detail) {
  std::vector<std::pair<std::weak_ptr<Watched>, grpc::ClientContext*>> ended;
  {
    std::lock_guard lock(mu_);
    for (auto& [ticket, e] : entries_) {
      if (e.ep == ep && asked - e.sent >= interval_) ended.emplace_back(e.call, e.ctx);
    }
  }
  for (auto& [weak, ctx] : ended) {
    if (auto call = weak.lock()) call->give_up(ctx, why, detail);
  }
}

}  // namespace etcd::detail
