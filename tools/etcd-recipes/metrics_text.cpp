#include "metrics_text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "simple_format.h"

namespace etcd_cli::metrics {
namespace {

namespace in = etcd::recipes::inspect;
using in::Entry;
using in::Kind;
using in::Recipe;
using in::Role;

// Every family the exporter writes, in the order of the text. All are
// gauges: each is a state read at the scrape's revision, none a count of
// events that only grows.
enum Family : size_t {
  kUp,
  kScrapeSeconds,
  kScrapeRequests,
  kRevision,
  kQueueDepth,
  kQueueOldestAge,
  kQueueOldestRevision,
  kInFlight,
  kDeadLetters,
  kLockHolders,
  kLockWaiters,
  kLockToken,
  kPermits,
  kLeader,
  kBarrierParties,
  kBarrierSet,
  kCounterValue,
  kServiceInstances,
  kFamilies,
};

struct FamilyText {
  const char* name;
  const char* help;
};

constexpr std::array<FamilyText, kFamilies> kFamilyText{{
    {"etcd_recipes_exporter_up", "1 if the prefix was read at this scrape, 0 if the read failed (the text says why)"},
    {"etcd_recipes_exporter_scrape_duration_seconds", "How long reading the prefix took at this scrape"},
    {"etcd_recipes_exporter_scrape_requests", "etcd requests made to read the prefix at this scrape"},
    {"etcd_recipes_exporter_revision", "The etcd revision the prefix was read at"},
    {"etcd_recipes_queue_depth", "Items waiting in the queue (a work queue's: not in flight, delayed ones included)"},
    {"etcd_recipes_queue_oldest_age_seconds",
     "Work queues: seconds since the oldest ready item became ready, when its record carries that time (an item "
     "enqueued or requeued with a delay); absent otherwise"},
    {"etcd_recipes_queue_oldest_create_revision",
     "The create revision of the oldest waiting item: unchanged while the queue's head does not move"},
    {"etcd_recipes_workqueue_in_flight", "Work items claimed by a consumer and not acked yet"},
    {"etcd_recipes_workqueue_dead_letters", "Work items in the dead letters"},
    {"etcd_recipes_lock_holders", "Holders of the lock, read-write lock or semaphore"},
    {"etcd_recipes_lock_waiters", "Contenders waiting for the lock, read-write lock or semaphore"},
    {"etcd_recipes_lock_token",
     "The fencing token (create revision) of the lock's first holder: changes at each handover"},
    {"etcd_recipes_semaphore_permits", "The semaphore's N (from NAME/permits)"},
    {"etcd_recipes_election_leader_info", "1 for the election's leader: the value of the holder's key"},
    {"etcd_recipes_barrier_parties", "Parties waiting at a count barrier, or in a double barrier"},
    {"etcd_recipes_barrier_set", "1 while the barrier (a gate) is set"},
    {"etcd_recipes_counter_value", "The counter's value"},
    {"etcd_recipes_service_instances", "Registered instances of the service (BASE/SERVICE)"},
}};

// A leader's value longer than this is cut (with "...") in its label.
constexpr size_t kMaxLeaderLabel = 256;

using Labels = std::vector<std::pair<const char*, std::string>>;

// The samples of a scrape by family, each series once.
class Exposition {
 public:
  void add(Family family, const Labels& labels, const std::string& value) {
    std::string series = kFamilyText[family].name;
    if (!labels.empty()) {
      series += '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) series += ',';
        series += labels[i].first;
        series += "=\"" + escape_label_value(labels[i].second) + '"';
      }
      series += '}';
    }
    if (seen_.insert(series).second) samples_[family].push_back(series + ' ' + value + '\n');
  }
  void add(Family family, const Labels& labels, int64_t value) { add(family, labels, std::to_string(value)); }
  void add(Family family, const Labels& labels, double value) { add(family, labels, format_value(value)); }
  // A comment line: `text` must be on one line (escape what it quotes).
  void comment(const std::string& text) { comments_ += "# " + text + '\n'; }

  std::string text() const {
    std::string out = comments_;
    for (size_t f = 0; f < kFamilies; ++f) {
      if (samples_[f].empty()) continue;
      out += cat_line("# HELP ", kFamilyText[f].name, kFamilyText[f].help);
      out += cat_line("# TYPE ", kFamilyText[f].name, "gauge");
      for (const auto& sample : samples_[f]) out += sample;
    }
    return out;
  }

 private:
  static std::string cat_line(const char* tag, const char* name, const char* rest) {
    return std::string(tag) + name + ' ' + rest + '\n';
  }

