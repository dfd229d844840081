#include "item_key.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace etcd::recipes::detail {

std::string item_name(std::string_view rank, int64_t revision, std::string_view producer, uint64_t seq) {
  std::string name;
  name.reserve(rank.size() + 1 + 16 + 1 + producer.size() + 1 + 16);
  name.append(rank).append(1, '~').append(hex16(static_cast<uint64_t>(revision)));
  name.append(1, '-').append(producer).append(1, '-').append(hex16(seq));
  return name;
}

namespace {

// The '~' of a name of the layout and its R; `whole`: followed by the rest
// of an item name ('-'), else also at the end of `name` (a slice's end).
std::optional<std::pair<size_t, int64_t>> tilde_revision(std::string_view name, bool whole) {
  const size_t tilde = name.find('~');
  if (tilde == std::string_view::npos || name.size() < tilde + 1 + 16) return std::nullopt;
  const bool at_end = name.size() == tilde + 1 + 16;
  if (at_end ? whole : name[tilde + 17] != '-') return std::nullopt;
  auto r = parse_hex16(name.substr(tilde + 1, 16));
  if (!r || *r > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return std::pair{tilde, static_cast<int64_t>(*r)};
}

}  // namespace

std::optional<int64_t> item_revision(std::string_view name) {
  auto found = tilde_revision(name, true);
  if (!found) return std::nullopt;
  return found->second;
}

std::string window_slice(std::string_view items, std::string_view from, uint64_t step, int64_t revision) {
  if (!from.starts_with(items)) return {};
  const std::string_view name = from.substr(items.size());
  auto found = tilde_revision(name, false);
  if (!found) return {};
  const auto [tilde, r] = *found;
  const uint64_t width = static_cast<uint64_t>(kSliceRevisions) * std::max<uint64_t>(step, 1);
  // Past the view's revision no key of the layout exists yet (each R is a
  // revision its producer had seen).
  const int64_t hi = width > static_cast<uint64_t>(revision) || r > revision - static_cast<int64_t>(width)
                         ? revision + 1
                         : r + static_cast<int64_t>(width);
  std::string end(items);
  end.append(name.substr(0, tilde + 1)).append(hex16(static_cast<uint64_t>(hi)));
  return end;
}

}  // namespace etcd::recipes::detail
