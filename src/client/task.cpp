#include "etcd/task.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <mutex>

#include "event_loop.h"

namespace etcd::detail {

Executor shared_timer_executor() {
  // Never destroyed: a sleeper may still be pending while static objects
  // are torn down at exit. One thread for every executor-less sleeper.
  static EventLoop* loop = new EventLoop("etcd-timer", 1);
  return loop->executor();
}

namespace {

// Everything touches the timer on one strand: asio timers are not safe to
// use from two threads at once, and a stop may be requested from anywhere.
struct Sleep : std::enable_shared_from_this<Sleep> {
  Sleep(Executor ex, std::function<void(Status)> d)
      : executor(std::move(ex)), strand(asio::make_strand(executor)), timer(strand), done(std::move(d)) {}

  void finish(Status s) {
    if (finished) return;
    finished = true;
    // Let the coroutine continue on the executor it runs on, outside the
    // strand, so a long stretch of user code does not hold the strand.
    asio::post(executor, [self = shared_from_this(), s = std::move(s)]() mutable {
      self->on_stop.reset();
      self->done(std::move(s));
    });
  }

  Executor executor;
  asio::strand<Executor> strand;
  asio::steady_timer timer;
  std::function<void(Status)> done;
  bool finished = false;  // on the strand
  bool stopped = false;   // on the strand
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
};

}  // namespace

void start_sleep(Executor ex, Clock::duration d, std::stop_token stop, std::function<void(Status)> done) {
  auto sleep = std::make_shared<Sleep>(std::move(ex), std::move(done));
  asio::post(sleep->strand, [sleep, d, stop = std::move(stop)] {
    sleep->timer.expires_after(d);
    sleep->timer.async_wait(
        [sleep](const std::error_code&) { sleep->finish(sleep->stopped ? Cancelled("sleep cancelled") : Status()); });
    if (stop.stop_possible()) {
      // Runs inline when the stop was already requested.
      std::weak_ptr<Sleep> weak = sleep;
      sleep->on_stop.emplace(stop, std::function<void()>([weak] {
                               auto s = weak.lock();
                               if (!s) return;
                               asio::post(s->strand, [s] {
                                 if (s->finished) return;
                                 s->stopped = true;
                                 s->timer.cancel();
                               });
                             }));
    }
  });
}

}  // namespace etcd::detail
