#pragma once

// etcd::testing::FaultProxy — a TCP proxy for fault injection in tests.
//
// Listens on 127.0.0.1:<free port> and forwards every accepted connection to
// `target` ("host:port", resolved once at start()). All I/O runs on one
// internal thread with its own asio::io_context. Point the client under test
// at proxy->endpoint() instead of the real server, then flip modes at any
// time, from any thread:
//
//   pass()           normal forwarding (also clears any delay) — same as restore()
//   set_delay(d)     forward every chunk d after it was read, order preserved
//                    (in both directions; a round trip costs ~2*d); like
//                    pass(), this leaves blackhole/cut mode
//   blackhole()      keep existing connections open and accept new ones, but
//                    silently drop all bytes in both directions (also bytes
//                    already queued); EOFs are not propagated either
//   reset_all()      RST every current connection (both sides: SO_LINGER 0 +
//                    close); new connections are still accepted. Synchronous:
//                    when it returns, the resets have been sent.
//   cut()            reset_all() and from then on reset every new connection
//                    right after accept, until restore()/pass()
//   restore()        back to pass()
//
// Modes apply to bytes read after the switch. The destructor closes
// everything and joins the thread; it never blocks on peers.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace etcd::testing {

class FaultProxy {
 public:
  // Throws std::runtime_error if the target cannot be parsed/resolved or the
  // listening socket cannot be opened. Does not connect to the target yet
  // (each accepted connection opens its own upstream connection; if that
  // fails the client connection is reset).
  static std::unique_ptr<FaultProxy> start(std::string target);

  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // "127.0.0.1:PORT"
  std::string endpoint() const;
  int port() const;
  const std::string& target() const;

  void pass();
  void set_delay(std::chrono::milliseconds delay);
  void blackhole();
  void reset_all();
  void cut();
  void restore();

  // Currently open proxied connections.
  std::size_t connections() const;
  // Total bytes written to either side so far.
  std::uint64_t bytes_forwarded() const;

  struct Impl;

 private:
  explicit FaultProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace etcd::testing
