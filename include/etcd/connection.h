// Connection state, as clients and recipes report it, and the RAII handle
// of a listener registration.
#pragma once

#include <functional>
#include <string_view>
#include <utility>

namespace etcd {

enum class ConnectionState {
  kConnected,    // calls and streams are working
  kSuspended,    // calls or streams are failing; leases may still be alive
  kReconnected,  // working again after a suspension; leases that survived are intact
  kLost,         // a lease is known to be gone (expired or not found)
};

std::string_view to_string(ConnectionState state) noexcept;

// Unregisters a listener when destroyed (or on reset()). Move-only.
class [[nodiscard]] Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  Subscription(Subscription&& o) noexcept : cancel_(std::exchange(o.cancel_, nullptr)) {}
  Subscription& operator=(Subscription&& o) noexcept {
    if (this != &o) {
      reset();
      cancel_ = std::exchange(o.cancel_, nullptr);
    }
    return *this;
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription() { reset(); }

  void reset() {
    if (auto c = std::exchange(cancel_, nullptr)) c();
  }

 private:
  std::function<void()> cancel_;
};

}  // namespace etcd
