// DistributedPriorityQueue: the queue engine (queue.cpp) with the priority
// in front of each item key and the consumers ordering by it first.
// Semantics and key layout: etcd/recipes/priority_queue.h.
#include "etcd/recipes/priority_queue.h"

#include <cstdio>

#include "item_key.h"

namespace etcd::recipes {

namespace detail {

namespace {
// "<4 hex digits>-": what an item key begins with after NAME/items/.
constexpr size_t kPriorityDigits = 4;
}  // namespace

Result<std::string> priority_key_prefix(int64_t priority) {
  if (priority < DistributedPriorityQueue::kMinPriority || priority > DistributedPriorityQueue::kMaxPriority) {
    return InvalidArgument("priority " + std::to_string(priority) + " is out of range: priorities are " +
                           std::to_string(DistributedPriorityQueue::kMinPriority) + ".." +
                           std::to_string(DistributedPriorityQueue::kMaxPriority) + ", lower served first");
  }
  char buf[kPriorityDigits + 2];
  std::snprintf(buf, sizeof buf, "%04x-", static_cast<unsigned>(priority));
  return std::string(buf);
}

uint32_t priority_of_item(std::string_view item) {
  constexpr auto kLowest = static_cast<uint32_t>(DistributedPriorityQueue::kMaxPriority);
  // Only the form we write counts: upper-case digits would sort apart from
  // ours in etcd's byte order, and etcdctl would list them out of place.
  if (item.size() <= kPriorityDigits || item[kPriorityDigits] != '-') return kLowest;
  const auto priority = parse_hex(item.substr(0, kPriorityDigits));
  return priority ? static_cast<uint32_t>(*priority) : kLowest;
}

}  // namespace detail

DistributedPriorityQueue::DistributedPriorityQueue(Client client, std::string name)
    : DistributedPriorityQueue(std::move(client), std::move(name), RecipeOptions()) {}

DistributedPriorityQueue::DistributedPriorityQueue(Client client, std::string name, RecipeOptions options)
    : QueueBase(std::move(client), "DistributedPriorityQueue", std::move(name), std::move(options), nullptr,
                &detail::priority_of_item) {}

Call<Enqueued> DistributedPriorityQueue::enqueue(std::string value, int64_t priority) {
  std::vector<std::string> one;
  one.push_back(std::move(value));
  return enqueue_all(std::move(one), priority);
}

Call<Enqueued> DistributedPriorityQueue::enqueue_all(std::vector<std::string> values, int64_t priority) {
  auto prefix = detail::priority_key_prefix(priority);
  if (!prefix.ok()) return refuse(std::move(prefix).status());
  return enqueue_encoded(std::move(values), std::move(*prefix));
}

}  // namespace etcd::recipes
