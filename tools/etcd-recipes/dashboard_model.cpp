#include "dashboard_model.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "simple_format.h"

namespace etcd_cli::dashboard {
namespace {

using in::Kind;
using in::Role;

bool is_contended(Kind k) { return k == Kind::kLockOrElection || k == Kind::kRwLock || k == Kind::kSemaphore; }
bool is_queue(Kind k) { return k == Kind::kQueue || k == Kind::kPriorityQueue || k == Kind::kWorkQueue; }
bool is_barrier(Kind k) {
  return k == Kind::kGate || k == Kind::kCountBarrier || k == Kind::kDoubleBarrier || k == Kind::kBarrier;
}

nlohmann::json entry_json(const in::Entry& e, const etcd_cli::inspect::Leases& leases, const RevisionClock& clock) {
  const Since since = clock.since(e.kv.create_revision);
  nlohmann::json j = {{"role", in::role_id(e.role)},
                      {"key", display_text(e.kv.key)},
                      {"key_b64", base64(e.kv.key)},
                      {"value", display_text(e.kv.value, 120)},
                      {"lease", nullptr},
                      {"ttl", nullptr},
                      {"granted_ttl", nullptr},
                      {"create_revision", e.kv.create_revision},
                      {"mod_revision", e.kv.mod_revision},
                      {"token", e.kv.create_revision},
                      {"since_ms", since.ms},
                      {"since_exact", since.exact},
                      {"mode", e.mode},
                      {"id", display_text(e.id)},
                      {"priority", e.priority},
                      {"deliveries", e.deliveries},
                      {"not_before_ms", e.not_before_ms},
                      {"claimed_by", display_text(e.claimed_by, 120)},
                      {"reason", display_text(e.reason, 200)},
                      {"dead_since_ms", e.since_ms},
                      {"payload", display_text(e.payload, 120)},
                      {"instance", nullptr}};
  if (const int64_t lease = shown_lease(e); lease != 0) {
    j["lease"] = lease_hex(lease);
    if (auto it = leases.find(lease); it != leases.end()) {
      j["ttl"] = it->second.ttl;
      j["granted_ttl"] = it->second.granted;
    }
  }
  if (e.instance) {
    const auto& i = *e.instance;
    j["instance"] = {{"service", display_text(i.name)},
                     {"id", display_text(i.id)},
                     {"address", display_text(i.address)},
                     {"port", i.port ? nlohmann::json(*i.port) : nlohmann::json(nullptr)},
                     {"ssl_port", i.ssl_port ? nlohmann::json(*i.ssl_port) : nlohmann::json(nullptr)},
                     {"enabled", i.enabled},
                     {"registered_ms", i.registration_time_ms},
                     {"payload", display_text(i.payload, 120)}};
  }
  return j;
}

// The queue's head: its first item in serving order (entries are in that
// order), whose create revision dates it.
const in::Entry* head_item(const in::Recipe& r) {
  for (const auto& e : r.entries) {
    if (e.role == Role::kItem) return &e;
  }
  return nullptr;
}

}  // namespace

int64_t shown_lease(const in::Entry& e) { return e.kv.lease != 0 ? e.kv.lease : e.claim_lease; }

bool shows_ttl(const in::Entry& e) {
  const bool role = e.role == Role::kHolder || e.role == Role::kClaimed || e.role == Role::kInstance ||
                    e.role == Role::kKey;
  return role && shown_lease(e) != 0;
}

std::string display_text(std::string_view bytes, size_t max) {
  std::string out;
  const bool whole = copy_utf8(
      out, bytes,
      [](std::string& o, unsigned char c) {
        if (c < 0x20 || c >= 0x7f) {
          append_hex(o, c);
        } else {
          o += static_cast<char>(c);
        }
      },
      max);
  if (!whole) out += "\u2026";
  return out;
}

// --- RevisionClock -----------------------------------------------------------------

void RevisionClock::observe(int64_t revision, int64_t ms, bool exact) {
  if (!points_.empty()) {
    Point& last = points_.back();
    if (revision < last.revision) return;
    if (revision == last.revision) {
      if (exact && !last.exact) last = {revision, ms, true};
      return;
    }
  }
  points_.push_back({revision, ms, exact});
  if (points_.size() > kMaxPoints) {
    // Thin the older half to every other point.
    const size_t half = points_.size() / 2;
    std::vector<Point> kept;
    kept.reserve(points_.size());
    for (size_t i = 0; i < half; i += 2) kept.push_back(points_[i]);
    kept.insert(kept.end(), points_.begin() + static_cast<std::ptrdiff_t>(half), points_.end());
    points_ = std::move(kept);
  }
}

Since RevisionClock::since(int64_t revision) const {
  if (points_.empty()) return {};
  auto it = std::lower_bound(points_.begin(), points_.end(), revision,
                             [](const Point& p, int64_t r) { return p.revision < r; });
  if (it == points_.end()) return {points_.back().ms, false};
  return {it->ms, it->exact && it->revision == revision};
}

// --- recipes -----------------------------------------------------------------------

std::string recipe_id(const in::Recipe& r) { return std::string(in::kind_id(r.kind)) + ":" + display_text(r.name); }

std::map<std::string, int64_t> recipe_metrics(const in::Recipe& r) {
  std::map<std::string, int64_t> m;
  if (is_contended(r.kind)) {
    m["holders"] = in::total(r, Role::kHolder);
    m["waiters"] = in::total(r, Role::kWaiting);
  } else if (is_queue(r.kind)) {
    m["depth"] = in::total(r, Role::kItem);
    if (r.kind == Kind::kWorkQueue) {
      m["in_flight"] = in::total(r, Role::kClaimed);  // claims whose item was not read included
      m["dead_letters"] = in::total(r, Role::kDead);
    }
  } else if (is_barrier(r.kind)) {
    m["parties"] = in::total(r, Role::kParty);
  } else if (r.kind == Kind::kCounter && r.value) {
    m["value"] = *r.value;
  } else if (r.kind == Kind::kServices) {
    m["instances"] = in::total(r, Role::kInstance);
  }
  return m;
}

nlohmann::json recipe_json(const in::Recipe& r, const std::string& prefix, const etcd_cli::inspect::Leases& leases,
                           const RevisionClock& clock) {
  nlohmann::json counts = nlohmann::json::object();
  static constexpr Role kRoles[] = {Role::kHolder, Role::kWaiting, Role::kPermits, Role::kItem,   Role::kClaimed,
                                    Role::kClaim,  Role::kDead,    Role::kProducer, Role::kParty, Role::kReady,
                                    Role::kGaveUp, Role::kGateKey, Role::kSetBy,   Role::kValue,  Role::kReceipt,
                                    Role::kInstance, Role::kKey};
  for (Role role : kRoles) {
    if (const int64_t n = in::total(r, role); n > 0) counts[in::role_id(role)] = n;
  }
  auto entries = nlohmann::json::array();
  for (size_t i = 0; i < r.entries.size() && i < kEntriesPerRecipe; ++i) {
    entries.push_back(entry_json(r.entries[i], leases, clock));
  }
  const int64_t omitted = static_cast<int64_t>(r.entries.size() - entries.size()) + in::unread(r);
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [k, v] : recipe_metrics(r)) metrics[k] = v;
  nlohmann::json oldest = nullptr;
  if (is_queue(r.kind)) {
    if (const in::Entry* head = head_item(r)) {
      const Since s = clock.since(head->kv.create_revision);
      oldest = {{"since_ms", s.ms}, {"exact", s.exact}, {"create_revision", head->kv.create_revision}};
    }
  }
  return {{"id", recipe_id(r)},
          {"kind", in::kind_id(r.kind)},
          {"name", display_text(r.name)},
          {"name_b64", base64(r.name)},
          {"prefix", prefix},
          {"counts", counts},
          {"permits", r.permits ? nlohmann::json(*r.permits) : nlohmann::json(nullptr)},
          {"value", r.value ? nlohmann::json(*r.value) : nlohmann::json(nullptr)},
          {"metrics", metrics},
          {"oldest", oldest},
          {"entries", entries},
          {"entries_omitted", omitted}};
}

