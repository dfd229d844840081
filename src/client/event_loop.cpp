#include "event_loop.h"

#include <pthread.h>

namespace etcd::detail {

EventLoop::EventLoop(std::string name, int threads) : io_(std::make_shared<asio::io_context>(threads)) {
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
}

}  // namespace etcd::detail
