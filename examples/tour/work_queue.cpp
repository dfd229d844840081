// A work queue (etcd/recipes/work_queue.h): at least once, in the blocking
// and the co_await styles. Items stay in etcd until acked; a delivery whose
// claim was lost cannot ack; too many deliveries end in the dead letters.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "etcd/recipes/work_queue.h"
#include "tour.h"

ETCD_TOUR_SECTION(work_queue) {
  etcd::recipes::WorkQueueOptions options;
  options.visibility_timeout = std::chrono::seconds(10);
  options.max_deliveries = 2;
  etcd::recipes::DistributedWorkQueue work(client, prefix + "thumbnails", options);
  work.enqueue_all({"img-1", "img-2"}).wait().value();

  etcd::recipes::WorkItem first = work.receive().wait().value();
  tour::expect(first.value() == "img-1" && first.attempt() == 1, "the first item, first delivery");
  tour::expect(first.ack().wait().value(), "acked: it is gone");

  // A handler that keeps failing gives the item back; after max_deliveries
  // it goes to the dead letters instead of a third delivery.
  for (int attempt = 1; attempt <= 2; ++attempt) {
    etcd::recipes::WorkItem again = work.receive().wait().value();
    tour::expect(again.value() == "img-2" && again.attempt() == attempt, "delivery " + std::to_string(attempt));
    tour::expect(again.requeue().wait().value(), "requeued, in its place");
  }
  tour::expect(!work.receive_for(std::chrono::milliseconds(300)).has_value(), "nothing ready: it is a dead letter");
  auto dead = work.dead_letters().wait().value();
  tour::expect(dead.size() == 1 && dead[0].value == "img-2" && dead[0].deliveries == 2, "listed with its deliveries");
  tour::expect(work.requeue_dead(dead[0].id).wait().value(), "back in the queue with fresh deliveries");
  etcd::recipes::WorkItem revived = work.receive().wait().value();
  tour::expect(revived.attempt() == 1, "delivered afresh");
  tour::expect(revived.ack().wait().value(), "and acked");

  // The typed form stores values through a Codec<T>; a delay is honoured.
  etcd::recipes::TypedWorkQueue<std::int64_t> numbers(client, prefix + "numbers");
  numbers.enqueue(42, std::chrono::milliseconds(200)).wait().value();
  tour::expect(!numbers.try_receive().wait().value().has_value(), "not ready before its delay");
  auto later = numbers.receive().timeout(std::chrono::seconds(5)).wait().value();
  tour::expect(later.value() == 42, "ready after its delay, decoded");
  tour::expect(later.ack().wait().value(), "acked");

  work.close();
  numbers.close();
  client.del(prefix, {.prefix = true}).wait().value();
}

ETCD_TOUR_TASK(work_queue_coawait) {
  etcd::recipes::DistributedWorkQueue work(client, prefix + "jobs");
  (co_await work.enqueue("job-1")).value();
  etcd::recipes::WorkItem item = (co_await work.receive()).value();
  tour::expect(item.value() == "job-1", "received with co_await");
  tour::expect(!item.stop_token().stop_requested(), "its claim holds");
  tour::expect((co_await item.ack()).value(), "acked with co_await");
  auto none = co_await work.try_receive();
  tour::expect(none.ok() && !none->has_value(), "nothing left");
  work.close();
  // Braced options inside co_await: they own no memory (docs/client.md).
  (co_await client.del(prefix, {.prefix = true})).value();
  co_return;
}
