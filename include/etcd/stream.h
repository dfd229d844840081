// Stream<T>: a sequence of events to pull one at a time, in order, the
// same three ways as every call of the library (call.h):
//
//   etcd::Stream<etcd::WatchResponse> s = etcd::watch_stream(client, "/config/", {.prefix = true});
//   while (true) {
//     auto next = co_await s.next();                 // Result<std::optional<T>>
//     if (!next.ok()) break;                         // the stream failed: next.status() says why
//     if (!*next) break;                             // the stream ended (close(), or its source closed)
//     use(**next);
//   }
//   auto one = s.next().timeout(1s).wait();          // blocking
//
// Each kind of stream is opened beside its listener form: watch_stream (a
// raw watch, below), state_stream (the client's connection state, below),
// KeyspaceView::events, NodeCache / PathChildrenCache ::events,
// LeaderLatch::leadership_stream, LeaderObserver::leader_stream.
//
// Back-pressure: a stream buffers at most StreamOptions::capacity events
// for a consumer that is behind; the producer never waits for it. What a
// full buffer does is the stream's own, and each says which:
//   - fail: the stream ends with StatusCode::kResourceExhausted after the
//     events it buffered, and stops following its source (a raw
//     watch: a gap it cannot close by itself; re-read and watch again);
//   - collapse: the buffered events are folded into one event that says the
//     same (a view: one kReset with exactly the net differences; memory
//     stays bounded by the keys the view holds, not by the events);
//   - keep newest: the oldest buffered event is dropped (a state, where only
//     the latest matters: the connection state, leadership).
//
// Cancellation: next() takes a deadline and a stop token as any call does
// (kDeadlineExceeded / kCancelled: that next() ends, the stream goes on and
// loses nothing); close() ends the stream: a next() in flight and every
// later one yield std::nullopt, and the stream lets go of its source. The
// destructor closes. One next() at a time: a second one while the first is
// in flight fails with kFailedPrecondition.
//
// Threads: no thread per stream and none of the user's code on gRPC's
// threads: the producer only appends to the buffer; a coroutine resumes on
// the call's executor (the client's, unless .on(ex) chose another).
#pragma once

#include <asio/steady_timer.hpp>
#include <asio/system_executor.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/status.h"
#include "etcd/watch.h"

namespace etcd {

struct StreamOptions {
  // Events buffered for a consumer that is behind (at least 1; 0 counts
  // as 1). A full buffer fails, collapses or keeps the newest: see above.
  size_t capacity = 1024;
};

namespace detail {

// What a full buffer does (the producer chooses; see the top of this file).
enum class StreamOverflow { kFail, kCollapse, kKeepNewest };

// The shared state of one stream: the producer appends, the consumer takes.
// Thread-safe; completes a waiting next() outside its lock.
template <class T>
class StreamChannel : public std::enable_shared_from_this<StreamChannel<T>> {
 public:
  using Item = std::optional<T>;
  // kCollapse: folds the buffer (full, plus the newest event at its end)
  // into fewer events that say the same; runs under the channel's lock.
  using Collapse = std::function<void(std::deque<T>&)>;

  StreamChannel(Executor executor, StreamOptions options, StreamOverflow overflow)
      : StreamChannel(std::move(executor), options, overflow, Collapse()) {}
  StreamChannel(Executor executor, StreamOptions options, StreamOverflow overflow, Collapse collapse)
      : executor_(std::move(executor)),
        capacity_(options.capacity == 0 ? 1 : options.capacity),
        overflow_(overflow),
        collapse_(std::move(collapse)) {}

  const Executor& executor() const { return executor_; }

  // --- producer

  // Runs once when the stream ends (closed, failed, finished): lets go of
  // the source (cancels a watch, drops a subscription). At once if it has
  // ended already.
  void on_end(std::function<void()> release) {
    {
      std::lock_guard lock(mu_);
      if (!ended_) {
        release_ = std::move(release);
        return;
      }
    }
    if (release) release();
  }

  // Appends one event (or hands it to the next() that waits). Does nothing
  // once the stream has ended.
  void push(T item) {
    std::unique_lock lock(mu_);
    if (ended_) return;
    if (waiter_) {
      auto w = std::move(*waiter_);
      waiter_.reset();
      lock.unlock();
      w.complete(Item(std::move(item)));
      return;
    }
    if (buffer_.size() < capacity_) {
      buffer_.push_back(std::move(item));
      return;
    }
    ++overflows_;
    switch (overflow_) {
      case StreamOverflow::kKeepNewest:
        buffer_.pop_front();
        buffer_.push_back(std::move(item));
        return;
      case StreamOverflow::kCollapse:
        buffer_.push_back(std::move(item));
        collapse_(buffer_);
        return;
      case StreamOverflow::kFail:
        break;
    }
    lock.unlock();
    finish(Status(StatusCode::kResourceExhausted,
                  "the stream's consumer fell behind: its buffer of " + std::to_string(capacity_) + " events is full"));
  }

