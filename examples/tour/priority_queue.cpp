// A priority queue (etcd/recipes/priority_queue.h): lower priorities first,
// commit order within one, each item to exactly one consumer.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "etcd/recipes/priority_queue.h"
#include "tour.h"

ETCD_TOUR_SECTION(priority_queue) {
  etcd::recipes::DistributedPriorityQueue jobs(client, prefix + "jobs");
  jobs.enqueue("resize:42", 10).wait().value();
  jobs.enqueue_all({"mail:1", "mail:2"}, 200).wait().value();  // one Txn, in this order
  jobs.enqueue("page:oncall", 0).wait().value();
  tour::expect(jobs.dequeue().wait().value() == "page:oncall", "the lowest priority comes first");
  tour::expect(jobs.dequeue().wait().value() == "resize:42", "then the next priority");
  tour::expect(jobs.dequeue_for(std::chrono::seconds(5)) == std::optional<std::string>("mail:1"),
               "commit order within a priority");
  tour::expect(jobs.try_dequeue().wait().value() == std::optional<std::string>("mail:2"), "and the rest");
  tour::expect(!jobs.try_dequeue().wait().value().has_value(), "then it is empty");

  // A priority outside 0..65535 is refused before anything is written.
  auto refused = jobs.enqueue("never", 70000).wait();
  tour::expect(refused.status().is(etcd::Errc::kBadArgument), "out of range: " + refused.status().to_string());

  // The typed form stores values through a Codec<T> (integers as decimal text).
  etcd::recipes::TypedPriorityQueue<std::int64_t> numbers(client, prefix + "numbers");
  numbers.enqueue(7, 3).wait().value();
  numbers.enqueue(1, 1).wait().value();
  tour::expect(numbers.dequeue().wait().value() == 1, "a typed priority queue orders the same way");
  tour::expect(numbers.dequeue().wait().value() == 7, "and decodes its values");

  jobs.close();
  numbers.close();
  client.del(prefix, {.prefix = true}).wait().value();
}
