#include "page_slice.h"

#include <algorithm>
#include <cstdint>

#include "etcd/kv.h"

namespace etcd::recipes::detail {

namespace {

// The 8 bytes of `key` from `at` (zeros past its end), big-endian.
uint64_t position(std::string_view key, size_t at) {
  uint64_t n = 0;
  for (size_t i = 0; i < 8; ++i) {
    const size_t k = at + i;
    n = (n << 8) | (k < key.size() ? static_cast<unsigned char>(key[k]) : 0u);
  }
  return n;
}

}  // namespace

std::string next_page_end(std::string_view start, std::string_view next, size_t keys, size_t want) {
  if (want == 0 || next <= start) return {};
  const size_t shared = static_cast<size_t>(std::mismatch(start.begin(), start.end(), next.begin(), next.end()).first -
                                            start.begin());
  const uint64_t a = position(start, shared);
  const uint64_t b = position(next, shared);
  if (b <= a) return {};  // they differ only past 8 bytes: too close to tell
  const long double covered = static_cast<long double>(b - a);
  const long double scale = std::min<long double>(4.0L, static_cast<long double>(want) /
                                                            static_cast<long double>(std::max<size_t>(keys, 1)));
  const long double span = std::max<long double>(1.0L, covered * scale);
  const std::string prefix(next.substr(0, shared));
  if (static_cast<long double>(UINT64_MAX - b) <= span) {
    // Past the keys that begin with the shared prefix: end with them (none:
    // the range's end).
    if (prefix.empty()) return {};
    std::string end = prefix_range_end(prefix);
    return end > next ? end : std::string();
  }
  const uint64_t e = b + static_cast<uint64_t>(span);
  std::string end = prefix;
  for (int i = 7; i >= 0; --i) end.push_back(static_cast<char>((e >> (8 * i)) & 0xff));
  // Trailing zero bytes add nothing to the bound.
  while (end.size() > shared + 1 && end.back() == '\0') end.pop_back();
  return end > next ? end : std::string();
}

}  // namespace etcd::recipes::detail
