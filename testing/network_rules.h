// Internal to the testing library: the nftables side of member partitions
// (private_network.h), used by EtcdCluster.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace etcd::testing::detail {

// Runs `nft -f -` on `script`, bounded by 10 s. Empty on success, otherwise
// what went wrong (nft's own error output).
std::string run_nft(const std::string& script);

// A number for one cluster's rules, unique in this process (1..4095), or 0
// when partitions are unavailable (then members run unmarked).
int next_network_id();

// The group id member `member` of cluster `network_id` runs with.
gid_t member_gid(int network_id, int member);

// The complete nftables table of one cluster: connections between members
// marked by (dialer, listener), and the packets of each blocked link
// (from, to) dropped on arrival. Replaces the cluster's previous table
// atomically.
std::string cluster_rules(int network_id, const std::vector<int>& peer_ports,
                          const std::set<std::pair<int, int>>& blocked);

// Removes the cluster's table.
std::string delete_cluster_rules(int network_id);

}  // namespace etcd::testing::detail
