#pragma once

// etcd::testing::EtcdCluster — starts real etcd processes on free loopback
// ports for tests.
//
// Which etcd: EtcdClusterOptions::etcd_binary if set, else the path in the
// environment variable ETCD_RECIPES_ETCD, else `etcd` on PATH (Debian 12's
// etcd-server is 3.4). `./dev.sh etcd 3.6` builds a pinned release and prints
// its path (docs/testing.md). The harness reads the release from
// `etcd --version` (version()) and spells its flags for it: etcd 3.6 renamed
// the --experimental-* flags and 3.7 removed the old names, so extra_args may
// use either spelling on every release.
//
//   auto cluster = etcd::testing::EtcdCluster::start_three();
//   MyClient client(cluster->endpoints());           // "127.0.0.1:PORT" each
//   int l = cluster->wait_for_leader(std::chrono::seconds(10));
//   cluster->kill(l);                                  // SIGKILL the leader
//   int l2 = cluster->wait_for_leader(std::chrono::seconds(10));
//   cluster->restart(l);                               // same ports + data dir
//   cluster->wait_healthy(std::chrono::seconds(10));
//
// Process hygiene: every member runs in its own process group with
// PR_SET_PDEATHSIG(SIGKILL) (members are forked from a process-wide helper
// thread that lives as long as the process, so the death signal fires only
// when the test process dies, not when the thread that called start() /
// restart() exits). Live member pids are kept in a process-wide registry that
// an atexit() handler SIGKILLs. The destructor SIGKILLs + reaps all members
// and removes the private temp directory (unless keep_data_on_failure is set
// *and* mark_failed() was called; the kept path is then printed to stderr).
//
// Health and leadership are checked over plain HTTP on a dedicated
// --listen-metrics-urls port per member (GET /health and GET /metrics), so
// they also work when client URLs are TLS-only.
//
// Thread-safety: all methods may be called concurrently from several threads
// (member state is guarded by an internal mutex). Member indices are
// 0 .. size()-1; out-of-range indices throw std::out_of_range.

#include <sys/types.h>

#include <chrono>
#include <compare>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "etcd/testing/certs.h"

namespace etcd::testing {

// An etcd release, as `etcd --version` reports it ("etcd Version: 3.6.16").
struct EtcdVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string text;  // as printed, e.g. "3.6.16" or "3.7.0-rc.0"

  bool at_least(int maj, int min, int pat = 0) const {
    return std::tie(major, minor, patch) >= std::tie(maj, min, pat);
  }
  // Compares the numbers only (a pre-release sorts with its release).
  friend bool operator==(const EtcdVersion& a, const EtcdVersion& b) {
    return std::tie(a.major, a.minor, a.patch) == std::tie(b.major, b.minor, b.patch);
  }
  friend std::strong_ordering operator<=>(const EtcdVersion& a, const EtcdVersion& b) {
    return std::tie(a.major, a.minor, a.patch) <=> std::tie(b.major, b.minor, b.patch);
  }
};

// The etcd server binary the harness starts when EtcdClusterOptions::
// etcd_binary is empty: the path in $ETCD_RECIPES_ETCD if that is set and not
// empty, else `etcd` searched on PATH, then /usr/bin and /usr/local/bin.
// Returns an absolute path; throws std::runtime_error if there is none (or
// $ETCD_RECIPES_ETCD names no executable).
std::string default_etcd_binary();

// The etcdctl that goes with an etcd binary (empty: default_etcd_binary()):
// $ETCD_RECIPES_ETCDCTL if set, else the etcdctl in the same directory as the
// etcd binary, else etcdctl on PATH / in /usr/bin. Empty if there is none.
std::string etcdctl_binary(const std::string& etcd_binary);
// etcdctl_binary(default_etcd_binary()).
std::string etcdctl_binary();

// Runs `binary --version` (bounded by 10 s) once per binary and process and
// returns what it reports; later calls for the same file answer from memory.
// Throws std::runtime_error if it does not run or prints no version.
EtcdVersion etcd_version(const std::string& binary);

// `args` (etcd flags) spelled for release `v`: from 3.6 on, the renamed
// --experimental-* flags are given their new names (or --feature-gates=X=...
// where etcd made them feature gates); before 3.6, the new names are given
// the old ones. Forms: --flag=value, --flag value, and a bare boolean flag.
std::vector<std::string> spell_flags_for(const EtcdVersion& v, std::vector<std::string> args);

