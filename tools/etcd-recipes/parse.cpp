#include "parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>
#include <system_error>

namespace etcd_cli {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  struct Unit {
    std::string_view name;
    double nanos;
  };
  // Longest names first so "ms" is not read as "m" followed by junk.
  static constexpr Unit kUnits[] = {{"ns", 1.0}, {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6},
                                    {"s", 1e9},  {"m", 60e9}, {"h", 3600e9}};
  double total = 0;
  std::string_view rest = text;
  bool bare = true;
  while (!rest.empty()) {
    size_t n = 0;
    while (n < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[n])) || rest[n] == '.')) ++n;
    if (n == 0) return std::nullopt;
    // strtod needs a terminated string; the number is short.
    std::string number(rest.substr(0, n));
    char* end = nullptr;
    double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return std::nullopt;
    rest.remove_prefix(n);
    if (rest.empty()) {
      if (!bare) return std::nullopt;  // "1m30" is ambiguous; Go rejects it too
      total = value * 1e9;
      break;
    }
    bare = false;
    const Unit* unit = nullptr;
    for (const auto& u : kUnits) {
      if (rest.starts_with(u.name) && (unit == nullptr || u.name.size() > unit->name.size())) {
        unit = &u;
      }
    }
    if (unit == nullptr) return std::nullopt;
    total += value * unit->nanos;
    rest.remove_prefix(unit->name.size());
  }
  auto ms = static_cast<int64_t>(std::ceil(total / 1e6));
  if (ms <= 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

std::optional<int64_t> parse_lease_id(std::string_view text) {
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  if (text.empty() || text.size() > 16) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  // etcd lease ids are int64 on the wire; the hex form may use the sign bit.
  auto id = static_cast<int64_t>(value);
  if (id == 0) return std::nullopt;
  return id;
}

}  // namespace etcd_cli
