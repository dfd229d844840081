// The demo's output: its progress lines, and the live view of the recipe
// state under the demo's prefix (who leads, who holds, queue depths, dead
// letters, the counter, the services).
//
// The view reads that state from the library itself: a subtree
// PathChildrenCache of the prefix, whose snapshot the library's inspection
// (etcd/recipes/inspect.h) turns into recipes, exactly as `etcd-recipes
// inspect` does.
// On a terminal it is a panel redrawn in place under the scrolling lines;
// elsewhere (tests, CI, pipes) a one-line `view:` summary each time the
// state changed, at most every 250 ms.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "etcd/client.h"
#include "etcd/recipes/inspect.h"

namespace etcd_cli::demo {

namespace inspect = etcd::recipes::inspect;

enum class ViewMode {
  kOff,    // --no-view
  kLines,  // `view:` lines (stdout is not a terminal, or one without cursor control)
  kPanel,  // a panel redrawn in place
};
// kOff unless `wanted`; kPanel when stdout is a terminal and TERM names
// one that moves the cursor (set, not "dumb"); else kLines.
ViewMode choose_view_mode(bool wanted);
// NO_COLOR (any non-empty value, no-color.org) turns bold and colors off.
bool color_allowed();

// Standard output, shared by the progress lines and the panel: a line is
// written above the panel, which is erased and drawn again below it, so
// the panel stays at the bottom while the lines scroll.
class Screen {
 public:
  Screen(bool panel, bool color) : panel_mode_(panel), color_(color) {}
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  bool color() const noexcept { return color_; }
  void line(std::string_view text);
  // Replaces the panel (kPanel only; ignored otherwise).
  void panel(std::vector<std::string> lines);
  // Erases the panel for good: whatever is written next is the end.
  void close_panel();

 private:
  void erase_locked();
  void draw_locked();

  std::mutex mutex_;
  const bool panel_mode_;
  const bool color_;
  bool closed_ = false;
  std::vector<std::string> panel_;
  size_t drawn_ = 0;  // panel lines on the terminal now
};

// Progress lines stamped with the time since the demo started. Copyable,
// so background handlers can hold their own copy.
class Progress {
 public:
  explicit Progress(std::shared_ptr<Screen> screen) : screen_(std::move(screen)) {}
  void say(std::string_view text) const;
  std::chrono::duration<double> elapsed() const { return etcd::Clock::now() - start_; }
  Screen& screen() const { return *screen_; }

 private:
  std::shared_ptr<Screen> screen_;
  etcd::Deadline start_ = etcd::Clock::now();
};

// One row of the view: the recipe NAME (with `prefix`: every recipe under
// NAME/) under a label. The demo knows which name is an election and which
// a lock; the keys do not tell (etcd/recipes/inspect.h), hence `token_word`.
struct ViewRow {
  std::string label;
  std::string name;
  bool prefix = false;
  std::string token_word = "token";
};

// A row's state in a few words (empty if nothing of it exists), and
// whether anything goes on in it: a holder or a waiter, items, parties,
// instances, a counter's value. A free lock, an empty queue or a released
// barrier is at rest.
struct RowState {
  std::string text;
  bool active = false;
};
// Pure: `report` is the inspection of the keys.
RowState describe_row(const inspect::Report& report, const ViewRow& row);

// The view: a cache of every key under `path`/ and a thread of its own that
// renders it. The cache's listener, on the client's executor, only marks
// the view stale; reading, recognizing and printing happen on the view's
// thread, so neither the scenario nor the client waits for the terminal.
class LiveView {
 public:
  LiveView(etcd::Client client, std::string path, std::vector<ViewRow> rows, ViewMode mode, Progress progress);
  ~LiveView();
  LiveView(const LiveView&) = delete;
  LiveView& operator=(const LiveView&) = delete;

  // Starts the cache and waits (until `deadline` or `stop`) for its first
  // read; throws etcd::Error if it failed. Then starts the view's thread.
  void start(etcd::Deadline deadline, std::stop_token stop);
  // A row the demo fills itself (the etcd members), shown first; empty
  // text removes it.
  void note(const std::string& label, std::string text);
  // Renders the last state one more time (if it changed), then stops.
  void stop();

 private:
  struct Shared;
  void run(std::stop_token stop);
  std::vector<std::string> render(std::vector<std::string>& summary);

  std::shared_ptr<Shared> shared_;
  std::vector<ViewRow> rows_;
  ViewMode mode_;
  Progress progress_;
  std::string path_;
  std::string last_summary_;
  std::jthread thread_;
};

}  // namespace etcd_cli::demo