struct EtcdClusterOptions {
  int members = 1;
  std::chrono::milliseconds heartbeat{25};
  std::chrono::milliseconds election_timeout{250};
  // Empty: default_etcd_binary() ($ETCD_RECIPES_ETCD, else `etcd` on PATH).
  // A path (contains '/') is used as is; a bare name is searched on PATH,
  // then /usr/bin and /usr/local/bin.
  std::string etcd_binary;
  // Appended last to every member's command line (through
  // spell_flags_for(version(), ...)); etcd's flag parser lets a later flag
  // win, so e.g. {"--log-level=info"} overrides our default.
  std::vector<std::string> extra_args;
  bool keep_data_on_failure = false;
  // Bound for start() (including port-collision retries) and restart().
  std::chrono::seconds start_timeout{30};
  // Where member logs go; empty = inside the cluster's temp dir. Logs in a
  // user-supplied log_dir are never deleted.
  std::string log_dir;
  // If set, client URLs are https:// (--cert-file/--key-file/
  // --trusted-ca-file = server cert/key + CA) and peers also talk TLS with the
  // same server cert (which carries serverAuth+clientAuth).
  std::optional<TestCerts> tls;
  // With tls: require client certificates signed by the CA
  // (--client-cert-auth); etcd then uses the certificate CN as user name.
  bool client_cert_auth = false;
};

class EtcdCluster {
 public:
  // Starts options.members members and waits (bounded by start_timeout)
  // until every member answers GET /health with "health":"true".
  // Throws std::runtime_error (including the tail of the failing member's
  // log) on failure; all processes started so far are killed.
  static std::unique_ptr<EtcdCluster> start() { return start(EtcdClusterOptions()); }
  static std::unique_ptr<EtcdCluster> start(EtcdClusterOptions options);
  static std::unique_ptr<EtcdCluster> start_single();
  static std::unique_ptr<EtcdCluster> start_three();

  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;
  EtcdCluster(EtcdCluster&&) = delete;
  EtcdCluster& operator=(EtcdCluster&&) = delete;

  int size() const;
  const EtcdClusterOptions& options() const { return options_; }
  // The etcd binary the members run (absolute path) and its release.
  const std::string& binary() const { return binary_; }
  const EtcdVersion& version() const { return version_; }
  // etcdctl_binary(binary()): empty if there is none.
  std::string etcdctl() const { return etcdctl_binary(binary_); }
  bool tls() const { return options_.tls.has_value(); }
  // "http" or "https" (scheme of the client URLs).
  std::string scheme() const;

  // "127.0.0.1:PORT" client endpoints of every member, running or not.
  std::vector<std::string> endpoints() const;
  std::string endpoint(int i) const;
  // endpoints() joined with ','.
  std::string endpoints_csv() const;
  // "http(s)://127.0.0.1:PORT" for every member.
  std::vector<std::string> client_urls() const;
  int client_port(int i) const;
  int peer_port(int i) const;
  // Plain-HTTP port serving /health and /metrics (always present).
  int metrics_port(int i) const;

  // --- member control ----------------------------------------------------
  // SIGTERM (+SIGCONT in case it is paused), wait for the member to exit,
  // then SIGKILL; always reaps. No-op if not running. The wait is 5 s on
  // etcd 3.4; etcd 3.5 and newer first wait up to their request timeout
  // (5 s + 2 election timeouts) for open client streams such as watches to
  // end before they hand leadership over and exit, so stop() waits that much
  // longer for them (a member a client watches on takes ~5.5 s to stop).
  void stop(int i);
  // SIGKILL + reap. No-op if not running.
  void kill(int i);
  // SIGSTOP; returns once the kernel reports the member stopped. No-op if
  // not running or already paused.
  void pause(int i);
  // SIGCONT. No-op if not running or not paused.
  void resume(int i);
  // Stops the member if running (stop(i)), then starts it again with the
  // same name, ports and data dir. Returns once the process is up (its
  // metrics port accepts connections), NOT once it is healthy — a member can
  // only become healthy with quorum; use wait_healthy() for that. Retries a
  // few times if a port is briefly still in use. Throws std::runtime_error
  // (with log tail) if the process exits or does not come up in
  // start_timeout.
  void restart(int i);
  // True while the process exists (paused counts as running). Reaps it if
  // it exited on its own.
  bool is_running(int i) const;
  bool is_paused(int i) const;
  // Current pid, or -1 if not running.
  pid_t pid(int i) const;

