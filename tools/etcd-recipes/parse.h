// The command-line tool's pure parsers: no CLI11, no client, so the unit
// tests can link them (library etcd_cli_util).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

namespace etcd_cli {

// The longest duration the tool represents: 100 years. A deadline this far
// ahead still fits every clock (nanoseconds in 64 bits).
inline constexpr std::chrono::milliseconds kMaxDuration = std::chrono::hours(876'000);
inline constexpr std::string_view kMaxDurationText = "876000h (100 years)";

// Go-style durations as etcdctl takes them ("500ms", "5s", "1m30s", "1.5h");
// a bare number means seconds. Must be positive. A longer one than
// kMaxDuration saturates to kMaxDuration: for a wait that is "forever".
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Whether `text` is a valid duration longer than kMaxDuration: options for
// which "forever" makes no sense (a delay, a TTL) refuse it.
bool past_max_duration(std::string_view text);

// Lease ids are hex, always (as etcdctl prints and reads them): 1 to 16 hex
// digits, optionally after "0x". Never guessed from the digits: "10" is
// sixteen. Zero is not a lease.
std::optional<int64_t> parse_lease_id(std::string_view text);

// A server's listening address, "HOST:PORT" ("[::1]:PORT" for IPv6; PORT 0
// lets the system pick a free one). HOST is an address or a name; empty
// is not allowed (say 0.0.0.0 or [::] for every interface).
struct HostPort {
  std::string host;  // without brackets
  int port = 0;
};
std::optional<HostPort> parse_host_port(std::string_view text);

// Whether `host` (as parse_host_port gives it) is this host's loopback
// only: localhost, 127.0.0.0/8 or ::1. Every other name or address, the
// wildcard ones included, may be reached from other hosts.
bool is_loopback_host(std::string_view host);

// Whether the key or recipe name `name` lies within the path `path`: it
// is `path` or under `path` + "/" (never a sibling like path-x); every
// name lies within the empty path. How `inspect`, `exporter` and
// `dashboard` take a PREFIX.
bool key_within(std::string_view name, std::string_view path);

// The candidate closest to `word` (edits: insert, delete, replace, swap
// two neighbours), if it is close enough to be a likely typo: at most 1
// edit for words of up to 4 letters, 2 for longer ones. Empty if none.
std::string nearest_word(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace etcd_cli
