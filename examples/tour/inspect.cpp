// Inspection (etcd/recipes/inspect.h): the keys under a prefix read back as
// recipes — who holds the lock and with which fencing token, how deep the
// queue is — the plain model `etcd-recipes inspect` prints, and that a
// dashboard or an exporter of your own can render the same way.
#include <algorithm>
#include <string>
#include <utility>

#include "etcd/recipes/inspect.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/queue.h"
#include "tour.h"

ETCD_TOUR_SECTION(inspect) {
  namespace in = etcd::recipes::inspect;
  etcd::recipes::DistributedMutex lock(client, prefix + "lock");
  etcd::recipes::Hold hold = lock.acquire().wait().value();
  etcd::recipes::DistributedQueue jobs(client, prefix + "jobs");
  jobs.enqueue_all({"resize:42", "mail:1"}).wait().value();

  // One read at one revision, then the recognizer: no I/O of its own.
  etcd::GetResponse got = client.get(prefix, {.prefix = true}).wait().value();
  const in::Report report = in::build_report(std::move(got.kvs), got.header.revision);
  auto find = [&](in::Kind kind, const std::string& name) {
    auto it = std::find_if(report.recipes.begin(), report.recipes.end(),
                           [&](const in::Recipe& r) { return r.kind == kind && r.name == name; });
    tour::expect(it != report.recipes.end(), std::string(in::kind_id(kind)) + " " + name + " recognized");
    return *it;
  };
  const in::Recipe mutex = find(in::Kind::kLockOrElection, prefix + "lock");
  tour::expect(in::total(mutex, in::Role::kHolder) == 1, "one holder");
  tour::expect(
      mutex.entries.front().role == in::Role::kHolder && mutex.entries.front().kv.create_revision == hold.token(),
      "the holder's key, whose create revision is the fencing token");
  const in::Recipe queue = find(in::Kind::kQueue, prefix + "jobs");
  tour::expect(in::total(queue, in::Role::kItem) == 2, "two items");
  tour::expect(queue.entries.front().kv.value == "resize:42", "in the order they are served");

  tour::expect(hold.release().wait().value(), "released intact");
  jobs.close();
  client.del(prefix, {.prefix = true}).wait().value();
}
