// The values a work queue stores (internal): an item's record and a dead
// letter. The formats are documented in include/etcd/recipes/work_queue.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace etcd::recipes::detail {

// What the first line of an item's record says.
struct WorkRecord {
  // Not ready before this time (ms since the epoch, system_clock); 0: now.
  int64_t not_before_ms = 0;
  // `deliveries_base` deliveries had been counted when the item's version
  // was `version_base`.
  int64_t deliveries_base = 0;
  int64_t version_base = 1;
  // Where the payload starts in the stored value.
  size_t payload_offset = 0;

  // Deliveries so far of an item whose key is at `version`.
  int64_t deliveries(int64_t version) const { return deliveries_base + (version - version_base); }
};

// The record stored for `payload`.
std::string encode_work_record(std::string_view payload, int64_t not_before_ms = 0, int64_t deliveries_base = 0,
                               int64_t version_base = 1);
// Reads a stored value: a value without the record's first line is a bare
// payload (deliveries counted from version 1, no delay).
WorkRecord parse_work_record(std::string_view stored);
// Whether `stored` opens with a record's first line (its tag), whatever
// its fields say: a value a work queue wrote.
bool is_work_record(std::string_view stored);
inline std::string_view work_payload(std::string_view stored, const WorkRecord& record) {
  return stored.substr(record.payload_offset);
}

struct DeadRecord {
  int64_t deliveries = 0;
  int64_t since_ms = 0;
  std::string reason{};
  std::string payload{};
};

// The dead letter stored for `payload` (newlines in `reason` become spaces).
std::string encode_dead_record(std::string_view payload, int64_t deliveries, int64_t since_ms, std::string_view reason);
// None if `stored` is not a dead letter's record.
std::optional<DeadRecord> parse_dead_record(std::string_view stored);

}  // namespace etcd::recipes::detail
