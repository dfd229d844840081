#include "hex_number.h"

#include <cstdio>

namespace etcd::recipes::detail {

std::string hex16(uint64_t n) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(n));
  return buf;
}

std::optional<uint64_t> parse_hex16(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  return parse_hex(text);
}

std::optional<uint64_t> parse_hex(std::string_view text) {
  if (text.empty() || text.size() > 16) return std::nullopt;
  uint64_t n = 0;
  for (char c : text) {
    n <<= 4;
    if (c >= '0' && c <= '9') {
      n |= static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      n |= static_cast<uint64_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
  }
  return n;
}

}  // namespace etcd::recipes::detail
