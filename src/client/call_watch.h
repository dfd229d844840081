// Gives up on unary calls that their member will never answer, as soon as
// the client can tell (internal).
//
// Two cases leave a call hanging until its deadline otherwise:
// - The member stopped answering but kept its connections (a paused or
//   partitioned process): nothing fails, nothing arrives.
// - The raft leader died while a write was in flight on a follower: the
//   follower forwarded the proposal to the dead leader, where it is lost,
//   and etcd holds the request until its own request timeout (5 s plus two
//   election timeouts) — longer than most callers' deadlines.
//
// A call unanswered for RetryPolicy::member_check_interval makes the watch
// ask its member for its raft state (one Status request per member at a
// time, however many calls wait there, repeated while they wait). The call
// is given up when its member reports no leader, or a raft term newer than
// the one the call was sent in, or does not answer the check within
// member_check_timeout while another member can take the call: one that
// answers a check in time and has a leader. With nowhere better to go (one
// endpoint, or every other member silent or leaderless too) a silent member
// is waited for: a paused process (a GC pause, a disk stall) answers once
// it runs again, and the call keeps its place until its own deadline. What
// "given up" means is the call's business (UnaryAttempt: a write ends as
// kOutcomeUnknown, a read tries again elsewhere).
//
// The raft term a call is sent in is the newest term the client heard from
// any member (every etcd response header carries one: note_term): terms
// are cluster-wide, and a call that fails over to a member it never talked
// to must still notice the election it is stranded by. A call sent when no
// term was heard recently takes its first check's term as its baseline
// instead, so an old term never makes a healthy call look stranded.
//
// Threads: add/remove from any thread; the periodic check runs on the
// client's io thread and only while calls are in flight; checks complete
// on gRPC threads. give_up() is called without any lock held.
#pragma once

#include <grpcpp/grpcpp.h>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "etcd/call.h"
#include "etcd/client.h"

namespace etcd::detail {

class Auth;
class ConnectionMonitor;
class EndpointSet;
class ShutdownGate;
struct Endpoint;

class CallWatch {
 public:
  enum class Verdict {
    kStalled,    // the member did not answer a check in time
    kNoLeader,   // the member has no raft leader
    kNewLeader,  // the member moved to a newer raft term since the call was sent
  };
  // A call that can be given up (UnaryAttempt).
  class Watched {
   public:
    virtual ~Watched() = default;
    // Ends the attempt that runs in `ctx` (if it is still the current one)
    // for `verdict`; `detail` says what the check saw.
    virtual void give_up(grpc::ClientContext* ctx, Verdict verdict, const std::string& detail) = 0;
  };

  // Checks members of `endpoints` as `retry` says (member_check_interval,
  // member_check_timeout), on the io thread; a check enters `gate` like a
  // call, so that closing the client cancels it and waits for it.
  CallWatch(const RetryPolicy& retry, asio::io_context& io, EndpointSet& endpoints, Auth& auth, ShutdownGate& gate,
            ConnectionMonitor& connection);
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  // `call` runs an attempt in `ctx` on `ep`, sent now. Returns a ticket for
  // remove(); 0 when checks are disabled.
  uint64_t add(std::weak_ptr<Watched> call, grpc::ClientContext* ctx, std::shared_ptr<Endpoint> ep);
  void remove(uint64_t ticket);
  // Every successful response reports its member's raft term.
  void note_term(uint64_t term);
  // Stops checking (the client closes).
  void shutdown();

 private:
  struct Entry {
    std::weak_ptr<Watched> call;
    grpc::ClientContext* ctx;
    std::shared_ptr<Endpoint> ep;
    Clock::time_point sent;
    uint64_t term;  // 0: not known yet (the first check sets it)
  };

  void arm();  // on the io thread
  void tick();
  void check(const std::shared_ptr<Endpoint>& ep);
  void judge(const std::shared_ptr<Endpoint>& ep, Clock::time_point asked, const grpc::Status& s, uint64_t leader,
             uint64_t term);
  // `ep` did not answer: ends its overdue calls only once another member
  // answers a check with a leader.
  void look_elsewhere(const std::shared_ptr<Endpoint>& ep, Clock::time_point asked, std::string detail);
  // Asks `ep` for its raft state within timeout_; `done(status, leader,
  // term)` runs on a gRPC thread. False (and no `done`) once the client
  // is closing.
  bool ask(const std::shared_ptr<Endpoint>& ep,
           std::function<void(const grpc::Status&, uint64_t leader, uint64_t term)> done);
  // Gives up the calls on `ep` sent at least an interval before `asked`.
  void end_calls(const std::shared_ptr<Endpoint>& ep, Clock::time_point asked, Verdict why, const std::string& detail);

  asio::io_context& io_;
  EndpointSet& endpoints_;
  Auth& auth_;
  ShutdownGate& gate_;
  ConnectionMonitor& connection_;
  // The newest raft term heard, and when (steady clock ticks).
  std::atomic<uint64_t> term_{0};
  std::atomic<Clock::rep> term_heard_at_{0};
  const Clock::duration interval_;
  const Clock::duration timeout_;
  asio::steady_timer timer_;  // io thread only

  std::mutex mu_;
  uint64_t next_ticket_ = 1;
  std::unordered_map<uint64_t, Entry> entries_;
  bool ticking_ = false;
  int idle_ticks_ = 0;
  bool shut_down_ = false;
};

}  // namespace etcd::detail
