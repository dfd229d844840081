// The members a client talks to (internal): one Endpoint per address (its
// channel and stubs, built on first use and kept for the client's life),
// and which of the configured ones calls and new streams go to now. Calls
// and streams report what they see (a failed member, a silent one) and the
// set moves on to the next configured endpoint.
//
// Thread-safe. Building an endpoint makes a channel but opens no
// connection (gRPC connects on the first call).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "etcd/client.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcd::detail {

// One member endpoint: its channel and stubs.
struct Endpoint {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Cluster::Stub> cluster;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  std::unique_ptr<etcdserverpb::Auth::Stub> auth;
  std::atomic<bool> checking{false};  // a CallWatch check is in flight
};

class EndpointSet {
 public:
  // The configured addresses and TLS settings of `options`.
  explicit EndpointSet(const ClientOptions& options);
  EndpointSet(const EndpointSet&) = delete;
  EndpointSet& operator=(const EndpointSet&) = delete;

  // How many endpoints the client was configured with.
  std::size_t size() const { return addresses_.size(); }
  // The endpoint calls go to now.
  std::shared_ptr<Endpoint> current();
  // Every configured endpoint but `ep`: where a call could go instead.
  std::vector<std::shared_ptr<Endpoint>> except(const std::shared_ptr<Endpoint>& ep);
  // The endpoint of a specific member (one of ours, or any other), kept
  // for the client's lifetime.
  std::shared_ptr<Endpoint> endpoint_for(const std::string& address);

  // A call on `ep` failed in a way that suggests the member is unusable:
  // move on to the next endpoint (once per failure of the current one).
  void report_failure(const std::shared_ptr<Endpoint>& ep);
  // `ep` stopped answering on an open connection (paused member, blackholed
  // link): move on, and give the endpoint a fresh channel, because gRPC
  // would keep using the dead connection until its keepalive gives up.
  void report_stall(const std::shared_ptr<Endpoint>& ep);

  // How often the set moved on.
  uint64_t failovers() const { return failovers_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<Endpoint> build(const std::string& address) const;

  const std::vector<std::string> addresses_;
  const std::optional<TlsOptions> tls_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Endpoint>> endpoints_;  // by addresses_, built on first use
  std::unordered_map<std::string, std::shared_ptr<Endpoint>> extra_;
  std::size_t active_ = 0;
  std::atomic<uint64_t> failovers_{0};
};

}  // namespace etcd::detail
