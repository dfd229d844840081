#include "endpoints.h"

#include <grpcpp/security/credentials.h>

#include <climits>
#include <fstream>
#include <sstream>

namespace etcd::detail {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(InvalidArgument("cannot read file " + path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

EndpointSet::EndpointSet(const ClientOptions& options)
    : addresses_(options.endpoints), tls_(options.tls), endpoints_(addresses_.size()) {}

std::shared_ptr<Endpoint> EndpointSet::build(const std::string& address) const {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, INT_MAX);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Detect a dead link under an idle stream; etcd's default policy allows
  // pings every 5 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 3000);
  // Each endpoint is one member: never let gRPC share a connection between
  // clients, so a client's failover and faults stay its own.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (tls_) {
    grpc::SslCredentialsOptions ssl;
    if (!tls_->ca_file.empty()) ssl.pem_root_certs = read_file(tls_->ca_file);
    if (!tls_->cert_file.empty()) ssl.pem_cert_chain = read_file(tls_->cert_file);
    if (!tls_->key_file.empty()) ssl.pem_private_key = read_file(tls_->key_file);
    if (!tls_->server_name.empty()) args.SetSslTargetNameOverride(tls_->server_name);
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  auto ep = std::make_shared<Endpoint>();
  ep->address = address;
  ep->channel = grpc::CreateCustomChannel(address, creds, args);
  ep->kv = etcdserverpb::KV::NewStub(ep->channel);
  ep->watch = etcdserverpb::Watch::NewStub(ep->channel);
  ep->lease = etcdserverpb::Lease::NewStub(ep->channel);
  ep->cluster = etcdserverpb::Cluster::NewStub(ep->channel);
  ep->maintenance = etcdserverpb::Maintenance::NewStub(ep->channel);
  ep->auth = etcdserverpb::Auth::NewStub(ep->channel);
  return ep;
}

std::shared_ptr<Endpoint> EndpointSet::endpoint_for(const std::string& address) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < addresses_.size(); ++i) {
    if (addresses_[i] == address) {
      if (!endpoints_[i]) endpoints_[i] = build(address);
      return endpoints_[i];
    }
  }
  // Held by the set, so that its channel never dies with a call on a gRPC thread.
  auto& ep = extra_[address];
  if (!ep) ep = build(address);
  return ep;
}

std::shared_ptr<Endpoint> EndpointSet::current() {
  std::lock_guard lock(mu_);
  auto& slot = endpoints_[active_];
  if (!slot) slot = build(addresses_[active_]);
  return slot;
}

std::vector<std::shared_ptr<Endpoint>> EndpointSet::except(const std::shared_ptr<Endpoint>& ep) {
  std::vector<std::shared_ptr<Endpoint>> others;
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    auto& slot = endpoints_[i];
    if (slot == ep || (ep && addresses_[i] == ep->address)) continue;
    if (!slot) slot = build(addresses_[i]);
    others.push_back(slot);
  }
  return others;
}

void EndpointSet::report_failure(const std::shared_ptr<Endpoint>& ep) {
  std::lock_guard lock(mu_);
  if (endpoints_.size() < 2 || endpoints_[active_] != ep) return;  // someone already moved on
  active_ = (active_ + 1) % endpoints_.size();
  failovers_.fetch_add(1, std::memory_order_relaxed);
}

void EndpointSet::report_stall(const std::shared_ptr<Endpoint>& ep) {
  if (!ep) return;
  report_failure(ep);
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    // The old channel lives on in calls still using it, and dies with them.
    if (endpoints_[i] == ep) endpoints_[i] = build(addresses_[i]);
  }
}

}  // namespace etcd::detail
