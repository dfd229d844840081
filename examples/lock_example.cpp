// A critical section guarded by a DistributedMutex, with fencing.
//   lock_example 127.0.0.1:2379
#include <iostream>
#include <mutex>

#include "etcd/recipes/mutex.h"

int main(int argc, char** argv) {
  etcd::ClientOptions options;
  options.endpoints = {argc > 1 ? argv[1] : "127.0.0.1:2379"};
  etcd::Client client(options);
  etcd::recipes::DistributedMutex mutex(client, "/example/locks/orders");

  std::unique_lock lock(mutex);  // blocks until held
  std::cout << "holding " << mutex.hold().key() << " with fencing token " << mutex.hold().token() << "\n";
  // Writes that must only land while we hold the lock go through guarded().
  auto r = mutex.hold().guarded(etcd::Txn().then(etcd::Op::put("/example/orders/last-writer", "me"))).wait();
  std::cout << "guarded write: " << (r.ok() ? "applied" : r.status().to_string()) << "\n";
  return 0;
}
