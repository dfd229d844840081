#include "convert.h"

#include <array>
#include <string_view>

namespace etcd::detail {

std::string Namespace::range_end(const std::string& key, std::string_view end, bool prefix) const {
  std::string user_end = prefix ? prefix_range_end(key) : std::string(end);
  if (user_end.empty()) return {};
  if (prefix_.empty()) return user_end;
  // "to the end of the keyspace" means "to the end of the namespace".
  if (user_end == kFromKey) return prefix_range_end(prefix_);
  return prefix_ + user_end;
}

std::string Namespace::strip(const std::string& k) const {
  if (prefix_.empty() || k.compare(0, prefix_.size(), prefix_) != 0) return k;
  return k.substr(prefix_.size());
}

namespace {
// etcd refuses an empty key; a range that starts at the very beginning of
// the keyspace starts at "\0" instead.
std::string range_start(std::string key, const std::string& end) {
  if (key.empty() && !end.empty()) key.assign(1, '\0');
  return key;
}
}  // namespace

void Namespace::fill(etcdserverpb::RangeRequest& out, const std::string& key, const GetOptions& o) const {
  out.set_range_end(range_end(key, o.range_end, o.prefix));
  out.set_key(range_start(this->key(key), out.range_end()));
  out.set_limit(o.limit);
  out.set_revision(o.revision);
  out.set_sort_order(static_cast<etcdserverpb::RangeRequest::SortOrder>(o.sort_order));
  out.set_sort_target(static_cast<etcdserverpb::RangeRequest::SortTarget>(o.sort_target));
  out.set_serializable(o.serializable);
  out.set_keys_only(o.keys_only);
  out.set_count_only(o.count_only);
  out.set_min_mod_revision(o.min_mod_revision);
  out.set_max_mod_revision(o.max_mod_revision);
  out.set_min_create_revision(o.min_create_revision);
  out.set_max_create_revision(o.max_create_revision);
}

void Namespace::fill(etcdserverpb::PutRequest& out, const std::string& key, const std::string& value,
                     const PutOptions& o) const {
  out.set_key(this->key(key));
  out.set_value(value);
  out.set_lease(o.lease);
  out.set_prev_kv(o.prev_kv);
  out.set_ignore_value(o.ignore_value);
  out.set_ignore_lease(o.ignore_lease);
}

void Namespace::fill(etcdserverpb::DeleteRangeRequest& out, const std::string& key, const DeleteOptions& o) const {
  out.set_range_end(range_end(key, o.range_end, o.prefix));
  out.set_key(range_start(this->key(key), out.range_end()));
  out.set_prev_kv(o.prev_kv);
}

namespace {
void fill_ops(const Namespace& ns, google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>* out,
              const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    etcdserverpb::RequestOp* r = out->Add();
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, Op::Get>) {
            GetOptions options = v.options;
            options.range_end = v.range_end;
            ns.fill(*r->mutable_request_range(), v.key, options);
          } else if constexpr (std::is_same_v<T, Op::Put>) {
            ns.fill(*r->mutable_request_put(), v.key, v.value, v.options);
          } else if constexpr (std::is_same_v<T, Op::Delete>) {
            DeleteOptions options = v.options;
            options.range_end = v.range_end;
            ns.fill(*r->mutable_request_delete_range(), v.key, options);
          } else {
            ns.fill(*r->mutable_request_txn(), *v);
          }
        },
        op.op());
  }
}
}  // namespace

