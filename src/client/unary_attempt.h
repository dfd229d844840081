// One unary RPC of a client, from start to finish (internal): its
// attempts, failover, backoff, deadline and cancellation, under the rules
// of attempt_decision.h.
//
// Threads: an attempt completes on a gRPC thread, a backoff on the io
// thread; `finish` runs on one of those (or, for the first attempt of a
// caller that waits, on the caller's thread) and must not run user code.
#pragma once

#include <asio/io_context.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "auth.h"
#include "call_watch.h"
#include "connection_monitor.h"
#include "endpoints.h"
#include "etcd/call.h"
#include "etcd/client.h"
#include "shutdown_gate.h"
#include "unary_method.h"

namespace etcd::detail {

// What the client needs to know about an RPC.
struct Rpc {
  const char* name = "";
  bool idempotent = false;     // safe to send again after an unknown outcome
  bool require_leader = true;  // a member without a raft leader refuses it at once
  bool watched = true;         // CallWatch may give it up (not for calls to one fixed member)
};

// The unary calls' share of ClientStats.
struct CallCounters {
  std::atomic<uint64_t> rpcs_started{0};
  std::atomic<uint64_t> rpcs_failed{0};
  std::atomic<uint64_t> retries{0};
};

// The pieces of a client that its unary calls use. The client's core
// holds them; a call keeps them alive through a shared_ptr that shares
// the core's ownership.
struct UnaryPieces {
  const ClientOptions& options;
  asio::io_context& io;
  EndpointSet& endpoints;
  Auth& auth;
  ShutdownGate& gate;
  ConnectionMonitor& connection;
  CallWatch& call_watch;
  CallCounters& counters;
  const Executor& callback;  // where log records go (etcd/log.h)
};

// Runs one unary RPC, sending `send`'s request, with the client's
// deadline, cancellation, failover and retry rules; `finish` gets the
// final status exactly once. With `options.caller_waits`, the first
// attempt runs on the calling thread (UnarySend::run).
void run_unary(std::shared_ptr<const UnaryPieces> pieces, const Rpc& rpc, const CallOptions& options,
               std::shared_ptr<UnarySend> send, std::function<void(Status)> finish);

}  // namespace etcd::detail
