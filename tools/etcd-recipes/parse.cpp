#include "parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

namespace etcd_cli {

namespace {

// The duration in nanoseconds, unbounded (a double never overflows here).
std::optional<double> duration_nanos(std::string_view text) {
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
  if (std::isnan(total) || total <= 0) return std::nullopt;  // +inf: past any maximum
  return total;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const auto nanos = duration_nanos(text);
  if (!nanos) return std::nullopt;
  const double ms = std::ceil(*nanos / 1e6);  // rounded up, never to 0
  if (ms >= static_cast<double>(kMaxDuration.count())) return kMaxDuration;
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

bool past_max_duration(std::string_view text) {
  const auto nanos = duration_nanos(text);
  return nanos && *nanos > static_cast<double>(kMaxDuration.count()) * 1e6;
}

std::string nearest_word(std::string_view word, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance (Damerau-Levenshtein without
  // repeated edits of one substring): "lcok" is one edit from "lock".
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.size()][b.size()];
  };
  const size_t allowed = word.size() <= 4 ? 1 : 2;
  std::string best;
  size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    const size_t dist = distance(word, c);
    if (dist < best_distance) {
      best_distance = dist;
      best = c;
    }
  }
  return best;
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

std::optional<HostPort> parse_host_port(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // an IPv6 address goes in brackets
  }
  if (host.empty() || host.find_first_of("[] /") != std::string_view::npos) return std::nullopt;
  int number = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || number < 0 || number > 65535) {
    return std::nullopt;
  }
  return HostPort{std::string(host), number};
}

bool key_within(std::string_view name, std::string_view path) {
  if (path.empty() || name == path) return true;
  return name.size() > path.size() && name.starts_with(path) && name[path.size()] == '/';
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, as four decimal numbers.
  if (!host.starts_with("127.")) return false;
  int parts = 0;
  for (size_t at = 0; at <= host.size(); ++parts) {
    const size_t dot = std::min(host.find('.', at), host.size());
    int octet = -1;
    const auto [end, ec] = std::from_chars(host.data() + at, host.data() + dot, octet);
    if (dot == at || ec != std::errc{} || end != host.data() + dot || octet > 255) return false;
    at = dot + 1;
  }
  return parts == 4;
}

}  // namespace etcd_cli
