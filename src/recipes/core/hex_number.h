// Numbers in keys (internal): fixed-width lower-case hex, so that etcd's
// byte order of keys (and of Compare::value) is the numbers' order — the
// queue items' and the ordered contenders' revisions, lease ids and
// sequence numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace etcd::recipes::detail {

// 16 lower-case hex digits.
std::string hex16(uint64_t n);
// The number written by hex16, if `text` is one.
std::optional<uint64_t> parse_hex16(std::string_view text);
// The number `text` writes in 1 to 16 lower-case hex digits (upper-case
// ones would sort apart from ours in etcd's byte order), if it does.
std::optional<uint64_t> parse_hex(std::string_view text);

}  // namespace etcd::recipes::detail
