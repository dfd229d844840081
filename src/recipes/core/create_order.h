// CreateOrder (internal): the keys of a PrefixView in etcd commit order —
// by create revision, and by key among the keys one transaction created —
// for recipes whose order is "first created, first served" (the queues).
//
// The order never comes from a sorted Range: etcd sorts a range by create
// revision only after loading every key of it (O(n) per read) and with an
// unstable sort, so keys that share a revision could come back in any
// order. The view's events carry each key's create revision; this index
// keeps them sorted as they arrive.
//
// Not thread-safe: it is fed and read on the owner's strand, where the
// view's batches arrive.
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "prefix_view.h"

namespace etcd::recipes::detail {

class CreateOrder {
 public:
  // (create revision, key): the order of the index.
  using Position = std::pair<int64_t, std::string>;
  using const_iterator = std::set<Position>::const_iterator;

  // Applies one batch of the view. A kInitialized batch without events
  // (the view's initial_events off) is read from batch.state.
  // Keys `accept` refuses are not indexed (a view that holds other keys
  // besides the ordered ones).
  void apply(const ViewBatch& batch, const std::function<bool(std::string_view)>& accept = {}) {
    if (batch.kind == ViewBatch::Kind::kInitialized && batch.events.empty() && batch.state) {
      for (const auto& [key, entry] : *batch.state) {
        if (!accept || accept(key)) order_.emplace(entry.create_revision, key);
      }
      return;
    }
    for (const auto& ev : batch.events) {
      if (accept && !accept(ev.key)) continue;
      switch (ev.type) {
        case ViewEvent::Type::kAdded:
          order_.emplace(ev.entry.create_revision, ev.key);
          break;
        case ViewEvent::Type::kRemoved:
          order_.erase(Position(ev.entry.create_revision, ev.key));
          break;
        case ViewEvent::Type::kUpdated:
          // A key deleted and created again between two reads comes back
          // with a new create revision: a new place in the order.
          if (ev.previous) order_.erase(Position(ev.previous->create_revision, ev.key));
          order_.emplace(ev.entry.create_revision, ev.key);
          break;
      }
    }
  }

  // Drops a key the owner knows is gone (its own successful delete) before
  // the view reports it; the view's later removal is then a no-op.
  void erase(int64_t create_revision, const std::string& key) { order_.erase(Position(create_revision, key)); }

  bool contains(int64_t create_revision, const std::string& key) const {
    return order_.count(Position(create_revision, key)) != 0;
  }

  bool empty() const { return order_.empty(); }
  size_t size() const { return order_.size(); }
  const_iterator begin() const { return order_.begin(); }
  const_iterator end() const { return order_.end(); }

 private:
  std::set<Position> order_;
};

}  // namespace etcd::recipes::detail
