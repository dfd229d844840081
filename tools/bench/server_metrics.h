// Counters of etcd itself, read from its Prometheus endpoint (GET /metrics
// on a member's client URL), so that the capacity metrics count what the
// server did rather than what the client believes it sent.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace bench {

// One scrape: every sample line, keyed by its series exactly as etcd prints
// it (`name` or `name{label="v",...}`).
using MetricSamples = std::map<std::string, double>;

// GET http://HOST:PORT/metrics over a plain socket (HTTP/1.0: the server
// closes the connection after the body, so no chunked decoding is needed).
// `endpoint` is "HOST:PORT". Throws std::runtime_error on any failure
// (TLS-only client URLs cannot be read this way).
MetricSamples scrape_metrics(const std::string& endpoint, std::chrono::milliseconds timeout);

// The sum of every series named `name` whose label text contains `labels`
// (e.g. `grpc_method="Txn"`), 0 if there is none.
double sum_series(const MetricSamples& samples, const std::string& name, const std::string& labels = "");

// The CPU time (seconds) of the etcd member whose metrics are at
// `endpoint` ("HOST:PORT"): process_cpu_seconds_total.
double etcd_cpu_seconds(const std::string& endpoint);

// What the capacity metrics count, over all members of a cluster.
struct ServerCounters {
  // Applied by every member: the largest member's value (a follower that
  // lags by a few entries would otherwise make a delta too small).
  double proposals = 0;      // etcd_server_proposals_committed_total: raft entries committed
  double puts = 0;           // etcd_mvcc_put_total: keys written (a Put op of a Put RPC or a Txn)
  double deletes = 0;        // etcd_mvcc_delete_total: DeleteRange ops applied (a lease's keys too)
  double lease_grants = 0;   // etcd_debugging_lease_granted_total
  double lease_revokes = 0;  // etcd_debugging_lease_revoked_total
  double keys = 0;           // etcd_debugging_mvcc_keys_total (gauge)
  double wal_fsyncs = 0;     // etcd_disk_wal_fsync_duration_seconds_count
  // Served by the member a client talks to: summed over members.
  double txn_rpcs = 0;        // grpc_server_started_total{grpc_method="Txn"}
  double range_rpcs = 0;      // grpc_server_started_total{grpc_method="Range"}
  double put_rpcs = 0;        // grpc_server_started_total{grpc_method="Put"}
  double delete_rpcs = 0;     // grpc_server_started_total{grpc_method="DeleteRange"}
  double watch_requests = 0;  // grpc_server_msg_received_total{grpc_method="Watch"}: creates and cancels
  double watchers = 0;        // etcd_debugging_mvcc_watcher_total (gauge)
  double watch_streams = 0;   // etcd_debugging_mvcc_watch_stream_total (gauge)

  ServerCounters operator-(const ServerCounters& before) const;
  ServerCounters operator/(double n) const;
};

// Scrapes every endpoint (one per member) and combines them as above.
ServerCounters read_server_counters(const std::vector<std::string>& endpoints);

}  // namespace bench
