// `etcd-recipes inspect`'s text: the recipes of an inspection report
// (etcd/recipes/inspect.h, which recognizes them) as the command prints
// them, with what the command learned of their leases. Pure (no client, no
// output), so the unit tests drive it with hand-made reports. The command
// (inspect_commands.cpp) reads the keys and leases, prints these lines, or
// the same report as JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/recipes/inspect.h"

namespace etcd_cli::inspect {

using etcd::recipes::inspect::Kind;
using etcd::recipes::inspect::Report;

// What the command learned of a lease (LeaseTimeToLive, just after the read).
struct LeaseTtl {
  int64_t ttl = -1;  // remaining seconds; -1: expired (or revoked) since the read
  int64_t granted = 0;
};
using Leases = std::map<int64_t, LeaseTtl>;

// The kind as the text output says it: "lock or election", "work queue", ...
std::string kind_words(Kind kind);

struct RenderLimits {
  size_t lines_per_recipe = 0;  // detail lines under each headline; 0: every one
  size_t recipes = 0;           // recipe blocks; 0: every one
};

// One block per recipe: a headline, then indented lines. `leases`: what
// was learned of each lease the keys carry; `now_ms`: this host's clock
// (work queue delays, dead letters' ages).
std::vector<std::string> render_text(const Report& report, const Leases& leases, int64_t now_ms,
                                     RenderLimits limits = {});

// A value as text output shows it: quoted, bytes that are not printable
// escaped, cut after `max` bytes with "...".
std::string excerpt(std::string_view bytes, size_t max = 60);
// "lease 694d7d5b2bad7c0b, TTL 7/10 s" ("expired" when gone).
std::string lease_words(int64_t lease, const Leases& leases);

}  // namespace etcd_cli::inspect
