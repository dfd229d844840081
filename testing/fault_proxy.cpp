#include "etcd/testing/fault_proxy.h"

#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif
#include <asio.hpp>

#include <unistd.h>

#include <atomic>
#include <deque>
#include <future>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace etcd::testing {
namespace {

using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// kHold: a partition — nothing is forwarded, and nothing is lost: what is
// read waits, and goes on in order once the partition heals. kHoldThenReset:
// the same, but the partition outlasts TCP's retransmissions, so healing
// resets the connections it held.
enum class Mode : int { kPass, kHold, kHoldThenReset, kCut };

bool holding(Mode m) { return m == Mode::kHold || m == Mode::kHoldThenReset; }

constexpr std::size_t kReadChunk = 64 * 1024;
// Per-direction cap on bytes read but not yet written (delay mode, or held
// by a partition); reading pauses above it, so the sender's socket buffers
// fill and its writes block, as across a real partition.
constexpr std::size_t kMaxQueued = 8u << 20;

class Session;

}  // namespace

struct FaultProxy::Impl {
  std::string target;
  // Declared first: destroyed last, after every I/O object below.
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_backoff{io};
  tcp::resolver::results_type upstream;
  int port = 0;

  std::atomic<int> mode{static_cast<int>(Mode::kPass)};
  std::atomic<long long> delay_ms{0};
  std::atomic<std::size_t> conns{0};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> received{0};

  std::set<std::shared_ptr<Session>> sessions;  // io thread only

  std::thread thread;
  std::thread::id thread_id;
  pid_t owner_pid = ::getpid();

  Mode current_mode() const { return static_cast<Mode>(mode.load()); }
  void accept_loop();
  void add(const std::shared_ptr<Session>& s);
  void remove(const std::shared_ptr<Session>& s);
  void reset_sessions();
  // After a partition: every session delivers what it held (or is reset).
  void heal(bool reset);
  void set_mode(Mode m);

  // Runs f on the io thread and waits for it (inline if already there).
  template <class F>
  void run_sync(F f) {
    if (std::this_thread::get_id() == thread_id) {
      f();
      return;
    }
    std::promise<void> done;
    auto fut = done.get_future();
    asio::post(io, [&] {
      f();
      done.set_value();
    });
    fut.wait();
  }
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(FaultProxy::Impl& proxy, tcp::socket client)
      : proxy_(proxy),
        client_(std::move(client)),
        upstream_(proxy.io),
        c2u_(proxy.io, client_, upstream_),
        u2c_(proxy.io, upstream_, client_) {}

  void start() {
    auto self = shared_from_this();
    asio::async_connect(upstream_, proxy_.upstream, [self](const asio::error_code& ec, const tcp::endpoint&) {
      if (self->closed_) return;
      if (ec) {
        self->abort();
        return;
      }
      asio::error_code ignored;
      self->client_.set_option(tcp::no_delay(true), ignored);
      self->upstream_.set_option(tcp::no_delay(true), ignored);
      self->read(self->c2u_);
      self->read(self->u2c_);
    });
  }

  // Hard reset of both sides (RST), then unregister.
  void abort() { close(true); }

  // The partition healed: write what was held, read again.
  void resume() {
    if (closed_) return;
    read(c2u_);
    read(u2c_);
    pump(c2u_);
    pump(u2c_);
  }

  // Used by the destructor of the proxy (io thread already stopped).
  void close_quietly() {
    if (closed_) return;
    closed_ = true;
    asio::error_code ignored;
    client_.close(ignored);
    upstream_.close(ignored);
  }

 private:
  struct Chunk {
    Clock::time_point at;
    std::vector<char> data;
  };
  struct Dir {
    Dir(asio::io_context& io, tcp::socket& f, tcp::socket& t) : from(f), to(t), buf(kReadChunk), timer(io) {}
    tcp::socket& from;
    tcp::socket& to;
    std::vector<char> buf;
    std::deque<Chunk> queue;
    std::size_t queued = 0;
    asio::steady_timer timer;
    Clock::time_point last_at{};
    bool reading = false;
    bool writing = false;
    bool timer_armed = false;
    bool eof = false;
    bool shut = false;
  };

