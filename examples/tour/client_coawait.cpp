// The client's calls and the Txn builder in the co_await style, exactly in
// the forms docs/client.md shows, named and braced. GCC 12 miscompiled some
// of them (defaulted class-type parameters, options owning memory); ASan
// checks them here.
#include <atomic>
#include <chrono>
#include <memory>

#include "tour.h"

using namespace std::chrono_literals;

namespace {

// A watch delivers on the client's executor; a coroutine polls the count
// with a deadline.
etcd::Task<bool> wait_for_count(const std::atomic<int>& count, int at_least, std::chrono::milliseconds limit) {
  const auto deadline = etcd::Clock::now() + limit;
  while (count.load() < at_least) {
    if (etcd::Clock::now() > deadline) co_return false;
    co_await etcd::sleep_for(5ms);
  }
  co_return true;
}

}  // namespace

ETCD_TOUR_TASK(coawait_kv) {
  const std::string k = prefix + "k";
  auto put = co_await client.put(k, "v1");
  tour::expect(put.ok(), "put");
  etcd::PutOptions with_prev{.prev_kv = true};
  auto put2 = co_await client.put(k, "v2", with_prev);
  tour::expect(put2.ok() && put2->prev_kv && put2->prev_kv->value == "v1", "put with prev_kv");
  auto got = co_await client.get(k);
  tour::expect(got.ok() && got->first()->value == "v2", "get");
  etcd::GetOptions all{.prefix = true};
  auto listed = co_await client.get(prefix, all);
  auto braced = co_await client.get(prefix, {.prefix = true, .keys_only = true});
  tour::expect(braced.ok() && braced->kvs.size() == 1, "get by prefix, braced");
  tour::expect(listed.ok() && listed->kvs.size() == 1, "get by prefix");
  auto timed = co_await client.get(k).timeout(2s);
  tour::expect(timed.ok(), "get with a timeout");
  auto del = co_await client.del(k);
  tour::expect(del.ok() && del->deleted == 1, "del");
  etcd::DeleteOptions everything{.prefix = true};
  auto del2 = co_await client.del(prefix, everything);
  tour::expect(del2.ok(), "del by prefix");
}

ETCD_TOUR_TASK(coawait_txn_builder) {
  const std::string k = prefix + "job";
  // Every builder form, as a temporary inside the co_await expression.
  auto created = co_await client.txn(
      etcd::Txn().when(etcd::Compare::absent(k)).then(etcd::Op::put(k, "queued")).otherwise(etcd::Op::get(k)));
  tour::expect(created.ok() && created->succeeded, "create if absent");
  auto guarded = co_await client.txn(
      etcd::Txn()
          // Several at once: the variadic form (GCC 12 rejects
          // a braced list inside co_await).
          .when(etcd::Compare::exists(k), etcd::Compare::value(k) == std::string("queued"),
                etcd::Compare::version(k) > 0, etcd::Compare::mod_revision(k) > 0, etcd::Compare::lease(k) == 0,
                etcd::Compare::create_revision(prefix).with_prefix() > 0)
          .then(etcd::Op::put(k, "running"), etcd::Op::get(k))
          .otherwise(etcd::Op::del(k)));
  tour::expect(guarded.ok() && guarded->succeeded && guarded->responses.at(1).get().first()->value == "running",
               "compares and a then-branch of two ops");
  auto nested = co_await client.txn(
      etcd::Txn().then(etcd::Op::txn(etcd::Txn().when(etcd::Compare::exists(k)).then(etcd::Op::get(k)))));
  tour::expect(nested.ok() && nested->responses.at(0).txn().succeeded, "nested txn");
  etcd::GetOptions keys_only{.keys_only = true};
  etcd::PutOptions prev{.prev_kv = true};
  etcd::DeleteOptions del_prev{.prev_kv = true};
  (void)co_await client.put(prefix + "old", "y");
  // (One txn may not write a key twice: etcd refuses duplicate keys.)
  auto with_options =
      co_await client.txn(etcd::Txn().then(etcd::Op::get(k, keys_only), etcd::Op::put(prefix + "other", "x", prev),
                                           etcd::Op::del(prefix + "old", del_prev)));
  tour::expect(with_options.ok(), "ops with options: " + with_options.status().to_string());
  tour::expect(with_options->responses.at(0).get().first()->value.empty(), "keys_only read has no value");
  tour::expect(with_options->responses.at(2).del().prev_kvs.size() == 1, "delete with prev_kv");
  // The form that crashed GCC 12 builds: a defaulted DeleteOptions inside co_await.
  auto deleted = co_await client.txn(etcd::Txn().then(etcd::Op::del(k)));
  tour::expect(deleted.ok() && deleted->responses.at(0).del().deleted == 1, "txn delete");
}

