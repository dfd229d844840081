// Reads of an election's candidates (internal), shared by LeaderLatch,
// LeaderSelector and LeaderObserver.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../core/calls.h"
#include "../core/recipe_core.h"
#include "etcd/client.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/metrics.h"

namespace etcd::recipes::detail {

inline Labels election_labels(const std::string& name) { return {{"election", name}}; }

// Every candidate under `prefix`, the leader first. Refused (before any
// I/O) for bad input and once `core` is closed.
inline Call<std::vector<Participant>> read_participants(const RecipeCore& core, std::string prefix) {
  auto link = core.link();
  if (Status st = core.usable(link); !st.ok()) return core.ready<std::vector<Participant>>(st);
  GetOptions options;
  options.prefix = true;
  options.sort_order = SortOrder::kAscend;
  options.sort_target = SortTarget::kCreate;
  auto call = link->client().get(std::move(prefix), options);
  return map_call<std::vector<Participant>>(std::move(call), std::move(link), [](const GetResponse& r) {
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

// The key with the lowest create revision under `prefix`, if any. Refused
// (before any I/O) for bad input and once `core` is closed.
inline Call<std::optional<LeaderInfo>> read_leader(const RecipeCore& core, std::string prefix) {
  auto link = core.link();
  if (Status st = core.usable(link); !st.ok()) return core.ready<std::optional<LeaderInfo>>(st);
  GetOptions options;
  options.prefix = true;
  options.limit = 1;
  options.sort_order = SortOrder::kAscend;
  options.sort_target = SortTarget::kCreate;
  auto call = link->client().get(std::move(prefix), options);
  return map_call<std::optional<LeaderInfo>>(std::move(call), std::move(link),
                                             [](const GetResponse& r) -> std::optional<LeaderInfo> {
                                               if (r.kvs.empty()) return std::nullopt;
                                               return leader_info(r.kvs.front());
                                             });
}

}  // namespace etcd::recipes::detail
