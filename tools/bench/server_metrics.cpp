#include "server_metrics.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "process.h"

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for `events` on `fd` until `deadline`; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  }
}

std::string http_get(const std::string& endpoint, const std::string& path, std::chrono::milliseconds timeout) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("endpoint without a port: " + endpoint);
  std::string host = endpoint.substr(0, colon);
  const std::string port = endpoint.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto deadline = Clock::now() + timeout;

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error(endpoint + ": " + ::gai_strerror(rc));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addrs(found, &::freeaddrinfo);
  Fd fd(::socket(found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, found->ai_protocol));
  if (fd.get() < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd.get(), found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS) {
    throw std::runtime_error(endpoint + ": connect: " + std::strerror(errno));
  }
  if (!wait_fd(fd.get(), POLLOUT, deadline)) throw std::runtime_error(endpoint + ": connect timed out");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) throw std::runtime_error(endpoint + ": connect: " + std::strerror(err));

  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + endpoint + "\r\n\r\n";
  for (std::size_t sent = 0; sent < request.size();) {
    if (!wait_fd(fd.get(), POLLOUT, deadline)) throw std::runtime_error(endpoint + ": send timed out");
    const ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      throw std::runtime_error(endpoint + ": send: " + std::strerror(errno));
    }
    if (n > 0) sent += static_cast<std::size_t>(n);
  }
  std::string response;
  char buf[16384];
  for (;;) {
    if (!wait_fd(fd.get(), POLLIN, deadline)) throw std::runtime_error(endpoint + ": " + path + " timed out");
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      throw std::runtime_error(endpoint + ": recv: " + std::strerror(errno));
    }
    response.append(buf, static_cast<std::size_t>(n));
  }
  const auto body = response.find("\r\n\r\n");
  if (!response.starts_with("HTTP/1.") || body == std::string::npos) {
    throw std::runtime_error(endpoint + ": not an HTTP response (a TLS-only client URL?)");
  }
  const std::string status_line = response.substr(0, response.find("\r\n"));
  if (status_line.find(" 200") == std::string::npos) throw std::runtime_error(endpoint + ": " + status_line);
  return response.substr(body + 4);
}

}  // namespace

MetricSamples scrape_metrics(const std::string& endpoint, std::chrono::milliseconds timeout) {
  MetricSamples samples;
  std::istringstream body(http_get(endpoint, "/metrics", timeout));
  for (std::string line; std::getline(body, line);) {
    if (line.empty() || line.front() == '#') continue;
    // Label values may contain spaces; the value follows the last one.
    const auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    char* end = nullptr;
    const double value = std::strtod(line.c_str() + space + 1, &end);
    if (end == line.c_str() + space + 1) continue;
    samples[line.substr(0, space)] = value;
  }
  if (samples.empty()) throw std::runtime_error(endpoint + ": /metrics had no samples");
  return samples;
}

double etcd_cpu_seconds(const std::string& endpoint) {
  return sum_series(scrape_metrics(endpoint, std::chrono::seconds(10)), "process_cpu_seconds_total");
}

double sum_series(const MetricSamples& samples, const std::string& name, const std::string& labels) {
  double sum = 0;
  for (auto it = samples.lower_bound(name); it != samples.end() && it->first.starts_with(name); ++it) {
    const std::string_view rest = std::string_view(it->first).substr(name.size());
    if (!rest.empty() && rest.front() != '{') continue;  // another metric whose name extends this one
    if (rest.find(labels) != std::string_view::npos) sum += it->second;
  }
  return sum;
}

ServerCounters ServerCounters::operator-(const ServerCounters& b) const {
  return {
      .proposals = proposals - b.proposals,
      .puts = puts - b.puts,
      .deletes = deletes - b.deletes,
      .lease_grants = lease_grants - b.lease_grants,
      .lease_revokes = lease_revokes - b.lease_revokes,
      .keys = keys - b.keys,
      .wal_fsyncs = wal_fsyncs - b.wal_fsyncs,
      .txn_rpcs = txn_rpcs - b.txn_rpcs,
      .range_rpcs = range_rpcs - b.range_rpcs,
      .put_rpcs = put_rpcs - b.put_rpcs,
      .delete_rpcs = delete_rpcs - b.delete_rpcs,
      .watch_requests = watch_requests - b.watch_requests,
      .watchers = watchers - b.watchers,
      .watch_streams = watch_streams - b.watch_streams,
  };
}

ServerCounters ServerCounters::operator/(double n) const {
  return {
      .proposals = proposals / n,
      .puts = puts / n,
      .deletes = deletes / n,
      .lease_grants = lease_grants / n,
      .lease_revokes = lease_revokes / n,
      .keys = keys / n,
      .wal_fsyncs = wal_fsyncs / n,
      .txn_rpcs = txn_rpcs / n,
      .range_rpcs = range_rpcs / n,
      .put_rpcs = put_rpcs / n,
      .delete_rpcs = delete_rpcs / n,
      .watch_requests = watch_requests / n,
      .watchers = watchers / n,
      .watch_streams = watch_streams / n,
  };
}

ServerCounters read_server_counters(const std::vector<std::string>& endpoints) {
  ServerCounters c;
  for (const auto& ep : endpoints) {
    const MetricSamples s = scrape_metrics(ep, std::chrono::seconds(5));
    const auto one = [&](const char* name) { return sum_series(s, name); };
    c.proposals = std::max(c.proposals, one("etcd_server_proposals_committed_total"));
    c.puts = std::max(c.puts, one("etcd_mvcc_put_total"));
    c.deletes = std::max(c.deletes, one("etcd_mvcc_delete_total"));
    c.lease_grants = std::max(c.lease_grants, one("etcd_debugging_lease_granted_total"));
    c.lease_revokes = std::max(c.lease_revokes, one("etcd_debugging_lease_revoked_total"));
    c.keys = std::max(c.keys, one("etcd_debugging_mvcc_keys_total"));
    c.wal_fsyncs = std::max(c.wal_fsyncs, one("etcd_disk_wal_fsync_duration_seconds_count"));
    c.txn_rpcs += sum_series(s, "grpc_server_started_total", "grpc_method=\"Txn\"");
    c.range_rpcs += sum_series(s, "grpc_server_started_total", "grpc_method=\"Range\"");
    c.put_rpcs += sum_series(s, "grpc_server_started_total", "grpc_method=\"Put\"");
    c.delete_rpcs += sum_series(s, "grpc_server_started_total", "grpc_method=\"DeleteRange\"");
    c.watch_requests += sum_series(s, "grpc_server_msg_received_total", "grpc_method=\"Watch\"");
    c.watchers += one("etcd_debugging_mvcc_watcher_total");
    c.watch_streams += one("etcd_debugging_mvcc_watch_stream_total");
  }
  return c;
}

}  // namespace bench
