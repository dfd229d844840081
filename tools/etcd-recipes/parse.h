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

// Lease ids are printed as 16 hex digits (like etcdctl). Accepted input:
// "0x"-prefixed hex, 16 digits (the printed form, read as hex), anything
// containing a-f (hex), otherwise decimal.
std::optional<int64_t> parse_lease_id(std::string_view text);

}  // namespace etcd_cli
