// The nemesis: a seeded random schedule of faults against a 3-member
// cluster, one at a time — leader kills, member pauses (SIGSTOP/SIGCONT),
// partitions between members (both ways and one way), client-member link
// faults through each member's FaultProxy (blackhole, blackhole then reset,
// cut, slow link) and compactions. Each fault lasts 0.5 to 4 s and is
// undone before the next one starts.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <stop_token>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/testing/etcd_cluster.h"
#include "etcd/testing/fault_proxy.h"
#include "history.h"

namespace chaos {

struct Fault {
  double start = 0;  // seconds since the campaign started
  double end = 0;
  std::string kind;
  std::string detail;
};

class Nemesis {
 public:
  Nemesis(etcd::testing::EtcdCluster& cluster, std::vector<etcd::testing::FaultProxy*> proxies, etcd::Client admin,
          History& history, uint64_t seed);

  // Runs faults until `until` (or a stop), then undoes the last one.
  void run(Clock::time_point until, std::stop_token stop);
  // Every member running and resumed, no partition, every proxy passing;
  // waits (bounded) until the cluster is healthy.
  void heal_all();

  std::vector<Fault> schedule() const { return schedule_; }

 private:
  void one(std::stop_token stop);
  bool rest(std::chrono::milliseconds d, std::stop_token stop);
  int any_member();
  int leader_or_any();
  void note(Fault f);

  etcd::testing::EtcdCluster& cluster_;
  std::vector<etcd::testing::FaultProxy*> proxies_;
  etcd::Client admin_;
  History& history_;
  std::mt19937_64 rng_;
  std::vector<Fault> schedule_;
};

}  // namespace chaos