std::string scope_for(std::string_view key, const std::string& base, const std::set<std::string>& names) {
  // The longest held name the key lies within: check the key and each of
  // its ancestors below the base.
  std::string_view probe = key;
  for (;;) {
    if (probe.size() < base.size() || (!base.empty() && probe.size() == base.size() && probe != base)) break;
    if (names.count(std::string(probe)) != 0) return std::string(probe);
    if (probe.size() == base.size()) break;
    const size_t slash = probe.rfind('/');
    if (slash == std::string_view::npos) break;
    probe = probe.substr(0, slash);
  }
  // A new recipe: its keys are the key's siblings, under the key's parent,
  // unless that is the prefix itself (a counter, a gate: NAME is the key),
  // or a directory of recipes of their own (sessions/a, sessions/b, ...:
  // the new key is one more, read alone). A read that finds the key is
  // part of a recipe above it asks for that (wider_scope).
  const size_t slash = key.rfind('/');
  if (slash == std::string_view::npos) return std::string(key);
  const std::string_view parent = key.substr(0, slash);
  if (parent.size() <= base.size()) return std::string(key);
  const std::string children = std::string(parent) + "/";
  if (auto it = names.lower_bound(children); it != names.end() && it->starts_with(children)) {
    return std::string(key);
  }
  return std::string(parent);
}

