// A semaphore's permit count and where it is stored (internal): what both
// of DistributedSemaphore's layouts check in their creation Txn, and what
// makes them refuse each other (semaphore.h, "Key layout" and "Resizing").
#pragma once

#include <atomic>
#include <charconv>
#include <optional>
#include <string>

#include "etcd/kv.h"
#include "etcd/status.h"

namespace etcd::recipes::detail {

class PermitCount {
 public:
  PermitCount(std::string key_in, bool ordered_in, int n) : key(std::move(key_in)), ordered(ordered_in), current_(n) {}

  // NAME/permits: stored without a lease by the first creation; written
  // again only by a resize.
  const std::string key;
  const bool ordered;

  // The count as this object knows it: the one it asked for, or the one it
  // adopted from a resized NAME/permits.
  int n() const { return current_.load(std::memory_order_acquire); }
  // Its value: "N" (the holders layout) or "N ordered".
  std::string text(int count) const { return std::to_string(count) + (ordered ? " ordered" : ""); }
  std::string stored() const { return text(n()); }

  // The count in a stored value of this layout, or nothing (the other
  // layout's, or not a count).
  std::optional<int> parse(const std::string& value) const {
    const std::string_view suffix = ordered ? " ordered" : "";
    std::string_view v = value;
    if (v.size() <= suffix.size() || v.substr(v.size() - suffix.size()) != suffix) return std::nullopt;
    v.remove_suffix(suffix.size());
    int count = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), count);
    if (ec != std::errc() || end != v.data() + v.size() || count < 1 || text(count) != value) return std::nullopt;
    return count;
  }

  // Adopts the count of a stored NAME/permits that a resize wrote (version
  // > 1) in this layout: true if it did. A count stored once (never
  // resized) that differs is a mismatch, not adopted.
  bool adopt(const KeyValue* kv) {
    if (kv == nullptr || kv->version < 2) return false;
    const auto count = parse(kv->value);
    if (!count) return false;
    current_.store(*count, std::memory_order_release);
    return true;
  }

  // The count at one anchored read (`kv`: NAME/permits as read there):
  // adopted when resized, else the one this object knows.
  int at(const KeyValue* kv) {
    if (kv != nullptr && kv->value != stored()) adopt(kv);
    return n();
  }

  // An object that asks for another count, or for the other layout.
  Status mismatch(const std::string& found) const {
    return Status(StatusCode::kFailedPrecondition,
                  "permit count mismatch: " + key + " stores " + found + ", this object asks for " + stored(),
                  Errc::kMismatch);
  }

 private:
  std::atomic<int> current_;
};

}  // namespace etcd::recipes::detail
