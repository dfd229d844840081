// Shared test support: one real single-member etcd per test binary, unique
// key prefixes per test, and deadline-bounded waiting.
#pragma once
#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "etcd/client.h"
#include "etcd/testing/etcd_cluster.h"
#include "etcd/testing/fault_proxy.h"

namespace etcd::test {

using namespace std::chrono_literals;

// A key segment as the recipes spell numbers (fencing tokens, lease ids):
// lower-case hex, and the 16-digit zero-padded form of ordered keys.
inline std::string hex(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}
inline std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// How many keys start with `prefix` (-1 if etcd did not answer in time).
inline int64_t count_under(Client& client, const std::string& prefix) {
  auto r = client.get(prefix, {.prefix = true, .count_only = true}).timeout(10s).wait();
  return r.ok() ? r->count : -1;
}

// Whether a pending call completed within `within` / still runs after `for_`.
template <class T>
bool ready(std::future<T>& f, std::chrono::milliseconds within = 10s) {
  return f.wait_for(within) == std::future_status::ready;
}
template <class T>
bool still_waiting(std::future<T>& f, std::chrono::milliseconds for_ = 300ms) {
  return f.wait_for(for_) == std::future_status::timeout;
}

// Waits until `pred` holds, polling; false if `timeout` passed first.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 10s,
                       std::chrono::milliseconds step = 10ms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(step);
  }
  return pred();
}

// A value handed from a callback thread to the test thread.
template <class T>
class Mailbox {
 public:
  void put(T v) {
    // Notified under the lock: a taker may destroy the mailbox as soon as
    // take() returns.
    std::lock_guard lock(mu_);
    value_ = std::move(v);
    cv_.notify_all();
  }
  std::optional<T> take(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return value_.has_value(); })) return std::nullopt;
    auto v = std::move(value_);
    value_.reset();
    return v;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<T> value_;
};

// Background writes under `prefix` from `writers` threads on `client`, for
// as long as the object lives: what latency tests measure against.
class NoiseWriters {
 public:
  NoiseWriters(Client& client, std::string prefix, int writers = 4) {
    for (int w = 0; w < writers; ++w) {
      threads_.emplace_back([this, &client, key = prefix + std::to_string(w)] {
        for (int i = 0; !stop_.load(); ++i) (void)client.put(key, std::to_string(i)).wait();
      });
    }
  }
  NoiseWriters(const NoiseWriters&) = delete;
  NoiseWriters& operator=(const NoiseWriters&) = delete;
  ~NoiseWriters() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

class SingleMemberTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    if (!cluster_) cluster_ = etcd::testing::EtcdCluster::start_single();
  }
  static void TearDownTestSuite() { cluster_.reset(); }

 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    prefix_ = std::string("/t/") + info->test_suite_name() + "/" + info->name() + "/";
    client_ = std::make_unique<Client>(options());
  }
  void TearDown() override { client_.reset(); }

  ClientOptions options() const {
    ClientOptions o;
    o.endpoints = cluster_->endpoints();
    return o;
  }
  std::string key(const std::string& k) const { return prefix_ + k; }
  Client& client() { return *client_; }
  static etcd::testing::EtcdCluster& cluster() { return *cluster_; }

  static inline std::unique_ptr<etcd::testing::EtcdCluster> cluster_;
  std::string prefix_;
  std::unique_ptr<Client> client_;
};

// SingleMemberTest with a FaultProxy in front of the member: clients made
// with proxied() reach it only through the proxy (delay, cut, blackhole).
class ProxiedSingleMemberTest : public SingleMemberTest {
 protected:
  void SetUp() override {
    SingleMemberTest::SetUp();
    proxy_ = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  }
  void TearDown() override {
    proxy_->restore();
    proxied_client_.reset();  // before the proxy it talks through
    proxy_.reset();
    SingleMemberTest::TearDown();
  }
  ClientOptions proxied() const {
    ClientOptions o;
    o.endpoints = {proxy_->endpoint()};
    return o;
  }
  // A client through the proxy whose connection is established (one put
  // went through), made on first use.
  Client& proxied_client() {
    if (!proxied_client_) {
      proxied_client_ = std::make_unique<Client>(proxied());
      auto warm = proxied_client_->put(key("warm"), "up").wait();
      EXPECT_TRUE(warm.ok()) << "the first put through the proxy: " << warm.status().to_string();
    }
    return *proxied_client_;
  }
  std::unique_ptr<etcd::testing::FaultProxy> proxy_;

 private:
  std::unique_ptr<Client> proxied_client_;
};

// A fresh 3-member cluster per test (members get killed and paused); the
// members' log tails are printed when a test failed.
class ThreeMemberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = etcd::testing::EtcdCluster::start_three();
    cluster_->wait_for_leader(10s);
  }
  void TearDown() override {
    if (HasFailure()) {
      for (int i = 0; i < cluster_->size(); ++i) {
        std::cerr << "--- member " << i << " log tail:\n" << cluster_->log_tail(i, 15) << "\n";
      }
    }
  }
  int member_index_of(const std::string& endpoint) const {
    for (int i = 0; i < cluster_->size(); ++i) {
      if (cluster_->endpoint(i) == endpoint) return i;
    }
    return -1;
  }
  // Every endpoint, with member `first` first (so a new client talks to it).
  ClientOptions options_starting_at(int first) const {
    ClientOptions o;
    o.endpoints.push_back(cluster_->endpoint(first));
    for (int i = 0; i < cluster_->size(); ++i) {
      if (i != first) o.endpoints.push_back(cluster_->endpoint(i));
    }
    return o;
  }
  std::unique_ptr<etcd::testing::EtcdCluster> cluster_;
};

inline long long ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// A measured duration: printed, and recorded in the test's XML output.
inline void report_timing(const std::string& name, long long value_ms) {
  std::cout << "[ timing   ] " << name << " = " << value_ms << " ms" << std::endl;
  ::testing::Test::RecordProperty(name, std::to_string(value_ms));
}

}  // namespace etcd::test
