#include "work_record.h"

#include <charconv>

namespace etcd::recipes::detail {

namespace {

constexpr std::string_view kRecordTag = "wq1";
constexpr std::string_view kDeadTag = "wqdead1 ";

bool parse_int(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// The next space-separated field of `line` from `pos`.
std::string_view next_field(std::string_view line, size_t& pos) {
  while (pos < line.size() && line[pos] == ' ') ++pos;
  const size_t start = pos;
  while (pos < line.size() && line[pos] != ' ') ++pos;
  return line.substr(start, pos - start);
}

}  // namespace

std::string encode_work_record(std::string_view payload, int64_t not_before_ms, int64_t deliveries_base,
                               int64_t version_base) {
  std::string out(kRecordTag);
  if (not_before_ms > 0) out += " nb=" + std::to_string(not_before_ms);
  if (deliveries_base != 0 || version_base != 1) {
    out += " d=" + std::to_string(deliveries_base) + "@" + std::to_string(version_base);
  }
  out += '\n';
  out.append(payload);
  return out;
}

WorkRecord parse_work_record(std::string_view stored) {
  WorkRecord bare;
  const size_t eol = stored.find('\n');
  if (eol == std::string_view::npos || stored.substr(0, kRecordTag.size()) != kRecordTag) return bare;
  const std::string_view line = stored.substr(0, eol);
  if (line.size() > kRecordTag.size() && line[kRecordTag.size()] != ' ') return bare;
  WorkRecord r;
  size_t pos = kRecordTag.size();
  for (std::string_view field = next_field(line, pos); !field.empty(); field = next_field(line, pos)) {
    if (field.substr(0, 3) == "nb=") {
      if (!parse_int(field.substr(3), r.not_before_ms)) return bare;
    } else if (field.substr(0, 2) == "d=") {
      const auto at = field.find('@');
      if (at == std::string_view::npos || !parse_int(field.substr(2, at - 2), r.deliveries_base) ||
          !parse_int(field.substr(at + 1), r.version_base)) {
        return bare;
      }
    }
    // Fields this version does not know are skipped: a newer writer may add some.
  }
  r.payload_offset = eol + 1;
  return r;
}

bool is_work_record(std::string_view stored) {
  return stored.starts_with(kRecordTag) && stored.size() > kRecordTag.size() &&
         (stored[kRecordTag.size()] == '\n' || stored[kRecordTag.size()] == ' ');
}

std::string encode_dead_record(std::string_view payload, int64_t deliveries, int64_t since_ms,
                               std::string_view reason) {
  std::string out(kDeadTag);
  out += std::to_string(deliveries) + " " + std::to_string(since_ms) + " ";
  for (char c : reason) out += (c == '\n' || c == '\r') ? ' ' : c;
  out += '\n';
  out.append(payload);
  return out;
}

std::optional<DeadRecord> parse_dead_record(std::string_view stored) {
  const size_t eol = stored.find('\n');
  if (eol == std::string_view::npos || stored.substr(0, kDeadTag.size()) != kDeadTag) return std::nullopt;
  const std::string_view line = stored.substr(0, eol);
  size_t pos = kDeadTag.size();
  DeadRecord d;
  if (!parse_int(next_field(line, pos), d.deliveries) || !parse_int(next_field(line, pos), d.since_ms)) {
    return std::nullopt;
  }
  if (pos < line.size()) d.reason = std::string(line.substr(pos + 1));
  d.payload = std::string(stored.substr(eol + 1));
  return d;
}

}  // namespace etcd::recipes::detail
