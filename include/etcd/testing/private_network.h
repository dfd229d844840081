#pragma once

// etcd::testing::enter_private_network() — a network of the test's own, in
// which EtcdCluster can partition its members from each other.
//
// A partition needs packet filtering, and filtering the machine's loopback
// would hit every other etcd on it. So the test process first moves into a
// network namespace of its own that has nothing but a loopback interface:
// every member, client and FaultProxy the process starts afterwards talks
// over that private loopback, nothing outside can reach it, and the filter
// rules never leave it (they disappear with the process).
//
//   int main(int argc, char** argv) {
//     etcd::testing::enter_private_network();   // first, before any thread starts
//     ::testing::InitGoogleTest(&argc, argv);
//     return RUN_ALL_TESTS();
//   }
//
//   TEST(Partitions, MajorityKeepsWriting) {
//     if (auto why = etcd::testing::partitions_unavailable()) GTEST_SKIP() << *why;
//     auto cluster = etcd::testing::EtcdCluster::start_three();
//     int leader = cluster->wait_for_leader(std::chrono::seconds(10));
//     cluster->isolate(leader);                 // from every other member, both ways
//     ...
//     cluster->heal();
//   }
//
// What a partition does (EtcdCluster::partition, partition_one_way, isolate,
// heal): packets from one member to another are dropped on arrival, as a
// network that lost the route drops them. Connections stay open, TCP
// retransmits and eventually gives up, new connections time out; no byte of
// an open stream is ever altered or skipped. Client traffic (the test's
// clients, FaultProxy, etcdctl) is never affected: only member-to-member
// traffic on the members' peer ports is.
//
// How: each member of a cluster started in the private network runs with
// a group id of its own (its user stays root, so it reads and writes its
// data dir as before); an nftables rule marks each connection between
// members with the (dialer, listener) pair when it opens, from the dialer's
// group id and the listener's peer port, and a partition drops the marked
// packets that travel the blocked way.
//
// Needs: root (or CAP_SYS_ADMIN + CAP_NET_ADMIN), a kernel with network
// namespaces and nf_tables with connection tracking, and `nft` (Debian's
// `nftables` package). Without them partitions_unavailable() says why, so
// tests can skip.

#include <optional>
#include <string>

namespace etcd::testing {

struct PrivateNetwork {
  // The process now lives in its own network namespace (loopback only).
  bool entered = false;
  // EtcdCluster can partition members (entered, and nft works there).
  bool partitions = false;
  // Why not, when either is false.
  std::string reason;
};

// Moves the whole process into a new network namespace with its loopback
// interface up, and checks that nftables works in it. Must be called while
// the process has a single thread (first thing in main()): a thread that
// already exists would stay in the machine's network. Calling it again
// answers the first call's result. Never throws.
PrivateNetwork enter_private_network();

// nullopt when EtcdCluster can partition members in this process;
// otherwise why not (enter_private_network() was not called, or failed).
std::optional<std::string> partitions_unavailable();

}  // namespace etcd::testing