  // Ends the stream: after the buffered events, next() yields `why` (OK:
  // std::nullopt, the end).
  void finish(Status why) {
    std::function<void()> release;
    std::optional<Waiter> w;
    {
      std::lock_guard lock(mu_);
      if (ended_) return;
      ended_ = true;
      end_ = std::move(why);
      release = std::move(release_);
      if (waiter_ && buffer_.empty()) {
        w = std::move(waiter_);
        waiter_.reset();
      }
    }
    if (w) w->complete(end_result());
    if (release) release();
  }

  bool ended() const {
    std::lock_guard lock(mu_);
    return ended_;
  }

  // --- consumer

  void take(CallOptions options, Callback<Item> done) {
    std::unique_lock lock(mu_);
    if (!buffer_.empty()) {
      Item item(std::move(buffer_.front()));
      buffer_.pop_front();
      lock.unlock();
      return done(std::move(item));
    }
    if (ended_) {
      lock.unlock();
      return done(end_result());
    }
    if (waiter_) {
      lock.unlock();
      return done(Status(StatusCode::kFailedPrecondition, "another next() of this stream is in flight"));
    }
    if (options.stop.stop_requested()) {
      lock.unlock();
      return done(Status(StatusCode::kCancelled, "next() cancelled"));
    }
    const uint64_t id = ++next_id_;
    waiter_.emplace(Waiter{id, std::move(done), nullptr, nullptr});
    lock.unlock();

    std::weak_ptr<StreamChannel> weak = this->shared_from_this();
    if (options.deadline) {
      auto timer = std::make_shared<asio::steady_timer>(executor_, *options.deadline);
      timer->async_wait([weak, id](const asio::error_code& ec) {
        if (auto self = weak.lock(); self && !ec) {
          self->abandon(id, Status(StatusCode::kDeadlineExceeded, "timed out waiting for the stream's next event"));
        }
      });
      if (!keep(id, [&](Waiter& w) { w.timer = timer; })) timer->cancel();
    }
    if (options.stop.stop_possible()) {
      auto cb = std::make_shared<std::stop_callback<std::function<void()>>>(
          options.stop, std::function<void()>([weak, id] {
            if (auto self = weak.lock()) self->abandon(id, Status(StatusCode::kCancelled, "next() cancelled"));
          }));
      (void)keep(id, [&](Waiter& w) { w.stop = cb; });
    }
  }

  // The consumer is done: the stream ends now (buffered events dropped).
  void close() {
    std::optional<Waiter> w;
    std::function<void()> release;
    {
      std::lock_guard lock(mu_);
      buffer_.clear();
      if (ended_ && end_.ok()) return;
      ended_ = true;
      end_ = Status();
      release = std::move(release_);
      w = std::move(waiter_);
      waiter_.reset();
    }
    if (w) w->complete(Item());
    if (release) release();
  }

  size_t buffered() const {
    std::lock_guard lock(mu_);
    return buffer_.size();
  }
  // How many times the buffer was full when an event came.
  uint64_t overflows() const {
    std::lock_guard lock(mu_);
    return overflows_;
  }

 private:
  struct Waiter {
    uint64_t id = 0;
    Callback<Item> done;
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<std::stop_callback<std::function<void()>>> stop;

    // Outside the channel's lock.
    void complete(Result<Item> r) {
      if (timer) timer->cancel();
      auto d = std::move(done);
      // The stop callback may be the one running this: destroyed on its
      // own thread, it does not wait for itself.
      stop.reset();
      d(std::move(r));
    }
  };

  Result<Item> end_result() const {
    if (end_.ok()) return Item();
    return end_;
  }

  // Applies `f` to the waiter `id` if it still waits.
  template <class F>
  bool keep(uint64_t id, F&& f) {
    std::lock_guard lock(mu_);
    if (!waiter_ || waiter_->id != id) return false;
    f(*waiter_);
    return true;
  }

  void abandon(uint64_t id, Status why) {
    std::optional<Waiter> w;
    {
      std::lock_guard lock(mu_);
      if (!waiter_ || waiter_->id != id) return;
      w = std::move(waiter_);
      waiter_.reset();
    }
    w->complete(std::move(why));
  }