ETCD_TOUR_TASK(coawait_leases) {
  auto granted = co_await client.lease_grant(std::chrono::seconds(10));
  tour::expect(granted.ok(), "lease_grant");
  auto renewed = co_await client.lease_keep_alive_once(granted->id);
  tour::expect(renewed.ok() && renewed->ttl > 0, "keep-alive once");
  auto ttl = co_await client.lease_time_to_live(granted->id, true);
  tour::expect(ttl.ok() && ttl->granted_ttl == 10, "time to live");
  auto all = co_await client.lease_leases();
  tour::expect(all.ok() && !all->leases.empty(), "lease list");
  auto revoked = co_await client.lease_revoke(granted->id);
  tour::expect(revoked.ok(), "lease_revoke");

  etcd::Lease lease = (co_await client.lease(std::chrono::seconds(5))).value();
  auto lost = std::make_shared<std::atomic<int>>(0);
  etcd::Subscription sub = lease.on_lost([lost](const etcd::Status&) { lost->fetch_add(1); });
  etcd::PutOptions on_lease{.lease = lease.id()};
  tour::expect((co_await client.put(prefix + "alive", "yes", on_lease)).ok(), "put under the lease");
  auto gone = co_await lease.revoke();
  tour::expect(gone.ok(), "Lease::revoke");
  tour::expect((co_await client.get(prefix + "alive"))->kvs.empty(), "the key went with the lease");
  tour::expect(co_await wait_for_count(*lost, 1, 5s), "on_lost ran");
}

ETCD_TOUR_TASK(coawait_watch) {
  auto events = std::make_shared<std::atomic<int>>(0);
  etcd::WatchOptions under_prefix{.prefix = true};
  etcd::Watcher w = client.watch(prefix, under_prefix, [events](etcd::Result<etcd::WatchResponse> r) {
    if (r.ok()) events->fetch_add(static_cast<int>(r->events.size()));
  });
  tour::expect(w.wait_created(etcd::Clock::now() + 5s), "watch created");
  (void)co_await client.put(prefix + "a", "1");
  (void)co_await client.put(prefix + "b", "2");
  (void)co_await client.txn(etcd::Txn().then(etcd::Op::del(prefix + "a")));
  tour::expect(co_await wait_for_count(*events, 3, 5s), "three events");
}

ETCD_TOUR_TASK(coawait_cluster_and_tasks) {
  tour::expect((co_await client.ping()).ok(), "ping");
  tour::expect((co_await client.status())->leader != 0, "status");
  tour::expect(!(co_await client.member_list())->members.empty(), "member list");
  auto rev = (co_await client.put(prefix + "c", "1"))->header.revision;
  tour::expect((co_await client.compact(rev)).ok(), "compact");
  // A detached task, and a stop-aware sleep.
  auto done = std::make_shared<std::atomic<int>>(0);
  etcd::spawn(client, [](etcd::Client c, std::string k, std::shared_ptr<std::atomic<int>> d) -> etcd::Task<void> {
    (void)co_await c.put(k, "from a spawned task");
    d->store(1);
  }(client, prefix + "spawned", done));
  tour::expect(co_await wait_for_count(*done, 1, 5s), "spawned task ran");
  std::stop_source stop;
  stop.request_stop();
  etcd::Status slept = co_await etcd::sleep_for(std::chrono::seconds(30), stop.get_token());
  tour::expect(slept.code() == etcd::StatusCode::kCancelled, "a stopped sleep is cancelled");
}
