// How a recipe's keys hang under its NAME (internal): NAME/SEGMENT for a
// key of its own, NAME/SEGMENT/ for a directory of many. The segments
// themselves are named once per family, beside the recipes that write
// them (locks/lock_keys.h, queues/queue_keys.h, barriers/barrier_keys.h,
// counters/counter_keys.h), and read by the recipes and by the inspector
// (etcd/recipes/inspect.h) alike.
#pragma once

#include <string>
#include <string_view>

namespace etcd::recipes::detail {

// NAME/SEGMENT.
inline std::string key_under(std::string_view name, std::string_view segment) {
  std::string key;
  key.reserve(name.size() + 1 + segment.size());
  key.append(name).append("/").append(segment);
  return key;
}

// NAME/SEGMENT/: the prefix of a directory of keys.
inline std::string dir_under(std::string_view name, std::string_view segment) { return key_under(name, segment) + "/"; }

}  // namespace etcd::recipes::detail