  // --- partitions between members ------------------------------------------
  // Only in a process that entered a private network (private_network.h):
  // partitions_unavailable() is nullopt there. Otherwise these throw
  // std::runtime_error with the reason. A partition drops the packets of
  // member-to-member traffic (peer ports) on arrival; connections stay open
  // and TCP retransmits, so nothing of an open stream is lost or altered,
  // and after heal() the members reconnect or carry on. Client traffic is
  // never affected. Partitions add up until heal(); a member that is
  // restarted stays behind the partitions it had. Synchronous: the rules
  // are in force when the call returns.
  //
  // Packets from every member of `a` to every member of `b` and back.
  void partition(const std::vector<int>& a, const std::vector<int>& b);
  // Only packets from every member of `from` to every member of `to` (the
  // other way still flows: `to` hears `from` go silent, `from` hears `to`).
  void partition_one_way(const std::vector<int>& from, const std::vector<int>& to);
  // Member i from every other member, both ways.
  void isolate(int i);
  // Every partition ends.
  void heal();
  // The blocked links now, as (from, to) pairs.
  std::set<std::pair<int, int>> partitioned_links() const;

  // --- health --------------------------------------------------------------
  // GET /health on member i answered "health":"true" within timeout.
  bool healthy(int i) const { return healthy(i, std::chrono::seconds(1)); }
  bool healthy(int i, std::chrono::milliseconds timeout) const;
  // Index of the (single) running, non-paused member whose /metrics has
  // `etcd_server_is_leader 1`; nullopt if none or more than one (transient
  // split during an election). Each member is given `timeout`.
  std::optional<int> leader() const { return leader(std::chrono::seconds(1)); }
  std::optional<int> leader(std::chrono::milliseconds timeout) const;
  // Polls leader() until one exists; throws std::runtime_error after
  // `deadline`.
  int wait_for_leader() const { return wait_for_leader(std::chrono::seconds(10)); }
  int wait_for_leader(std::chrono::milliseconds deadline) const;
  // Waits until every running, non-paused member is healthy and a leader
  // exists; throws std::runtime_error (with details) after `deadline`.
  void wait_healthy() const { wait_healthy(std::chrono::seconds(10)); }
  void wait_healthy(std::chrono::milliseconds deadline) const;

  // --- files -----------------------------------------------------------------
  // The private temp dir (e.g. /tmp/etcd-recipes-AbC123).
  std::filesystem::path dir() const { return dir_; }
  std::filesystem::path data_dir(int i) const;
  std::filesystem::path log_path(int i) const;
  // Last `lines` lines of member i's log (stdout+stderr of every incarnation).
  std::string log_tail(int i, int lines = 40) const;

  // Call when the test failed: with keep_data_on_failure the destructor then
  // keeps the temp dir (data + logs) and prints its path to stderr.
  void mark_failed();

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    int metrics_port = 0;
    std::filesystem::path data_dir;
    std::filesystem::path log_path;
    pid_t pid = -1;
    bool paused = false;
    int last_status = 0;       // waitpid status of the last incarnation
    long long log_offset = 0;  // log size when the current incarnation started
  };

  explicit EtcdCluster(EtcdClusterOptions options);

  void check_index(int i) const;
  std::vector<std::string> member_args(int i) const;
  void spawn_locked(int i);
  bool port_clash_since_spawn_locked(int i) const;
  bool reap_if_exited_locked(int i) const;
  void kill_locked(int i);
  void stop_locked(int i);
  void kill_all_locked();
  bool metrics_port_open(int i) const;
  void block_locked(const std::vector<int>& from, const std::vector<int>& to);
  void apply_rules_locked();

  EtcdClusterOptions options_;
  std::string binary_;
  EtcdVersion version_;
  std::filesystem::path dir_;
  std::string token_;
  bool failed_ = false;
  pid_t owner_pid_ = -1;  // process that created the cluster (fork safety)
  // Its rules in the private network (0: members run unmarked, no partitions).
  int network_id_ = 0;
  std::set<std::pair<int, int>> blocked_;  // (from, to)
  mutable std::mutex mu_;
  mutable std::vector<Member> members_;
};

}  // namespace etcd::testing
