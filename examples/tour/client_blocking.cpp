// The client's calls in the blocking style (wait()), as the README shows them.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "tour.h"

using namespace std::chrono_literals;

ETCD_TOUR_SECTION(blocking_kv) {
  auto put = client.put(prefix + "a", "1").timeout(2s).wait();
  tour::expect(put.ok(), "put: " + put.status().to_string());
  client.put(prefix + "b", "2", {.prev_kv = true}).wait().value();
  auto got = client.get(prefix + "a").wait();
  tour::expect(got.ok() && got->first() && got->first()->value == "1", "get a");
  int n = 0;
  // Chaining is safe: value() on the temporary Result yields the response.
  for (auto& kv : client.get(prefix, {.prefix = true}).wait().value().kvs) n += kv.key.starts_with(prefix);
  tour::expect(n == 2, "two keys under the prefix");
  auto del = client.del(prefix, {.prefix = true}).wait();
  tour::expect(del.ok() && del->deleted == 2, "delete by prefix");
}

ETCD_TOUR_SECTION(blocking_txn) {
  auto txn = etcd::Txn()
                 .when(etcd::Compare::absent(prefix + "job"))
                 .then(etcd::Op::put(prefix + "job", "queued"))
                 .otherwise(etcd::Op::get(prefix + "job"));
  tour::expect(client.txn(txn).wait().value().succeeded, "first txn creates");
  auto again = client.txn(txn).wait().value();
  tour::expect(!again.succeeded && again.responses.at(0).get().first()->value == "queued", "second txn reads");
  tour::expect(
      client.txn(etcd::Txn().then(etcd::Op::del(prefix + "job"))).wait().value().responses.at(0).del().deleted == 1,
      "txn delete");
}

ETCD_TOUR_SECTION(blocking_lease_and_watch) {
  std::mutex mu;
  std::condition_variable cv;
  int events = 0;
  etcd::Watcher w = client.watch(prefix, {.prefix = true}, [&](etcd::Result<etcd::WatchResponse> r) {
    if (!r.ok()) return;
    std::lock_guard lock(mu);
    events += static_cast<int>(r->events.size());
    cv.notify_all();
  });
  tour::expect(w.wait_created(etcd::Clock::now() + 5s), "watch created");
  etcd::Lease lease = client.lease(5s).wait().value();
  etcd::Subscription lost = lease.on_lost([](const etcd::Status&) {});
  client.put(prefix + "alive", "yes", {.lease = lease.id()}).wait().value();
  tour::expect(lease.revoke().wait().ok(), "revoke");
  std::unique_lock lock(mu);
  // The put, then the delete the revocation caused.
  tour::expect(cv.wait_for(lock, 5s, [&] { return events >= 2; }), "watch saw put and delete");
}