void Namespace::fill(etcdserverpb::TxnRequest& out, const Txn& txn) const {
  for (const Compare& c : txn.compares()) {
    etcdserverpb::Compare* pc = out.add_compare();
    pc->set_key(key(c.key));
    if (!c.range_end.empty()) pc->set_range_end(range_end(c.key, c.range_end, false));
    pc->set_result(static_cast<etcdserverpb::Compare::CompareResult>(c.result));
    pc->set_target(static_cast<etcdserverpb::Compare::CompareTarget>(c.target));
    switch (c.target) {
      case CompareTarget::kVersion:
        pc->set_version(c.number_operand);
        break;
      case CompareTarget::kCreateRevision:
        pc->set_create_revision(c.number_operand);
        break;
      case CompareTarget::kModRevision:
        pc->set_mod_revision(c.number_operand);
        break;
      case CompareTarget::kValue:
        pc->set_value(c.value_operand);
        break;
      case CompareTarget::kLease:
        pc->set_lease(c.number_operand);
        break;
    }
  }
  fill_ops(*this, out.mutable_success(), txn.success());
  fill_ops(*this, out.mutable_failure(), txn.failure());
}

void Namespace::fill(etcdserverpb::WatchCreateRequest& out, const std::string& key, const WatchOptions& o) const {
  out.set_range_end(range_end(key, o.range_end, o.prefix));
  out.set_key(range_start(this->key(key), out.range_end()));
  out.set_start_revision(o.start_revision);
  out.set_progress_notify(o.progress_notify);
  out.set_prev_kv(o.prev_kv);
  if (o.filter_puts) out.add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
  if (o.filter_deletes) out.add_filters(etcdserverpb::WatchCreateRequest::NODELETE);
}

ResponseHeader convert(const etcdserverpb::ResponseHeader& h) {
  return ResponseHeader{h.cluster_id(), h.member_id(), h.revision(), h.raft_term()};
}

KeyValue Namespace::convert(const mvccpb::KeyValue& kv) const {
  return KeyValue{strip(kv.key()), kv.value(), kv.create_revision(), kv.mod_revision(), kv.version(), kv.lease()};
}

GetResponse Namespace::convert(const etcdserverpb::RangeResponse& r) const {
  GetResponse out;
  out.header = detail::convert(r.header());
  out.kvs.reserve(static_cast<size_t>(r.kvs_size()));
  for (const auto& kv : r.kvs()) out.kvs.push_back(convert(kv));
  out.more = r.more();
  out.count = r.count();
  return out;
}

PutResponse Namespace::convert(const etcdserverpb::PutResponse& r) const {
  PutResponse out;
  out.header = detail::convert(r.header());
  if (r.has_prev_kv()) out.prev_kv = convert(r.prev_kv());
  return out;
}

DeleteResponse Namespace::convert(const etcdserverpb::DeleteRangeResponse& r) const {
  DeleteResponse out;
  out.header = detail::convert(r.header());
  out.deleted = r.deleted();
  for (const auto& kv : r.prev_kvs()) out.prev_kvs.push_back(convert(kv));
  return out;
}

TxnResponse Namespace::convert(const etcdserverpb::TxnResponse& r) const {
  TxnResponse out;
  out.header = detail::convert(r.header());
  out.succeeded = r.succeeded();
  out.responses.reserve(static_cast<size_t>(r.responses_size()));
  for (const auto& op : r.responses()) {
    switch (op.response_case()) {
      case etcdserverpb::ResponseOp::kResponseRange:
        out.responses.push_back(OpResponse{convert(op.response_range())});
        break;
      case etcdserverpb::ResponseOp::kResponsePut:
        out.responses.push_back(OpResponse{convert(op.response_put())});
        break;
      case etcdserverpb::ResponseOp::kResponseDeleteRange:
        out.responses.push_back(OpResponse{convert(op.response_delete_range())});
        break;
      case etcdserverpb::ResponseOp::kResponseTxn:
        out.responses.push_back(OpResponse{std::make_shared<TxnResponse>(convert(op.response_txn()))});
        break;
      case etcdserverpb::ResponseOp::RESPONSE_NOT_SET:
        out.responses.push_back(OpResponse{GetResponse{}});
        break;
    }
  }
  return out;
}

