// An Asio io_context run by a fixed number of named threads, and a marker
// for code running inside a gRPC completion.
#pragma once

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace etcd::detail {

// Set on an EventLoop's io_context once its threads have finished: what is
// posted to it afterwards would never run (detail::complete_on, call.h,
// runs such completions on the caller's thread instead).
class FinishedMark : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;
  explicit FinishedMark(asio::execution_context& ctx) : asio::execution_context::service(ctx) {}

  std::mutex mu;
  bool finished = false;  // (mu)

 private:
  void shutdown() override {}
};

class EventLoop {
 public:
  // `name` shows in top/gdb (at most 15 characters).
  EventLoop(std::string name, int threads);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  asio::io_context& context() { return *io_; }
  asio::io_context::executor_type executor() { return io_->get_executor(); }
  bool running_in_this_thread() const { return io_->get_executor().running_in_this_thread(); }

  // Lets the threads finish queued work, then joins them. From one of the
  // loop's own threads it cannot join: it stops the loop and detaches.
  void finish();
  // Stops at once; queued handlers are destroyed with the loop.
  void stop() { io_->stop(); }

 private:
  // Shared with the threads, so that a loop destroyed on one of its own
  // threads does not pull the io_context out from under that thread.
  std::shared_ptr<asio::io_context> io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
};

}  // namespace etcd::detail