std::optional<std::string> wider_scope(const std::string& scope, const in::Report& read) {
  std::optional<std::string> wider;
  for (const auto& r : read.recipes) {
    if (key_within(r.name, scope)) continue;
    if (key_within(scope, r.name) && (!wider || r.name.size() < wider->size())) wider = r.name;
  }
  return wider;
}

// --- PrefixModel -------------------------------------------------------------------

PrefixModel::PrefixModel(std::string prefix, std::string base) : prefix_(std::move(prefix)), base_(std::move(base)) {}

std::string PrefixModel::scope_for(std::string_view key) const { return dashboard::scope_for(key, base_, names_); }

Delta PrefixModel::apply(const std::string& scope, const in::Report& read, const etcd_cli::inspect::Leases& leases,
                         const RevisionClock& clock, const std::string& stopped_at) {
  Delta delta;
  std::map<HeldKey, Held> fresh;
  for (const auto& r : read.recipes) {
    if (!key_within(r.name, scope)) continue;
    Held h{recipe_id(r), r, recipe_json(r, prefix_, leases, clock), {}};
    h.metrics = h.json["metrics"].get<std::map<std::string, int64_t>>();
    fresh.emplace(HeldKey{r.name, static_cast<int>(r.kind)}, std::move(h));
  }
  // What was held within the scope and is not any more.
  for (auto it = held_.lower_bound(HeldKey{scope, -1}); it != held_.end() && it->first.first.starts_with(scope);) {
    if (!key_within(it->first.first, scope) || fresh.count(it->first) != 0) {
      ++it;
      continue;
    }
    delta.remove.push_back(it->second.id);
    const std::string name = it->first.first;
    it = held_.erase(it);
    // Another kind may hold the same name.
    auto same = held_.lower_bound(HeldKey{name, -1});
    if (same == held_.end() || same->first.first != name) names_.erase(name);
  }
  for (auto& [k, h] : fresh) {
    auto it = held_.find(k);
    if (it != held_.end() && it->second.json == h.json) {
      it->second.recipe = std::move(h.recipe);
      continue;
    }
    delta.upsert.push_back(h.json);
    names_.insert(k.first);
    held_.insert_or_assign(k, std::move(h));
  }
  revision_ = std::max(revision_, read.revision);
  if (scope == base_) {
    stopped_at_ = stopped_at;
    loaded_ = true;
  }
  return delta;
}