  const Executor executor_;
  const size_t capacity_;
  const StreamOverflow overflow_;
  const Collapse collapse_;
  mutable std::mutex mu_;
  std::deque<T> buffer_;
  std::optional<Waiter> waiter_;
  uint64_t next_id_ = 0;
  uint64_t overflows_ = 0;
  bool ended_ = false;
  Status end_;
  std::function<void()> release_;
};

}  // namespace detail

template <class T>
class Stream {
 public:
  // An empty stream: next() fails with kFailedPrecondition.
  Stream() = default;
  explicit Stream(std::shared_ptr<detail::StreamChannel<T>> channel) : channel_(std::move(channel)) {}
  Stream(Stream&&) noexcept = default;
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      close();
      channel_ = std::move(other.channel_);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { close(); }

  // The next event; std::nullopt once the stream has ended; an error if
  // it failed (after the events buffered before the failure).
  Call<std::optional<T>> next() {
    auto channel = channel_;
    if (!channel) {
      return Call<std::optional<T>>::ready(Status(StatusCode::kFailedPrecondition, "an empty etcd::Stream"),
                                           Executor(asio::system_executor()));
    }
    return Call<std::optional<T>>(
        [channel](CallOptions options, Callback<std::optional<T>> done) {
          channel->take(std::move(options), std::move(done));
        },
        channel->executor());
  }

  // Ends the stream (idempotent). A next() in flight yields std::nullopt.
  void close() {
    if (channel_) channel_->close();
  }
  bool valid() const { return channel_ != nullptr; }
  // Events buffered now.
  size_t buffered() const { return channel_ ? channel_->buffered() : 0; }
  // How many times an event found the buffer full.
  uint64_t overflows() const { return channel_ ? channel_->overflows() : 0; }

 private:
  std::shared_ptr<detail::StreamChannel<T>> channel_{};
};

// A raw watch (Client::watch) as a Stream: each response in revision
// order; the error that ends a watch (Errc::kResyncNeeded after a
// compaction, ...) ends the stream. A full buffer fails the stream
// (kResourceExhausted) and cancels the watch: the consumer has a gap to
// close by reading again (a KeyspaceView does that for you). Closing (or
// dropping) the stream cancels the watch.
Stream<WatchResponse> watch_stream(Client& client, std::string key, WatchOptions options, StreamOptions stream);
inline Stream<WatchResponse> watch_stream(Client& client, std::string key, WatchOptions options) {
  return watch_stream(client, std::move(key), std::move(options), StreamOptions());
}

// The client's connection state changes from now on (Client::
// on_state_change) as a Stream; a full buffer keeps the newest states.
// Closing (or dropping) the stream unsubscribes.
Stream<ConnectionState> state_stream(Client& client, StreamOptions stream);
inline Stream<ConnectionState> state_stream(Client& client) { return state_stream(client, StreamOptions()); }

namespace detail {

// The Stream form of a listener form: `subscribe(push)` registers a
// listener that calls `push` with each event and returns its
// Subscription; `on_close(fn)` (if given) registers `fn` to run when the
// source closes (at once if it has) and returns its Subscription: the
// stream then ends (std::nullopt after what it buffered). Closing the
// stream unsubscribes both.
template <class E>
Stream<E> listener_stream(Executor executor, StreamOptions options, StreamOverflow overflow,
                          const std::function<Subscription(std::function<void(E)>)>& subscribe,
                          const std::function<Subscription(std::function<void()>)>& on_close) {
  auto channel = std::make_shared<StreamChannel<E>>(std::move(executor), options, overflow);
  std::weak_ptr<StreamChannel<E>> weak = channel;
  auto sub = std::make_shared<Subscription>(subscribe([weak](E e) {
    if (auto ch = weak.lock()) ch->push(std::move(e));
  }));
  auto closed = std::make_shared<Subscription>();
  if (on_close) {
    *closed = on_close([weak] {
      if (auto ch = weak.lock()) ch->finish(Status());
    });
  }
  channel->on_end([sub, closed] {
    sub->reset();
    closed->reset();
  });
  return Stream<E>(std::move(channel));
}
template <class E>
Stream<E> listener_stream(Executor executor, StreamOptions options, StreamOverflow overflow,
                          const std::function<Subscription(std::function<void(E)>)>& subscribe) {
  return listener_stream<E>(std::move(executor), options, overflow, subscribe,
                            std::function<Subscription(std::function<void()>)>());
}

}  // namespace detail

}  // namespace etcd
