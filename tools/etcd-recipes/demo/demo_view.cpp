#include "demo_view.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>

#include "common.h"
#include "etcd/recipes/path_children_cache.h"
#include "inspect_text.h"

namespace etcd_cli::demo {
namespace {

using namespace std::chrono_literals;
using inspect::Kind;
using inspect::Recipe;
using inspect::Role;

// A `view:` line at most this often: a busy scene (a lock changing hands,
// jobs claimed and acked) becomes one line per step of its story, not one
// per key.
constexpr auto kLineInterval = 250ms;
// The panel is redrawn at most this often: lively, without flicker.
constexpr auto kPanelInterval = 100ms;

constexpr const char* kBold = "\x1b[1m";
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kReset = "\x1b[0m";

int terminal_width() {
  winsize w{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

// Cuts `line` to `width` visible columns, skipping over escape sequences:
// a panel line that wrapped would take two rows, and the panel would then
// erase one row too few.
std::string fit(const std::string& line, int width) {
  std::string out;
  int visible = 0;
  bool cut = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\x1b') {
      const size_t end = line.find('m', i);
      if (end == std::string::npos) break;
      out.append(line, i, end - i + 1);
      i = end;
      continue;
    }
    // Count a UTF-8 sequence as one column (its continuation bytes as none).
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) {
      if (visible == width) {
        cut = true;
        continue;
      }
      ++visible;
    } else if (cut) {
      continue;
    }
    out += c;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

std::string plural(int64_t n, const char* one, const char* many) { return cat(n, " ", n == 1 ? one : many); }

// A value as the view shows it: short, and only printable bytes.
std::string shown(std::string_view value) {
  std::string e = etcd_cli::inspect::excerpt(value, 24);
  // excerpt() quotes; the view's phrases read better without the quotes
  // unless the value is cut or empty.
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"' && e.size() > 2) return e.substr(1, e.size() - 2);
  return e;
}

const inspect::Entry* first_with(const Recipe& r, Role role) {
  for (const auto& e : r.entries) {
    if (e.role == role) return &e;
  }
  return nullptr;
}

// One recipe in a few words. `rel`: its name below a prefix row ("" for a
// row of one recipe).
RowState describe(const Recipe& r, const ViewRow& row, std::string_view rel) {
  const int64_t holders = inspect::count(r, Role::kHolder);
  const int64_t waiting = inspect::count(r, Role::kWaiting);
  const std::string in_line = waiting > 0 ? cat(", ", waiting, " waiting") : std::string();
  switch (r.kind) {
    case Kind::kLockOrElection: {
      const auto* h = first_with(r, Role::kHolder);
      if (!h) return {"free" + in_line, waiting > 0};
      return {cat(shown(h->kv.value), " (", row.token_word, " ", h->kv.create_revision, ")", in_line), true};
    }
    case Kind::kSemaphore:
      return {cat(holders, r.permits ? cat(" of ", *r.permits) : std::string(), " permits held", in_line),
              holders + waiting > 0};
    case Kind::kRwLock: {
      const auto* h = first_with(r, Role::kHolder);
      if (!h) return {"free" + in_line, waiting > 0};
      if (h->mode == "write") {
        return {cat("writer ", shown(h->kv.value), " (token ", h->kv.create_revision, ")", in_line), true};
      }
      return {cat(plural(holders, "reader", "readers"), " (token ", h->kv.create_revision, ")", in_line), true};
    }
    case Kind::kQueue:
    case Kind::kPriorityQueue: {
      const int64_t items = inspect::count(r, Role::kItem);
      std::string out = plural(items, "item", "items");
      if (r.kind == Kind::kPriorityQueue && items > 0) {
        const auto* next = first_with(r, Role::kItem);  // served first: entries are in serving order
        out += cat(", next ", shown(next->kv.value), " (priority ", next->priority, ")");
      }
      return {out, items > 0};
    }
    case Kind::kWorkQueue: {
      const int64_t ready = inspect::count(r, Role::kItem);
      const int64_t in_flight = inspect::count(r, Role::kClaimed);
      const int64_t dead = inspect::count(r, Role::kDead);
      return {cat(ready, " ready, ", in_flight, " in flight, ", plural(dead, "dead letter", "dead letters")),
              ready + in_flight + dead > 0};
    }
    case Kind::kCountBarrier:
    case Kind::kDoubleBarrier:
    case Kind::kBarrier: {
      const int64_t parties = inspect::count(r, Role::kParty);
      if (parties > 0) return {plural(parties, "party waits", "parties wait"), true};
      if (const auto* ready = first_with(r, Role::kReady)) {
        return {cat("released at revision ", ready->kv.mod_revision), false};
      }
      return {"empty", false};
    }
    case Kind::kGate:
      return {"set", true};
    case Kind::kCounter:
      return {r.value ? std::to_string(*r.value) : std::string("0"), true};
    case Kind::kServices: {
      std::map<std::string, std::vector<std::string>> ids;
      for (const auto& e : r.entries) ids[e.instance->name].push_back(e.id);
      std::vector<std::string> parts;
      for (const auto& [service, list] : ids) parts.push_back(service + ": " + join(list, ", "));
      return {join(parts, "; "), !parts.empty()};
    }
    case Kind::kTransient:
      return {std::string(rel.empty() ? r.name : rel), true};
    case Kind::kPlain:
      return {cat(rel.empty() ? r.name : rel, "=", shown(r.entries.front().kv.value)), true};
  }
  return {};
}

}  // namespace

ViewMode choose_view_mode(bool wanted) {
  if (!wanted) return ViewMode::kOff;
  const char* term = std::getenv("TERM");
  const bool cursor = term != nullptr && *term != '\0' && std::strcmp(term, "dumb") != 0;
  return ::isatty(STDOUT_FILENO) && cursor ? ViewMode::kPanel : ViewMode::kLines;
}

bool color_allowed() {
  const char* no_color = std::getenv("NO_COLOR");
  return no_color == nullptr || *no_color == '\0';
}

// --- Screen ------------------------------------------------------------------------------------

void Screen::erase_locked() {
  // Up to the panel's first row, then clear to the end of the screen.
  if (drawn_ > 0) std::cout << "\r\x1b[" << drawn_ << "A\x1b[J";
  drawn_ = 0;
}

void Screen::draw_locked() {
  const int width = terminal_width() - 1;
  for (const auto& l : panel_) std::cout << fit(l, width) << '\n';
  drawn_ = panel_.size();
}

void Screen::line(std::string_view text) {
  std::lock_guard lock(mutex_);
  if (!panel_mode_ || closed_) {
    print_line(text);
    return;
  }
  erase_locked();
  std::cout << text << '\n';
  draw_locked();
  std::cout << std::flush;
}

void Screen::panel(std::vector<std::string> lines) {
  std::lock_guard lock(mutex_);
  if (!panel_mode_ || closed_) return;
  erase_locked();
  panel_ = std::move(lines);
  draw_locked();
  std::cout << std::flush;
}

void Screen::close_panel() {
  std::lock_guard lock(mutex_);
  if (!panel_mode_ || closed_) return;
  erase_locked();
  std::cout << std::flush;
  closed_ = true;
}

// --- Progress ----------------------------------------------------------------------------------

void Progress::say(std::string_view text) const {
  char stamp[24];
  std::snprintf(stamp, sizeof stamp, "[%5.2fs] ", elapsed().count());
  screen_->line(stamp + std::string(text));
}

// --- rows --------------------------------------------------------------------------------------

RowState describe_row(const inspect::Report& report, const ViewRow& row) {
  RowState out;
  const std::string under = row.name + "/";
  for (const auto& r : report.recipes) {
    RowState one;
    if (r.name == row.name) {
      one = describe(r, row, "");
    } else if (row.prefix && r.name.starts_with(under)) {
      one = describe(r, row, std::string_view(r.name).substr(under.size()));
    } else {
      continue;
    }
    out.text += (out.text.empty() ? "" : ", ") + one.text;
    out.active = out.active || one.active;
  }
  return out;
}

// --- LiveView ----------------------------------------------------------------------------------

struct LiveView::Shared {
  std::mutex mutex;
  std::condition_variable_any changed;
  uint64_t generation = 0;
  std::vector<std::pair<std::string, std::string>> notes;
  std::unique_ptr<etcd::recipes::PathChildrenCache> cache;
  etcd::Subscription subscription;
};

LiveView::LiveView(etcd::Client client, std::string path, std::vector<ViewRow> rows, ViewMode mode, Progress progress)
    : shared_(std::make_shared<Shared>()),
      rows_(std::move(rows)),
      mode_(mode),
      progress_(std::move(progress)),
      path_(path) {
  etcd::recipes::PathChildrenCacheOptions options;
  options.scope = etcd::recipes::PathChildrenCacheOptions::Scope::kSubtree;
  options.start_mode = etcd::recipes::PathChildrenCacheOptions::StartMode::kBuildInitialCache;
  shared_->cache = std::make_unique<etcd::recipes::PathChildrenCache>(std::move(client), std::move(path), options);
}

LiveView::~LiveView() {
  stop();
  shared_->subscription = {};
  shared_->cache->close();
}

void LiveView::start(etcd::Deadline deadline, std::stop_token stop) {
  // The listener runs on the client's executor: it only counts the change
  // and wakes the view's thread. It holds what it touches, not the view.
  shared_->subscription = shared_->cache->on_event([shared = std::weak_ptr<Shared>(shared_)](const auto&) {
    if (auto s = shared.lock()) {
      {
        std::lock_guard lock(s->mutex);
        ++s->generation;
      }
      s->changed.notify_all();
    }
  });
  shared_->cache->start();
  auto initialized = shared_->cache->wait_initialized().deadline(deadline).stop_token(std::move(stop)).wait();
  if (!initialized.ok()) throw etcd::Error(std::move(initialized).status());
  if (mode_ == ViewMode::kOff) return;
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
}

void LiveView::note(const std::string& label, std::string text) {
  {
    std::lock_guard lock(shared_->mutex);
    auto& notes = shared_->notes;
    auto it = std::find_if(notes.begin(), notes.end(), [&](const auto& n) { return n.first == label; });
    if (text.empty()) {
      if (it != notes.end()) notes.erase(it);
    } else if (it != notes.end()) {
      it->second = std::move(text);
    } else {
      notes.emplace_back(label, std::move(text));
    }
    ++shared_->generation;
  }
  shared_->changed.notify_all();
}

void LiveView::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
  if (mode_ == ViewMode::kPanel) progress_.screen().close_panel();
}

std::vector<std::string> LiveView::render(std::vector<std::string>& summary) {
  const auto snapshot = shared_->cache->snapshot();
  std::vector<etcd::KeyValue> kvs;
  kvs.reserve(snapshot.nodes.size());
  for (const auto& n : snapshot.nodes) {
    kvs.push_back(etcd::KeyValue{.key = n.key,
                                 .value = n.value ? *n.value : std::string(),
                                 .create_revision = n.create_revision,
                                 .mod_revision = n.mod_revision,
                                 .version = n.version,
                                 .lease = n.lease});
  }
  const auto report = inspect::build_report(std::move(kvs), snapshot.revision);

  std::vector<std::pair<std::string, RowState>> rows;
  {
    std::lock_guard lock(shared_->mutex);
    for (const auto& [label, text] : shared_->notes) rows.emplace_back(label, RowState{text, true});
  }
  for (const auto& row : rows_) rows.emplace_back(row.label, describe_row(report, row));

  size_t label_width = 0;
  for (const auto& [label, state] : rows) label_width = std::max(label_width, label.size());
  const bool color = progress_.screen().color();
  std::vector<std::string> panel;
  panel.push_back(cat(color ? kBold : "", "-- live view of ", path_, "/ at revision ", snapshot.revision, " ",
                      std::string(24, '-'), color ? kReset : ""));
  for (const auto& [label, state] : rows) {
    // The one-line summary leaves out what is at rest (a free lock, an
    // empty queue, a released barrier): the line tells what goes on.
    if (state.active) summary.push_back(label + ": " + state.text);
    const std::string padded = label + std::string(label_width - label.size(), ' ');
    const std::string text = state.text.empty() ? "-" : state.text;
    panel.push_back(state.active ? cat("  ", color ? kBold : "", padded, color ? kReset : "", "  ", text)
                                 : cat("  ", color ? kDim : "", padded, "  ", text, color ? kReset : ""));
  }
  return panel;
}

void LiveView::run(std::stop_token stop) {
  uint64_t shown = 0;
  auto next = etcd::Clock::now();
  const auto interval = mode_ == ViewMode::kPanel ? kPanelInterval : kLineInterval;
  bool first = true;
  for (;;) {
    {
      std::unique_lock lock(shared_->mutex);
      // Something new to show, then no sooner than `next`: the changes of
      // the wait are shown together. A stop shows the last state too, also
      // no sooner than `next` (a wait of at most one interval).
      shared_->changed.wait(lock, stop, [&] { return first || shared_->generation != shown; });
      shared_->changed.wait_until(lock, next, [] { return false; });
      shown = shared_->generation;
    }
    first = false;
    std::vector<std::string> summary;
    auto panel = render(summary);
    if (mode_ == ViewMode::kPanel) {
      progress_.screen().panel(std::move(panel));
    } else {
      std::string line = summary.empty() ? std::string("idle") : join(summary, "; ");
      if (line != last_summary_) {
        // The first state, before any recipe ran, is no news.
        if (!(last_summary_.empty() && summary.empty())) progress_.say("  view: " + line);
        last_summary_ = std::move(line);
      }
    }
    next = etcd::Clock::now() + interval;
    if (stop.stop_requested()) return;
  }
}

}  // namespace etcd_cli::demo
