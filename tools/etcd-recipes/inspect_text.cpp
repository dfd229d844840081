#include "inspect_text.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "simple_format.h"

namespace etcd_cli::inspect {
namespace {

using etcd::recipes::inspect::count;
using etcd::recipes::inspect::Entry;
using etcd::recipes::inspect::Recipe;
using etcd::recipes::inspect::Role;
using etcd::recipes::inspect::summarised;
using etcd::recipes::inspect::total;
using etcd::recipes::inspect::unread;

std::string fmt_age(int64_t ms) {
  if (ms < 0) ms = 0;
  const int64_t s = ms / 1000;
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  if (s < 172800) return std::to_string(s / 3600) + " h " + std::to_string(s / 60 % 60) + " min";
  return std::to_string(s / 86400) + " d " + std::to_string(s / 3600 % 24) + " h";
}

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string kind_words(Kind kind) {
  if (kind == Kind::kTransient) return "transient key";
  // Otherwise the kind's id in words: "work queue", "lock or election", ...
  std::string words = etcd::recipes::inspect::kind_id(kind);
  std::replace(words.begin(), words.end(), '_', ' ');
  return words;
}

std::string excerpt(std::string_view bytes, size_t max) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == max) {
      out += "\"...";
      return out;
    }
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string lease_words(int64_t lease, const Leases& leases) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(lease));
  std::string out = std::string("lease ") + hex;
  const auto it = leases.find(lease);
  if (it == leases.end()) return out;
  if (it->second.ttl < 0) return out + ", expired";
  return out + ", TTL " + std::to_string(it->second.ttl) + "/" + std::to_string(it->second.granted) + " s";
}

