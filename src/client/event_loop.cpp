#include "event_loop.h"

#include <pthread.h>

#include <asio/post.hpp>

#include "etcd/call.h"

namespace etcd::detail {

asio::execution_context::id FinishedMark::id;

EventLoop::EventLoop(std::string name, int threads) : io_(std::make_shared<asio::io_context>(threads)) {
  (void)asio::use_service<FinishedMark>(*io_);
  work_.emplace(io_->get_executor());
  name.resize(std::min<size_t>(name.size(), 15));
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([io = io_, name] {
      pthread_setname_np(pthread_self(), name.c_str());
      io->run();
    });
  }
}

EventLoop::~EventLoop() { finish(); }

void EventLoop::finish() {
  work_.reset();
  const bool own = running_in_this_thread();
  if (own) io_->stop();
  for (auto& t : threads_) {
    if (!t.joinable()) continue;
    if (t.get_id() == std::this_thread::get_id() || own) {
      t.detach();
    } else {
      t.join();
    }
  }
  threads_.clear();
  {
    auto& mark = asio::use_service<FinishedMark>(*io_);
    std::lock_guard lock(mark.mu);
    mark.finished = true;
  }
  // A completion posted after the last thread left run() and before the
  // mark was set still runs, here, once.
  if (!own) {
    io_->restart();
    io_->poll();
  }
}

void complete_on(const Executor& ex, std::function<void()> completion) {
  auto& ctx = asio::query(ex, asio::execution::context_as<asio::execution_context&>);
  if (asio::has_service<FinishedMark>(ctx)) {
    auto& mark = asio::use_service<FinishedMark>(ctx);
    std::unique_lock lock(mark.mu);
    if (mark.finished) {
      lock.unlock();
      completion();
      return;
    }
    asio::post(ex, std::move(completion));
    return;
  }
  asio::post(ex, std::move(completion));
}

}  // namespace etcd::detail
