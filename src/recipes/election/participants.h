// Reads of an election's candidates (internal), shared by LeaderLatch,
// LeaderSelector and LeaderObserver.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../core/calls.h"
#include "etcd/client.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/metrics.h"

namespace etcd::recipes::detail {

inline Labels election_labels(const std::string& name) { return {{"election", name}}; }

// Every candidate under `prefix`, the leader first.
inline Call<std::vector<Participant>> read_participants(Client& client, const Status& input, std::string prefix) {
  if (!input.ok()) return Call<std::vector<Participant>>::ready(input, client.executor());
  GetOptions options;
  options.prefix = true;
  options.sort_order = SortOrder::kAscend;
  options.sort_target = SortTarget::kCreate;
  return map_call<std::vector<Participant>>(client.get(std::move(prefix), options), client.executor(),
                                            [](const GetResponse& r) {
                                              std::vector<Participant> out;
                                              for (const auto& kv : r.kvs) {
                                                Participant p;
                                                p.key = kv.key;
                                                p.value = kv.value;
                                                p.term = kv.create_revision;
                                                p.lease = kv.lease;
                                                p.leader = out.empty();
                                                out.push_back(std::move(p));
                                              }
                                              return out;
                                            });
}

inline LeaderInfo leader_info(const KeyValue& kv) {
  LeaderInfo info;
  info.key = kv.key;
  info.value = kv.value;
  info.term = kv.create_revision;
  info.lease = kv.lease;
  return info;
}

// The key with the lowest create revision under `prefix`, if any.
inline Call<std::optional<LeaderInfo>> read_leader(Client& client, const Status& input, std::string prefix) {
  if (!input.ok()) return Call<std::optional<LeaderInfo>>::ready(input, client.executor());
  GetOptions options;
  options.prefix = true;
  options.limit = 1;
  options.sort_order = SortOrder::kAscend;
  options.sort_target = SortTarget::kCreate;
  return map_call<std::optional<LeaderInfo>>(client.get(std::move(prefix), options), client.executor(),
                                             [](const GetResponse& r) -> std::optional<LeaderInfo> {
                                               if (r.kvs.empty()) return std::nullopt;
                                               return leader_info(r.kvs.front());
                                             });
}

}  // namespace etcd::recipes::detail