namespace {

// "work queue /wq: ": a recipe's headline up to its state.
std::string headline(const Recipe& r) { return kind_words(r.kind) + " " + simple_field(r.name) + ": "; }

std::string revs(const etcd::KeyValue& kv) { return "created at revision " + std::to_string(kv.create_revision); }

// "KEY VALUE (lease ..., created at revision R)": one key as a detail line.
std::string key_line(const char* label, const etcd::KeyValue& kv, const Leases& leases) {
  std::string line = std::string("  ") + label + " " + simple_field(kv.key) + " " + excerpt(kv.value) + " (";
  if (kv.lease != 0) line += lease_words(kv.lease, leases) + ", ";
  return line + revs(kv) + ")";
}

void render_contenders(const Recipe& r, const Leases& leases, std::vector<std::string>& out) {
  const int64_t holders = total(r, Role::kHolder), waiting = total(r, Role::kWaiting);
  std::string head = headline(r);
  if (r.kind == Kind::kSemaphore) {
    head += r.permits ? std::to_string(holders) + " of " + std::to_string(*r.permits) + " permits held"
                      : std::to_string(holders) + " holders (the permit count, NAME/permits, is missing)";
  } else if (holders == 0) {
    head += "free";
  } else {
    const Entry& h =
        *std::find_if(r.entries.begin(), r.entries.end(), [](const Entry& e) { return e.role == Role::kHolder; });
    if (r.kind == Kind::kRwLock) {
      head += h.mode == "write" ? "write-locked by "
                                : "read-locked by " + plural(holders, "reader", "readers") + ", first ";
    } else {
      head += "held by ";
    }
    head += excerpt(h.kv.value) + " (" + lease_words(h.kv.lease, leases) + "), token " +
            std::to_string(h.kv.create_revision);
  }
  if (waiting > 0) head += "; " + std::to_string(waiting) + " waiting";
  out.push_back(head);
  for (const Entry& e : r.entries) {
    if (e.role == Role::kPermits) continue;
    std::string label = e.role == Role::kHolder ? "holder " : "waiting";
    if (r.kind == Kind::kRwLock) label += " " + e.mode;
    out.push_back("  " + label + " " + excerpt(e.kv.value) + " " + simple_field(e.kv.key) + " (" +
                  lease_words(e.kv.lease, leases) + "), token " + std::to_string(e.kv.create_revision));
  }
}

void render_queue(const Recipe& r, const Report& report, const Leases& leases, int64_t now_ms,
                  std::vector<std::string>& out) {
  std::string head = headline(r);
  const int64_t producers = count(r, Role::kProducer);
  const bool partial = summarised(r, Role::kItem);
  if (r.kind != Kind::kWorkQueue) {
    const int64_t items = total(r, Role::kItem);
    head += plural(items, "item", "items");
    const Entry* oldest = nullptr;
    for (const Entry& e : r.entries) {
      if (e.role == Role::kItem && (!oldest || e.kv.create_revision < oldest->kv.create_revision)) oldest = &e;
    }
    if (oldest) {
      head += ", oldest " + revs(oldest->kv) + " (" + std::to_string(report.revision - oldest->kv.create_revision) +
              " revisions ago)";
    }
    if (r.kind == Kind::kPriorityQueue && items > 0) {
      std::map<int64_t, int64_t> by_priority;
      for (const Entry& e : r.entries) {
        if (e.role == Role::kItem) ++by_priority[e.priority];
      }
      std::string parts;
      for (auto [p, n] : by_priority)
        parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " at " + std::to_string(p);
      head +=
          (partial ? "; by priority, of the " + std::to_string(count(r, Role::kItem)) + " read: " : "; by priority: ") +
          parts;
    }
    // A producer key outlives its items only while (or if) its producer did not close.
    if (producers > 0) head += "; " + plural(producers, "producer key", "producer keys");
    out.push_back(head);
    for (const Entry& e : r.entries) {
      if (e.role != Role::kItem) continue;
      std::string line = "  item " + simple_field(e.id);
      if (r.kind == Kind::kPriorityQueue) line += " priority " + std::to_string(e.priority);
      out.push_back(line + " " + excerpt(e.kv.value) + " (" + revs(e.kv) + ")");
    }
    return;
  }
  int64_t ready = 0, delayed = 0;
  for (const Entry& e : r.entries) {
    if (e.role == Role::kItem) (e.not_before_ms > now_ms ? delayed : ready) += 1;
  }
  const int64_t in_flight = total(r, Role::kClaimed), dead = total(r, Role::kDead);
  if (partial) {
    // Ready or delayed is in each item's record: known for the items read only.
    head += std::to_string(total(r, Role::kItem)) + " waiting (of the " + std::to_string(ready + delayed) +
            " read: " + std::to_string(ready) + " ready, " + std::to_string(delayed) + " delayed), ";
  } else {
    head += std::to_string(ready) + " ready, " + std::to_string(delayed) + " delayed, ";
  }
  head += std::to_string(in_flight) + " in flight, " + plural(dead, "dead letter", "dead letters");
  const Entry* oldest = nullptr;
  for (const Entry& e : r.entries) {
    if ((e.role == Role::kItem || e.role == Role::kClaimed) &&
        (!oldest || e.kv.create_revision < oldest->kv.create_revision)) {
      oldest = &e;
    }
  }
  if (oldest) {
    head += "; oldest item " + revs(oldest->kv) + " (" + std::to_string(report.revision - oldest->kv.create_revision) +
            " revisions ago)";
  }
  out.push_back(head);
  for (const Entry& e : r.entries) {
    std::string line;
    switch (e.role) {
      case Role::kClaimed:
        line = "  in flight " + simple_field(e.id) + " claimed by " + excerpt(e.claimed_by) + ", attempt " +
               std::to_string(e.deliveries) + " (visibility " + lease_words(e.claim_lease, leases) + ") " +
               excerpt(e.payload);
        break;
      case Role::kItem:
        line = std::string("  ") + (e.not_before_ms > now_ms ? "delayed " : "ready ") + simple_field(e.id) + " " +
               excerpt(e.payload);
        if (e.not_before_ms > now_ms) line += " (ready in " + fmt_age(e.not_before_ms - now_ms) + ")";
        if (e.deliveries > 0) line += " (delivered " + plural(e.deliveries, "time", "times") + " before)";
        break;
      case Role::kDead:
        line = "  dead letter " + simple_field(e.id) + " after " + plural(e.deliveries, "delivery", "deliveries") +
               ", dead for " + fmt_age(now_ms - e.since_ms) + ": " + excerpt(e.reason, 200) + " " + excerpt(e.payload);
        break;
      case Role::kClaim:
        line = "  claim " + simple_field(e.id) + (partial ? " (its item not read), by " : " without its item, by ") +
               excerpt(e.kv.value) + " (" + lease_words(e.kv.lease, leases) + ")";
        break;
      default:
        continue;
    }
    out.push_back(line);
  }
}

void render_barrier(const Recipe& r, const Leases& leases, std::vector<std::string>& out) {
  std::string head = headline(r);
  const int64_t parties = total(r, Role::kParty);
  const Entry* ready = nullptr;
  for (const Entry& e : r.entries) {
    if (e.role == Role::kReady) ready = &e;
  }
  if (r.kind == Kind::kDoubleBarrier) {
    head += ready ? "round in progress (started at revision " + std::to_string(ready->kv.create_revision) + "), "
                  : "between rounds, ";
    head += plural(parties, "party", "parties") + " in";
  } else {
    // N is each party's argument and not stored in etcd: only the arrivals can be counted.
    head += plural(parties, "party", "parties") + " waiting";
    if (ready) head += "; last round completed at revision " + std::to_string(ready->kv.mod_revision);
  }
  out.push_back(head);
  for (const Entry& e : r.entries) {
    if (e.role == Role::kParty) out.push_back(key_line("party", e.kv, leases));
  }
}

void render_gate(const Recipe& r, const Leases& leases, std::vector<std::string>& out) {
  const Entry *gate = nullptr, *set_by = nullptr;
  for (const Entry& e : r.entries) (e.role == Role::kGateKey ? gate : set_by) = &e;
  std::string head = kind_words(r.kind) + " " + r.name + ": set by ";
  head += excerpt((set_by ? set_by : gate)->kv.value);
  if (set_by) head += " at revision " + std::to_string(set_by->kv.mod_revision);
  head += gate ? " (setter alive: " + lease_words(gate->kv.lease, leases) + ")"
               : " (the setter's lease is gone; the gate stays set until `barrier remove`)";
  out.push_back(head);
}

void render_counter(const Recipe& r, std::vector<std::string>& out) {
  std::string head = headline(r);
  const Entry* value = nullptr;
  for (const Entry& e : r.entries) {
    if (e.role == Role::kValue) value = &e;
  }
  if (r.value) {
    head += std::to_string(*r.value);
  } else if (value) {
    head += "not a decimal int64: " + excerpt(value->kv.value);
  } else {
    head += "0 (the key is absent)";
  }
  if (value)
    head += " (" + plural(value->kv.version, "write", "writes") + ", last at revision " +
            std::to_string(value->kv.mod_revision) + ")";
  if (const int64_t n = total(r, Role::kReceipt); n > 0) head += "; " + plural(n, "receipt", "receipts");
  out.push_back(head);
}

void render_services(const Recipe& r, const Leases& leases, std::vector<std::string>& out) {
  std::map<std::string, std::vector<const Entry*>> by_service;
  for (const Entry& e : r.entries) by_service[e.instance->name].push_back(&e);
  std::string head = headline(r);
  std::string parts;
  for (const auto& [service, list] : by_service) {
    const auto n = r.totals.find(service);
    parts += (parts.empty() ? "" : "; ") + simple_field(service) + ": " +
             plural(n != r.totals.end() ? n->second : static_cast<int64_t>(list.size()), "instance", "instances");
  }
  out.push_back(head + parts);
  for (const auto& [service, list] : by_service) {
    for (const Entry* e : list) {
      std::string line = "  " + simple_line("", {service, e->id, e->instance->endpoint()});
      if (!e->instance->enabled) line += " disabled";
      line += " (";
      if (e->kv.lease != 0) line += lease_words(e->kv.lease, leases) + ", ";
      out.push_back(line + revs(e->kv) + ")");
    }
  }
}

}  // namespace

