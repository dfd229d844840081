#include "item_key.h"

#include <cstdio>

namespace etcd::recipes::detail {

std::string hex16(uint64_t n) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(n));
  return buf;
}

std::optional<uint64_t> parse_hex16(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
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

std::string item_name(std::string_view rank, int64_t revision, std::string_view producer, uint64_t seq) {
  std::string name;
  name.reserve(rank.size() + 1 + 16 + 1 + producer.size() + 1 + 16);
  name.append(rank).append(1, '~').append(hex16(static_cast<uint64_t>(revision)));
  name.append(1, '-').append(producer).append(1, '-').append(hex16(seq));
  return name;
}

std::optional<int64_t> item_revision(std::string_view name) {
  const size_t tilde = name.find('~');
  if (tilde == std::string_view::npos || name.size() < tilde + 1 + 16 + 1 || name[tilde + 17] != '-') {
    return std::nullopt;
  }
  auto r = parse_hex16(name.substr(tilde + 1, 16));
  if (!r || *r > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*r);
}

}  // namespace etcd::recipes::detail