  void read(Dir& d) {
    if (closed_ || d.reading || d.eof) return;
    d.reading = true;
    auto self = shared_from_this();
    d.from.async_read_some(asio::buffer(d.buf), [self, &d](const asio::error_code& ec, std::size_t n) {
      d.reading = false;
      if (self->closed_) return;
      if (ec) {
        if (ec == asio::error::eof) {
          d.eof = true;
          self->pump(d);
          self->maybe_finish();
        } else {
          self->abort();
        }
        return;
      }
      const Mode m = self->proxy_.current_mode();
      if (m == Mode::kCut) {
        self->abort();
        return;
      }
      if (n > 0) {
        self->proxy_.received.fetch_add(n);
        const auto delay = std::chrono::milliseconds(self->proxy_.delay_ms.load());
        // Never earlier than the previous chunk: order is preserved even
        // if the delay shrinks.
        const auto at = std::max(Clock::now() + delay, d.last_at);
        d.last_at = at;
        d.queue.push_back(Chunk{at, std::vector<char>(d.buf.begin(), d.buf.begin() + static_cast<std::ptrdiff_t>(n))});
        d.queued += n;
        self->pump(d);  // held while partitioned
      }
      if (d.queued < kMaxQueued) self->read(d);
    });
  }

  void pump(Dir& d) {
    if (closed_ || d.writing || d.timer_armed) return;
    if (holding(proxy_.current_mode())) return;  // resume() goes on
    if (d.queue.empty()) {
      if (d.eof && !d.shut) {
        // Propagate the half-close once everything before it was written.
        asio::error_code ignored;
        d.to.shutdown(tcp::socket::shutdown_send, ignored);
        d.shut = true;
      }
      maybe_finish();
      return;
    }
    auto self = shared_from_this();
    Chunk& front = d.queue.front();
    if (front.at > Clock::now()) {
      d.timer_armed = true;
      d.timer.expires_at(front.at);
      d.timer.async_wait([self, &d](const asio::error_code&) {
        d.timer_armed = false;
        if (self->closed_) return;
        self->pump(d);
      });
      return;
    }
    d.writing = true;
    asio::async_write(d.to, asio::buffer(front.data), [self, &d](const asio::error_code& ec, std::size_t n) {
      d.writing = false;
      if (self->closed_) return;
      if (ec) {
        self->abort();
        return;
      }
      self->proxy_.bytes.fetch_add(n);
      d.queued -= d.queue.front().data.size();
      d.queue.pop_front();
      if (d.queued < kMaxQueued) self->read(d);
      self->pump(d);
    });
  }

  static bool drained(const Dir& d) { return d.eof && d.queue.empty() && !d.writing && !d.reading; }

  void maybe_finish() {
    if (!closed_ && drained(c2u_) && drained(u2c_)) close(false);
  }

  void close(bool rst) {
    if (closed_) return;
    closed_ = true;
    asio::error_code ignored;
    for (tcp::socket* s : {&client_, &upstream_}) {
      if (!s->is_open()) continue;
      if (rst) s->set_option(asio::socket_base::linger(true, 0), ignored);
      s->close(ignored);
    }
    c2u_.timer.cancel();
    u2c_.timer.cancel();
    proxy_.remove(shared_from_this());
  }

  FaultProxy::Impl& proxy_;
  tcp::socket client_;
  tcp::socket upstream_;
  Dir c2u_;
  Dir u2c_;
  bool closed_ = false;
};

void rst_close(tcp::socket& s) {
  asio::error_code ignored;
  s.set_option(asio::socket_base::linger(true, 0), ignored);
  s.close(ignored);
}

}  // namespace

void FaultProxy::Impl::add(const std::shared_ptr<Session>& s) {
  sessions.insert(s);
  conns.store(sessions.size());
}

void FaultProxy::Impl::remove(const std::shared_ptr<Session>& s) {
  sessions.erase(s);
  conns.store(sessions.size());
}

void FaultProxy::Impl::reset_sessions() {
  const auto copy = sessions;  // abort() erases from `sessions`
  for (const auto& s : copy) s->abort();
}

void FaultProxy::Impl::heal(bool reset) {
  const auto copy = sessions;  // abort() erases from `sessions`
  for (const auto& s : copy) {
    if (reset) {
      s->abort();
    } else {
      s->resume();
    }
  }
}