std::vector<std::string> render_text(const Report& report, const Leases& leases, int64_t now_ms, RenderLimits limits) {
  std::vector<std::string> out;
  size_t blocks = 0;
  for (const Recipe& r : report.recipes) {
    if (limits.recipes != 0 && blocks == limits.recipes) {
      const size_t more = report.recipes.size() - blocks;
      out.push_back("... and " + std::to_string(more) + (more == 1 ? " more recipe" : " more recipes") +
                    " (inspect --all lists every key)");
      break;
    }
    ++blocks;
    const size_t first = out.size();
    switch (r.kind) {
      case Kind::kLockOrElection:
      case Kind::kRwLock:
      case Kind::kSemaphore:
        render_contenders(r, leases, out);
        break;
      case Kind::kQueue:
      case Kind::kPriorityQueue:
      case Kind::kWorkQueue:
        render_queue(r, report, leases, now_ms, out);
        break;
      case Kind::kCountBarrier:
      case Kind::kDoubleBarrier:
      case Kind::kBarrier:
        render_barrier(r, leases, out);
        break;
      case Kind::kGate:
        render_gate(r, leases, out);
        break;
      case Kind::kCounter:
        render_counter(r, out);
        break;
      case Kind::kServices:
        render_services(r, leases, out);
        break;
      case Kind::kTransient:
      case Kind::kPlain: {
        const etcd::KeyValue& kv = r.entries.front().kv;
        std::string line = kind_words(r.kind) + " " + simple_field(kv.key) + ": " + excerpt(kv.value) + " (";
        if (kv.lease != 0) line += lease_words(kv.lease, leases) + ", ";
        out.push_back(line + revs(kv) + ")");
        break;
      }
    }
    // Headline, then at most lines_per_recipe detail lines, then how many more there are.
    const size_t details = out.size() - first - 1;
    size_t hidden = 0;
    if (limits.lines_per_recipe != 0 && details > limits.lines_per_recipe) {
      hidden = details - limits.lines_per_recipe;
      out.resize(first + 1 + limits.lines_per_recipe);
    }
    if (const int64_t more = static_cast<int64_t>(hidden) + unread(r); more > 0) {
      out.push_back("  ... and " + std::to_string(more) + " more (inspect --all lists every key)");
    }
  }
  return out;
}

}  // namespace etcd_cli::inspect