Event Namespace::convert(const mvccpb::Event& e) const {
  Event out;
  out.type = e.type() == mvccpb::Event::DELETE ? Event::Type::kDelete : Event::Type::kPut;
  out.kv = convert(e.kv());
  if (e.has_prev_kv()) out.prev_kv = convert(e.prev_kv());
  return out;
}

LeaseTimeToLiveResponse Namespace::convert(const etcdserverpb::LeaseTimeToLiveResponse& r) const {
  LeaseTimeToLiveResponse out;
  out.header = detail::convert(r.header());
  out.id = r.id();
  out.ttl = r.ttl();
  out.granted_ttl = r.grantedttl();
  for (const auto& k : r.keys()) {
    // Keys outside our namespace are not ours to show.
    if (prefix_.empty() || k.compare(0, prefix_.size(), prefix_) == 0) out.keys.push_back(strip(k));
  }
  return out;
}

LeaseGrantResponse convert(const etcdserverpb::LeaseGrantResponse& r) {
  return LeaseGrantResponse{convert(r.header()), r.id(), r.ttl()};
}
LeaseRevokeResponse convert(const etcdserverpb::LeaseRevokeResponse& r) { return {convert(r.header())}; }
LeaseKeepAliveResponse convert(const etcdserverpb::LeaseKeepAliveResponse& r) {
  return LeaseKeepAliveResponse{convert(r.header()), r.id(), r.ttl()};
}
LeaseLeasesResponse convert(const etcdserverpb::LeaseLeasesResponse& r) {
  LeaseLeasesResponse out;
  out.header = convert(r.header());
  for (const auto& l : r.leases()) out.leases.push_back(l.id());
  return out;
}
MemberListResponse convert(const etcdserverpb::MemberListResponse& r) {
  MemberListResponse out;
  out.header = convert(r.header());
  for (const auto& m : r.members()) {
    out.members.push_back(Member{m.id(),
                                 m.name(),
                                 {m.peerurls().begin(), m.peerurls().end()},
                                 {m.clienturls().begin(), m.clienturls().end()},
                                 m.islearner()});
  }
  return out;
}
StatusResponse convert(const etcdserverpb::StatusResponse& r) {
  StatusResponse out;
  out.header = convert(r.header());
  out.version = r.version();
  out.db_size = r.dbsize();
  out.leader = r.leader();
  out.raft_index = r.raftindex();
  out.raft_term = r.raftterm();
  out.raft_applied_index = r.raftappliedindex();
  out.errors.assign(r.errors().begin(), r.errors().end());
  out.db_size_in_use = r.dbsizeinuse();
  out.is_learner = r.islearner();
  return out;
}
CompactResponse convert(const etcdserverpb::CompactionResponse& r) { return {convert(r.header())}; }

Status from_grpc(const grpc::Status& s) {
  if (s.ok()) return Status();
  const std::string& msg = s.error_message();
  auto code = static_cast<StatusCode>(s.error_code());
  // etcd reports its own errors as text under a gRPC code; name them.
  struct Known {
    std::string_view text;
    Errc reason;
  };
  static constexpr std::array<Known, 12> kKnown{{
      {"required revision has been compacted", Errc::kCompacted},
      {"required revision is a future revision", Errc::kFutureRevision},
      {"requested lease not found", Errc::kLeaseNotFound},
      {"no leader", Errc::kNoLeader},
      {"request is too large", Errc::kRequestTooLarge},
      {"too many operations in txn request", Errc::kTooManyOps},
      {"duplicate key given in txn request", Errc::kDuplicateKey},
      {"authentication failed", Errc::kAuthFailed},
      {"invalid auth token", Errc::kTokenExpired},
      {"permission denied", Errc::kPermissionDenied},
      {"user name is empty", Errc::kAuthFailed},
      {"leader changed", Errc::kOutcomeUnknown},
  }};
  for (const auto& k : kKnown) {
    if (msg.find(k.text) != std::string::npos) return Status(code, msg, k.reason);
  }
  return Status(code, msg);
}

}  // namespace etcd::detail
