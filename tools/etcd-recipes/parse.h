// The command-line tool's pure parsers: no CLI11, no client, so the unit
// tests can link them (library etcd_cli_util).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace etcd_cli {

// Go-style durations as etcdctl takes them ("500ms", "5s", "1m30s", "1.5h");
// a bare number means seconds. Must be positive.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Lease ids are hex, always (as etcdctl prints and reads them): 1 to 16 hex
// digits, optionally after "0x". Never guessed from the digits: "10" is
// sixteen. Zero is not a lease.
std::optional<int64_t> parse_lease_id(std::string_view text);

}  // namespace etcd_cli