  std::string comments_;
  std::array<std::vector<std::string>, kFamilies> samples_;
  std::set<std::string> seen_;
};

const Entry* first_with(const Recipe& r, Role role) {
  for (const Entry& e : r.entries) {
    if (e.role == role) return &e;
  }
  return nullptr;
}

// The waiting item read that was created first (nullptr: none read).
const Entry* oldest_item(const Recipe& r, int64_t ready_by_ms = -1) {
  const Entry* oldest = nullptr;
  for (const Entry& e : r.entries) {
    if (e.role != Role::kItem || (ready_by_ms >= 0 && e.not_before_ms > ready_by_ms)) continue;
    if (!oldest || e.kv.create_revision < oldest->kv.create_revision) oldest = &e;
  }
  return oldest;
}

void add_queue(Exposition& x, const Recipe& r, int64_t now_ms) {
  const Labels labels{{"queue", r.name}, {"kind", in::kind_id(r.kind)}};
  x.add(kQueueDepth, labels, in::total(r, Role::kItem));
  if (const Entry* oldest = oldest_item(r)) x.add(kQueueOldestRevision, labels, oldest->kv.create_revision);
  if (r.kind != Kind::kWorkQueue) return;
  // Only a work item's record may carry a time: the not-before time of an
  // item enqueued or requeued with a delay. etcd keeps none for keys.
  if (const Entry* ready = oldest_item(r, now_ms); ready && ready->not_before_ms > 0) {
    x.add(kQueueOldestAge, labels, static_cast<double>(now_ms - ready->not_before_ms) / 1000.0);
  }
  const Labels queue{{"queue", r.name}};
  x.add(kInFlight, queue, in::total(r, Role::kClaimed));
  x.add(kDeadLetters, queue, in::total(r, Role::kDead));
}

void add_contenders(Exposition& x, const Recipe& r) {
  const Labels labels{{"lock", r.name}, {"kind", in::kind_id(r.kind)}};
  x.add(kLockHolders, labels, in::total(r, Role::kHolder));
  x.add(kLockWaiters, labels, in::total(r, Role::kWaiting));
  const Entry* holder = first_with(r, Role::kHolder);
  if (holder && r.kind != Kind::kSemaphore) x.add(kLockToken, labels, holder->kv.create_revision);
  if (r.kind == Kind::kSemaphore && r.permits) x.add(kPermits, {{"semaphore", r.name}}, *r.permits);
  // Locks and elections share one layout: the holder of either is a leader.
  if (holder && r.kind == Kind::kLockOrElection) {
    std::string leader = holder->kv.value;
    if (leader.size() > kMaxLeaderLabel) leader = leader.substr(0, kMaxLeaderLabel) + "...";
    x.add(kLeader, {{"election", r.name}, {"leader", leader}}, int64_t{1});
  }
}

void add_services(Exposition& x, const Recipe& r) {
  std::map<std::string, int64_t> read;  // instances read, by service
  for (const Entry& e : r.entries) {
    if (e.instance) ++read[e.instance->name];
  }
  for (const auto& [service, n] : read) {
    const auto total = r.totals.find(service);
    x.add(kServiceInstances, {{"service", r.name + "/" + service}}, total != r.totals.end() ? total->second : n);
  }
}

void add_recipe(Exposition& x, const Recipe& r, int64_t now_ms) {
  switch (r.kind) {
    case Kind::kQueue:
    case Kind::kPriorityQueue:
    case Kind::kWorkQueue:
      add_queue(x, r, now_ms);
      break;
    case Kind::kLockOrElection:
    case Kind::kRwLock:
    case Kind::kSemaphore:
      add_contenders(x, r);
      break;
    case Kind::kCountBarrier:
    case Kind::kDoubleBarrier:
    case Kind::kBarrier:
      x.add(kBarrierParties, {{"barrier", r.name}, {"kind", in::kind_id(r.kind)}}, in::total(r, Role::kParty));
      break;
    case Kind::kGate:
      x.add(kBarrierSet, {{"barrier", r.name}}, int64_t{1});
      break;
    case Kind::kCounter:
      if (r.value) x.add(kCounterValue, {{"counter", r.name}}, *r.value);
      break;
    case Kind::kServices:
      add_services(x, r);
      break;
    case Kind::kTransient:
    case Kind::kPlain:
      break;
  }
}

}  // namespace

std::string escape_label_value(std::string_view bytes) {
  std::string out;
  copy_utf8(out, bytes, [](std::string& o, unsigned char c) {
    if (c == '\\' || c == '"') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c == '\n') {
      o += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      o += '\\';  // the text \xHH, its backslash escaped
      append_hex(o, c);
    } else {
      o += static_cast<char>(c);
    }
  });
  return out;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc{} ? std::string(buf, end) : std::string("NaN");
}

std::string render_metrics(const std::vector<PrefixScrape>& scrapes, int64_t now_ms) {
  Exposition x;
  for (const PrefixScrape& s : scrapes) {
    const Labels prefix{{"prefix", s.prefix}};
    const std::string quoted = "prefix=\"" + escape_label_value(s.prefix) + "\"";
    if (!s.report) x.comment(quoted + " not read: " + escape_label_value(s.error));
    if (!s.stopped_at.empty()) {
      x.comment(quoted + " read up to \"" + escape_label_value(s.stopped_at) +
                "\" only: too many keys outside recipes' collections; the recipes past it are left out");
    }
    x.add(kUp, prefix, int64_t{s.report ? 1 : 0});
    x.add(kScrapeSeconds, prefix, s.seconds);
    if (!s.report) continue;
    x.add(kScrapeRequests, prefix, s.requests);
    x.add(kRevision, prefix, s.report->revision);
    for (const Recipe& r : s.report->recipes) add_recipe(x, r, now_ms);
  }
  return x.text();
}

}  // namespace etcd_cli::metrics
