// The test oracle for the prefix view's events: applying them in order to
// the state they were computed from must give the state they lead to.
#pragma once

#include <vector>

#include "recipes/core/prefix_view.h"

namespace etcd::test {

// Applies `events` in order to a copy of `map`.
inline recipes::detail::ViewMap replay(recipes::detail::ViewMap map,
                                       const std::vector<recipes::detail::ViewEvent>& events) {
  for (const auto& ev : events) {
    if (ev.type == recipes::detail::ViewEvent::Type::kRemoved) {
      map.erase(ev.key);
    } else {
      map[ev.key] = ev.entry;
    }
  }
  return map;
}

}  // namespace etcd::test
