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
//   blackhole()      a network partition, as TCP lives through it: existing
//                    connections stay open and new ones are accepted, but no
//                    byte is forwarded in either direction; nothing is lost
//                    either. What was read waits (up to 8 MiB a direction;
//                    beyond that the proxy stops reading, the sender's
//                    buffers fill and its writes block), EOFs included, and
//                    restore() delivers all of it, in order. Each side sees
//                    a silent peer, never a gap in its stream.
//   blackhole_then_reset()
//                    a partition that outlasts TCP's retransmissions: the
//                    same until restore(), which then resets (RST) every
//                    connection the partition held instead of delivering
//                    what it held, as both kernels would have given up on
//                    it; connections made after restore() pass.
//   reset_all()      RST every current connection (both sides: SO_LINGER 0 +
//                    close); new connections are still accepted. Synchronous:
//                    when it returns, the resets have been sent.
//   cut()            reset_all() and from then on reset every new connection
//                    right after accept, until restore()/pass()
//   restore()        back to pass(); after a blackhole, synchronous: when it
//                    returns, the held bytes are being written (or, after
//                    blackhole_then_reset(), the resets have been sent)
//
// The proxy never drops bytes from an open connection and then forwards
// later ones: a real network delays bytes or fails the connection, never
// both at once. Modes apply to bytes read after the switch. The destructor
// closes everything and joins the thread; it never blocks on peers.

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
  void blackhole_then_reset();
  void reset_all();
  void cut();
  void restore();

  // Currently open proxied connections.
  std::size_t connections() const;
  // Total bytes written to either side so far.
  std::uint64_t bytes_forwarded() const;
  // Total bytes read from either side so far, forwarded or not (what a
  // blackhole holds counts as soon as it arrived).
  std::uint64_t bytes_received() const;

  struct Impl;

 private:
  explicit FaultProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace etcd::testing
