// Every options struct of the client passed as a braced temporary inside a
// co_await expression, with its byte fields set: the form GCC 12 destroys
// twice when the struct owns memory. Built with AddressSanitizer by the
// consumer test (tests/consumer), it must run clean.
//   braced_options 127.0.0.1:2379
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "etcd/client.h"
#include "etcd/task.h"

namespace {

using namespace std::chrono_literals;

void expect(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error("expectation failed: " + what);
}

etcd::Task<void> run(etcd::Client client) {
  const std::string p = "/braced/p/";
  const std::string end = etcd::prefix_range_end(p);
  for (const char* k : {"a", "b", "c"}) expect((co_await client.put(p + k, "v")).ok(), "put");

  // GetOptions: a prefix, a range end, both with the other fields.
  auto all = co_await client.get(p, {.prefix = true});
  expect(all.ok() && all->kvs.size() == 3, "get {.prefix = true}");
  auto ranged = co_await client.get(p + "a", {.range_end = end, .limit = 2, .keys_only = true});
  expect(ranged.ok() && ranged->kvs.size() == 2 && ranged->more, "get {.range_end = end, .limit = 2}");
  auto from = co_await client.get(p + "b", {.range_end = etcd::kFromKey, .count_only = true});
  expect(from.ok() && from->count >= 2, "get {.range_end = kFromKey}");
  auto literal = co_await client.get(p + "a", {.range_end = "/braced/p/c", .sort_order = etcd::SortOrder::kDescend});
  expect(literal.ok() && literal->kvs.size() == 2 && literal->kvs[0].key == p + "b", "get {.range_end = \"...\"}");
  auto timed = co_await client.get(p, {.prefix = true, .serializable = true}).timeout(2s);
  expect(timed.ok() && timed->kvs.size() == 3, "get {...}.timeout(2s)");

  // PutOptions.
  auto put = co_await client.put(p + "a", "w", {.prev_kv = true});
  expect(put.ok() && put->prev_kv && put->prev_kv->value == "v", "put {.prev_kv = true}");

  // Ops with braced options, inside a txn inside co_await.
  auto txn = co_await client.txn(etcd::Txn()
                                     .when(etcd::Compare::exists(p + "a"))
                                     .then(etcd::Op::get(p, {.prefix = true, .keys_only = true}),
                                           etcd::Op::get(p + "a", {.range_end = end, .count_only = true}))
                                     .otherwise(etcd::Op::del(p, {.range_end = end})));
  expect(txn.ok() && txn->succeeded && txn->responses.at(0).get().kvs.size() == 3 &&
             txn->responses.at(1).get().count == 3,
         "txn of ops with braced options");

  // WatchOptions: braced in a coroutine (watch() returns a Watcher, so it
  // is never the operand of co_await).
  auto events = std::make_shared<std::atomic<int>>(0);
  etcd::Watcher w = client.watch(p, {.range_end = end, .prev_kv = true}, [events](etcd::Result<etcd::WatchResponse> r) {
    if (r.ok()) events->fetch_add(static_cast<int>(r->events.size()));
  });
  expect(w.wait_created(etcd::Clock::now() + 5s), "watch created");

  // DeleteOptions: a range end, then a prefix.
  const std::string b = p + "b";
  auto one = co_await client.del(p + "a", {.range_end = b, .prev_kv = true});
  expect(one.ok() && one->deleted == 1 && one->prev_kvs.size() == 1, "del {.range_end = ..., .prev_kv = true}");
  auto rest = co_await client.del(p, {.prefix = true, .prev_kv = true});
  expect(rest.ok() && rest->deleted == 2, "del {.prefix = true}");

  const auto deadline = etcd::Clock::now() + 5s;
  while (events->load() < 3 && etcd::Clock::now() < deadline) co_await etcd::sleep_for(5ms);
  expect(events->load() == 3, "three delete events");
}

}  // namespace

int main(int argc, char** argv) {
  etcd::ClientOptions options;
  options.endpoints = {argc > 1 ? argv[1] : "127.0.0.1:2379"};
  etcd::Client client(options);
  try {
    etcd::sync_wait(run(client));
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::cout << "every braced options form ran clean\n";
  return 0;
}
