// Conversions between our public value types and etcd's protobuf messages,
// including the client's key namespace: keys are prefixed on the way out
// and the prefix is stripped on the way back, so callers never see it.
#pragma once

#include <grpcpp/support/status.h>

#include <string>
#include <string_view>

#include "etcd/client.h"
#include "etcd/etcdserverpb/rpc.pb.h"

namespace etcd::detail {

class Namespace {
 public:
  explicit Namespace(std::string prefix) : prefix_(std::move(prefix)) {}
  const std::string& prefix() const { return prefix_; }

  std::string key(const std::string& k) const { return prefix_.empty() ? k : prefix_ + k; }
  // range_end as the caller meant it, after resolving `prefix`, into the namespace.
  std::string range_end(const std::string& key, std::string_view range_end, bool prefix) const;
  std::string strip(const std::string& k) const;

  // Requests.
  void fill(etcdserverpb::RangeRequest& out, const std::string& key, const GetOptions& o) const;
  void fill(etcdserverpb::PutRequest& out, const std::string& key, const std::string& value, const PutOptions& o) const;
  void fill(etcdserverpb::DeleteRangeRequest& out, const std::string& key, const DeleteOptions& o) const;
  void fill(etcdserverpb::TxnRequest& out, const Txn& txn) const;
  void fill(etcdserverpb::WatchCreateRequest& out, const std::string& key, const WatchOptions& o) const;

  // Responses.
  KeyValue convert(const mvccpb::KeyValue& kv) const;
  GetResponse convert(const etcdserverpb::RangeResponse& r) const;
  PutResponse convert(const etcdserverpb::PutResponse& r) const;
  DeleteResponse convert(const etcdserverpb::DeleteRangeResponse& r) const;
  TxnResponse convert(const etcdserverpb::TxnResponse& r) const;
  Event convert(const mvccpb::Event& e) const;
  LeaseTimeToLiveResponse convert(const etcdserverpb::LeaseTimeToLiveResponse& r) const;

 private:
  std::string prefix_;
};

ResponseHeader convert(const etcdserverpb::ResponseHeader& h);
LeaseGrantResponse convert(const etcdserverpb::LeaseGrantResponse& r);
LeaseRevokeResponse convert(const etcdserverpb::LeaseRevokeResponse& r);
LeaseKeepAliveResponse convert(const etcdserverpb::LeaseKeepAliveResponse& r);
LeaseLeasesResponse convert(const etcdserverpb::LeaseLeasesResponse& r);
MemberListResponse convert(const etcdserverpb::MemberListResponse& r);
StatusResponse convert(const etcdserverpb::StatusResponse& r);
CompactResponse convert(const etcdserverpb::CompactionResponse& r);

// gRPC status (with etcd's error text) to our Status.
Status from_grpc(const grpc::Status& s);

// gRPC takes deadlines on the system clock.
inline std::chrono::system_clock::time_point to_system(Deadline d) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(d - Clock::now());
}

}  // namespace etcd::detail