nlohmann::json PrefixModel::state_json(int64_t now_ms) const {
  auto recipes = nlohmann::json::array();
  for (const auto& [k, h] : held_) recipes.push_back(h.json);
  return {{"prefix", prefix_},
          {"revision", revision_},
          {"now", now_ms},
          {"error", error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(error_)},
          {"stopped_at", display_text(stopped_at_)},
          {"recipes", std::move(recipes)}};
}

nlohmann::json PrefixModel::update_json(const Delta& delta, int64_t now_ms) const {
  return {{"prefix", prefix_},
          {"revision", revision_},
          {"now", now_ms},
          {"error", error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(error_)},
          {"upsert", delta.upsert},
          {"remove", delta.remove}};
}

in::Report PrefixModel::report() const {
  in::Report report;
  report.revision = revision_;
  for (const auto& [k, h] : held_) report.recipes.push_back(h.recipe);
  return report;
}

std::vector<std::string> PrefixModel::with_ttls(size_t max) const {
  std::vector<std::string> names;
  for (const auto& [k, h] : held_) {
    if (names.size() >= max) break;
    const bool shows = std::any_of(h.recipe.entries.begin(), h.recipe.entries.end(), shows_ttl);
    if (shows && (names.empty() || names.back() != k.first)) names.push_back(k.first);
  }
  return names;
}

std::map<std::string, std::map<std::string, int64_t>> PrefixModel::metrics() const {
  std::map<std::string, std::map<std::string, int64_t>> out;
  for (const auto& [k, h] : held_) {
    if (!h.metrics.empty()) out.emplace(h.id, h.metrics);
  }
  return out;
}

// --- Series ------------------------------------------------------------------------

Series::Series(size_t steps, size_t max_series) : steps_(steps), max_series_(max_series) {}

void Series::sample(int64_t t_ms, const std::map<std::string, std::map<std::string, int64_t>>& values) {
  t_.push_back(t_ms);
  const bool full = t_.size() > steps_;
  if (full) t_.pop_front();
  // Every series kept gets this sample (kNone where the recipe has none).
  for (auto rit = values_.begin(); rit != values_.end();) {
    const auto found = values.find(rit->first);
    bool any = false;
    for (auto& [metric, points] : rit->second) {
      int64_t v = kNone;
      if (found != values.end()) {
        if (auto m = found->second.find(metric); m != found->second.end()) v = m->second;
      }
      points.push_back(v);
      if (full) points.pop_front();
      any = any || std::any_of(points.begin(), points.end(), [](int64_t p) { return p != kNone; });
    }
    if (!any) {
      count_ -= rit->second.size();
      rit = values_.erase(rit);
    } else {
      ++rit;
    }
  }
  // New recipes and metrics, while there is room.
  for (const auto& [id, metrics] : values) {
    auto& kept = values_[id];
    for (const auto& [metric, v] : metrics) {
      if (kept.count(metric) != 0) continue;
      if (count_ >= max_series_) break;
      std::deque<int64_t> points(t_.size() - 1, kNone);
      points.push_back(v);
      kept.emplace(metric, std::move(points));
      ++count_;
    }
    if (kept.empty()) values_.erase(id);
  }
}

nlohmann::json Series::history_json(int64_t now_ms) const {
  nlohmann::json series = nlohmann::json::object();
  for (const auto& [id, metrics] : values_) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [metric, points] : metrics) {
      auto a = nlohmann::json::array();
      for (int64_t v : points) a.push_back(v == kNone ? nlohmann::json(nullptr) : nlohmann::json(v));
      m[metric] = std::move(a);
    }
    series[id] = std::move(m);
  }
  return {{"now", now_ms}, {"step_ms", 1000}, {"t", t_}, {"series", std::move(series)}};
}

}  // namespace etcd_cli::dashboard