void FaultProxy::Impl::set_mode(Mode m) {
  const Mode before = static_cast<Mode>(mode.exchange(static_cast<int>(m)));
  if (holding(before) && !holding(m)) {
    const bool reset = before == Mode::kHoldThenReset;
    run_sync([this, reset] { heal(reset); });
  }
}

void FaultProxy::Impl::accept_loop() {
  acceptor.async_accept([this](const asio::error_code& ec, tcp::socket s) {
    if (!acceptor.is_open() || ec == asio::error::operation_aborted) return;
    if (ec) {
      // E.g. EMFILE: back off a little instead of spinning.
      accept_backoff.expires_after(std::chrono::milliseconds(10));
      accept_backoff.async_wait([this](const asio::error_code& e) {
        if (!e) accept_loop();
      });
      return;
    }
    if (current_mode() == Mode::kCut) {
      rst_close(s);
    } else {
      auto session = std::make_shared<Session>(*this, std::move(s));
      add(session);
      session->start();
    }
    accept_loop();
  });
}

// ===========================================================================

FaultProxy::FaultProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<FaultProxy> FaultProxy::start(std::string target) {
  auto impl = std::make_unique<Impl>();
  impl->target = target;

  const auto colon = target.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == target.size()) {
    throw std::runtime_error("FaultProxy: target must be host:port, got '" + target + "'");
  }
  std::string host = target.substr(0, colon);
  const std::string service = target.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  try {
    tcp::resolver resolver(impl->io);
    impl->upstream = resolver.resolve(host, service);
    if (impl->upstream.empty()) throw std::runtime_error("no addresses");
    const tcp::endpoint listen_ep(asio::ip::address_v4::loopback(), 0);
    impl->acceptor.open(listen_ep.protocol());
    impl->acceptor.bind(listen_ep);
    impl->acceptor.listen(asio::socket_base::max_listen_connections);
    impl->port = impl->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    throw std::runtime_error("FaultProxy: cannot proxy to '" + target + "': " + e.what());
  }

  impl->accept_loop();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    for (;;) {
      try {
        raw->io.run();
        return;  // only after io.stop()
      } catch (...) {
        // A handler threw; keep serving.
      }
    }
  });
  impl->thread_id = impl->thread.get_id();
  return std::unique_ptr<FaultProxy>(new FaultProxy(std::move(impl)));
}

FaultProxy::~FaultProxy() {
  if (!impl_) return;
  if (::getpid() != impl_->owner_pid) {
    // Forked child (e.g. a gtest death test): the I/O thread does not exist
    // here; leak the state instead of joining a thread that never ends.
    (void)impl_.release();
    return;
  }
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // Single-threaded from here on.
  asio::error_code ignored;
  impl_->acceptor.close(ignored);
  for (const auto& s : impl_->sessions) s->close_quietly();
  impl_->sessions.clear();
  impl_->conns.store(0);
  // ~Impl: ~io_context destroys the remaining handlers (and with them the
  // sessions they keep alive) before the io_context itself goes away.
}

std::string FaultProxy::endpoint() const { return "127.0.0.1:" + std::to_string(impl_->port); }

int FaultProxy::port() const { return impl_->port; }

const std::string& FaultProxy::target() const { return impl_->target; }

void FaultProxy::pass() {
  impl_->delay_ms.store(0);
  impl_->set_mode(Mode::kPass);
}

void FaultProxy::set_delay(std::chrono::milliseconds delay) {
  impl_->delay_ms.store(delay.count() < 0 ? 0 : static_cast<long long>(delay.count()));
  impl_->set_mode(Mode::kPass);
}

void FaultProxy::blackhole() { impl_->set_mode(Mode::kHold); }

void FaultProxy::blackhole_then_reset() { impl_->set_mode(Mode::kHoldThenReset); }

void FaultProxy::reset_all() {
  Impl* impl = impl_.get();
  impl->run_sync([impl] { impl->reset_sessions(); });
}

void FaultProxy::cut() {
  impl_->set_mode(Mode::kCut);
  reset_all();
}

void FaultProxy::restore() { pass(); }

std::size_t FaultProxy::connections() const { return impl_->conns.load(); }

std::uint64_t FaultProxy::bytes_forwarded() const { return impl_->bytes.load(); }
std::uint64_t FaultProxy::bytes_received() const { return impl_->received.load(); }

}  // namespace etcd::testing
