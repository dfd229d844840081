// The client in a few lines: put, get, a transaction, a watch and a lease.
//   quick_start 127.0.0.1:2379
#include <iostream>

#include "etcd/client.h"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  etcd::ClientOptions options;
  options.endpoints = {argc > 1 ? argv[1] : "127.0.0.1:2379"};
  etcd::Client client(options);

  auto put = client.put("/example/greeting", "hello").timeout(2s).wait();
  if (!put.ok()) {
    std::cerr << "put failed: " << put.status().to_string() << "\n";
    return 1;
  }
  std::cout << "put at revision " << put->header.revision << "\n";

  etcd::Watcher watcher = client.watch("/example/", {.prefix = true}, [](etcd::Result<etcd::WatchResponse> r) {
    if (!r.ok()) return;
    for (const auto& e : r->events) {
      std::cout << (e.type == etcd::Event::Type::kPut ? "PUT " : "DELETE ") << e.kv.key << "\n";
    }
  });
  watcher.wait_created(etcd::Clock::now() + 2s);

  auto txn = etcd::Txn().when(etcd::Compare::absent("/example/once")).then(etcd::Op::put("/example/once", "first"));
  std::cout << "created once: " << std::boolalpha << client.txn(txn).wait().value().succeeded << "\n";

  etcd::Lease lease = client.lease(5s).wait().value();
  client.put("/example/alive", "yes", {.lease = lease.id()}).wait().value();
  auto got = client.get("/example/", {.prefix = true}).wait().value();
  for (const auto& kv : got.kvs) std::cout << kv.key << " = " << kv.value << "\n";
  (void)client.del("/example/", {.prefix = true}).wait();
  return 0;
}
