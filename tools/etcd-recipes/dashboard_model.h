// The live dashboard's model (`etcd-recipes dashboard`): what the page is
// sent, built from inspection reports (etcd/recipes/inspect.h). Pure: no
// client, no I/O, no threads; the unit tests drive it with hand-made
// reports. dashboard_feed.h reads etcd into it, dashboard_commands.cpp
// serves it, and tools/etcd-recipes/dashboard/ is the page.
//
// How a prefix is kept. Its recipes are held as bounded summaries
// (summary_reader.h: exact collection sizes, only heads read). A change
// under the prefix names a key; scope_for() says which part of the prefix
// to read again: the recipe that key belongs to (its NAME, read as NAME and
// NAME/...), or, for a key no recipe holds yet, the key's parent directory
// (where a new recipe's keys live; the key alone if that directory holds
// recipes of their own, or is the prefix itself).
// apply() replaces what was held within that scope by what was read and
// answers the delta the page is sent. A change therefore costs a summary of
// its own recipe, whatever else the prefix holds: a lock's holder changes
// beside a 500k-item queue cost the lock's few keys.
//
// Ages. Keys carry revisions, not times. A RevisionClock remembers when
// this process saw each revision it watched (exactly: the watch delivered
// it) or read at (a bound: the revision was at or before then). A key's age
// is then exact for keys created while the dashboard watched, and a lower
// bound ("at least") for older ones.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/recipes/inspect.h"
#include "inspect_text.h"
#include "parse.h"

namespace etcd_cli::dashboard {

namespace in = etcd::recipes::inspect;

// Text the page can show for arbitrary bytes: valid UTF-8 kept, control
// bytes and bytes outside valid UTF-8 as \xHH, cut after `max` bytes with
// "…" (0: never cut). Always valid UTF-8.
std::string display_text(std::string_view bytes, size_t max = 0);

// When a revision happened, as far as this process knows.
struct Since {
  int64_t ms = 0;      // ms since the epoch, this host's clock
  bool exact = false;  // false: the revision happened at or before `ms`
};

class RevisionClock {
 public:
  // `revision` was current at `ms`; `exact`: it was delivered by a watch
  // at `ms` (it happened then), else it was read then (it happened then or
  // before). Observations of older revisions than the newest are ignored.
  void observe(int64_t revision, int64_t ms, bool exact);
  // When `revision` happened: exact if it was watched, else the time of
  // the first observation at or after it (it happened no later).
  Since since(int64_t revision) const;
  size_t size() const noexcept { return points_.size(); }

  // Points kept: beyond this the older half is thinned to every other
  // point (ages there become bounds).
  static constexpr size_t kMaxPoints = 100'000;

 private:
  struct Point {
    int64_t revision = 0;
    int64_t ms = 0;
    bool exact = false;
  };
  std::vector<Point> points_;  // by increasing revision
};

// The lease a page shows with an entry (its key's, or a claim's), if any,
// and whether it shows one: holders, work in flight, service instances and
// transient keys (the TTLs the dashboard reads).
int64_t shown_lease(const in::Entry& e);
bool shows_ttl(const in::Entry& e);

// What the page shows of one recipe, as JSON, and the numbers it charts.
std::string recipe_id(const in::Recipe& r);
std::map<std::string, int64_t> recipe_metrics(const in::Recipe& r);

// At most this many entries of a recipe are sent (its head); the rest are
// counted in "entries_omitted".
inline constexpr size_t kEntriesPerRecipe = 50;

nlohmann::json recipe_json(const in::Recipe& r, const std::string& prefix, const etcd_cli::inspect::Leases& leases,
                           const RevisionClock& clock);

// The part of the prefix `base` to read again when `key` changed (see the
// top of this file), given the names of the recipes held now.
std::string scope_for(std::string_view key, const std::string& base, const std::set<std::string>& names);

// A read of `scope` found a recipe whose name lies above it (a service
// base whose instances were partly read, a queue whose items directory was
// read): the scope to read instead, if any.
std::optional<std::string> wider_scope(const std::string& scope, const in::Report& read);

// What one applied read changed: recipes to insert or replace, ids gone.
struct Delta {
  std::vector<nlohmann::json> upsert;
  std::vector<std::string> remove;
  bool empty() const noexcept { return upsert.empty() && remove.empty(); }
};

// One prefix as the dashboard holds it.
class PrefixModel {
 public:
  // `prefix` as the command line gave it; its base as prefix_base() makes it.
  PrefixModel(std::string prefix, std::string base);

  const std::string& prefix() const noexcept { return prefix_; }
  const std::string& base() const noexcept { return base_; }

  std::string scope_for(std::string_view key) const;

  // Replaces the recipes held within `scope` by those of `read` (a summary
  // of `scope` read at read.revision) and answers what changed.
  // `stopped_at`: where a summary of the whole prefix stopped ("" if it
  // read to the end; ignored for a narrower scope).
  Delta apply(const std::string& scope, const in::Report& read, const etcd_cli::inspect::Leases& leases,
              const RevisionClock& clock, const std::string& stopped_at = "");

  // A read failed (or succeeded again: ""); the page shows it.
  void set_error(std::string error) { error_ = std::move(error); }
  const std::string& error() const noexcept { return error_; }

  int64_t revision() const noexcept { return revision_; }
  bool loaded() const noexcept { return loaded_; }
  size_t size() const noexcept { return held_.size(); }

  // The `state` message: every recipe held.
  nlohmann::json state_json(int64_t now_ms) const;
  // An `update` message of `delta`.
  nlohmann::json update_json(const Delta& delta, int64_t now_ms) const;
  // The recipes held, as one report (for /metrics).
  in::Report report() const;
  // Names of at most `max` recipes that show a lease's TTL (shows_ttl()),
  // in name order: what a
  // periodic re-read keeps those TTLs current for.
  std::vector<std::string> with_ttls(size_t max) const;
  // Each recipe's charted numbers, by id.
  std::map<std::string, std::map<std::string, int64_t>> metrics() const;

 private:
  struct Held {
    std::string id;
    in::Recipe recipe;
    nlohmann::json json;
    std::map<std::string, int64_t> metrics;  // json["metrics"], for the samples
  };
  using HeldKey = std::pair<std::string, int>;  // name, kind

  std::string prefix_;
  std::string base_;
  std::map<HeldKey, Held> held_;
  std::set<std::string> names_;  // the names in held_, for scope_for(); kept with it
  int64_t revision_ = 0;
  bool loaded_ = false;
  std::string error_;
  std::string stopped_at_;
};

// The charted numbers over the last `steps` samples, one per second.
class Series {
 public:
  explicit Series(size_t steps = 600, size_t max_series = 1'000);
  // One sample at `t_ms` of every recipe's numbers (by id).
  void sample(int64_t t_ms, const std::map<std::string, std::map<std::string, int64_t>>& values);
  // The `history` message: {"step_ms", "t": [...], "series": {id: {metric: [v|null...]}}}.
  nlohmann::json history_json(int64_t now_ms) const;
  size_t series() const noexcept { return count_; }

 private:
  static constexpr int64_t kNone = INT64_MIN;
  size_t steps_;
  size_t max_series_;
  size_t count_ = 0;
  std::deque<int64_t> t_;
  std::map<std::string, std::map<std::string, std::deque<int64_t>>> values_;
};

}  // namespace etcd_cli::dashboard
