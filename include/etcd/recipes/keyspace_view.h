// KeyspaceView: a gap-free local view of every key under a prefix (or in a
// [key, range_end) range), with the events that keep it current — what a
// raw watch (etcd::Watcher) cannot give on its own, since a watch whose
// next revision was compacted while the client was cut off ends with
// Errc::kResyncNeeded and leaves the reload to its user.
//
//   etcd::recipes::KeyspaceView view(client, "/config/");
//   auto sub = view.on_event([](const etcd::recipes::KeyspaceEvent& e) { ... });
//   view.start();
//   view.wait_initialized().timeout(5s).wait().value();
//   auto snap = view.snapshot();                       // every key, at snap.revision
//
//   auto events = view.events();                       // the same events, to co_await
//   while (true) {
//     auto e = co_await events.next();                 // Result<std::optional<KeyspaceEvent>>
//     if (!e.ok() || !*e) break;                       // failed (kFromRevision), or the view was closed
//     apply(**e);
//   }
//
// How. It reads the range at one revision R — page by page (page_size keys
// per Range, fewer when values pass 4 MiB), never as one huge response —
// and watches from R+1 on the client's shared watch stream: no change
// between the read and the watch is lost. After a reconnect the watch
// resumes where it stopped. When it cannot (the revision it needs was
// compacted meanwhile) or the watch fails, the view reads the whole range
// again and reports exactly the differences between what it had shown and
// what it read as ONE kReset event: the keys removed, added and updated (a
// key deleted and created again meanwhile is updated: its create_revision
// changed); changes that cancelled out during the gap (a key created and
// deleted) are not in it. The view never replaces its state silently.
//
// Events, one at a time, in revision order, on the client's executor (never
// on a gRPC thread); when a listener runs, snapshot() already shows the
// state after its event:
//   kAdded        a key appeared: `current`
//   kUpdated      its value, lease or incarnation changed: `previous`, `current`
//   kRemoved      a key is gone: `previous` is the last value the view had
//   kInitialized  the first read is done (after its kAdded events, if any)
//   kReset        after a gap: `changes` holds exactly the differences (in
//                 key order, each a kAdded/kUpdated/kRemoved), `cause` why
// A Txn that changes several keys gives several events with its revision.
// `revision` is the revision at which the view is exact after the event.
//
// Start modes (KeyspaceViewOptions::start):
//   kFromNow       the first read fills the view silently: snapshot() has
//                  it, events are the changes after it
//   kWithSnapshot  the first read's keys arrive as kAdded events (at its
//                  revision), then kInitialized
//   kFromRevision  the first read is at start_revision, and every change
//                  after it arrives as an event; if etcd compacted that
//                  revision already, the view fails: wait_initialized()
//                  gives Errc::kCompacted (no silent fallback to a newer one)
//
// Streams (etcd/stream.h): events() gives the same events as on_event, from
// the moment the stream is opened (open it before start() to see the first
// ones), with a bounded buffer (StreamOptions::capacity). A full buffer
// never grows and never blocks the view: the buffered events and those that
// keep coming fold into ONE kReset (cause kResourceExhausted) with the net
// differences from the state the consumer last saw, so a slow consumer
// still ends up exact. Closing the view ends its streams (std::nullopt
// after what they buffered).
//
// Cost and memory. It HOLDS EVERY KEY IN MEMORY: one std::map node per key
// (the key, its value bytes, four revisions/lease fields: ~100 bytes
// besides the key and value), plus, while a resync reads, a second copy of
// the range. The first read is ceil(keys / page_size) Ranges (more when
// values are large); then one watch (on the client's shared stream) and no
// requests while nothing is cut off; each resync one more paged read of the
// whole range. Per change: O(log keys) to apply, nothing sent. A stream's
// collapsed reset holds at most one entry per key. No etcd writes ever.
//
// Metrics (labels {prefix}): etcd_recipes_view_events_total (events
// delivered), etcd_recipes_view_resyncs_total, etcd_recipes_view_keys
// (gauge), etcd_recipes_view_stream_overflows_total.
//
// Lifecycle as every recipe (recipe.h): the constructor does no I/O; bad
// input (an empty key or one with a NUL byte, a key ending in "//",
// range_end not after the key, a start_revision without kFromRevision or
// below 1, page_size < 1) fails start() and every call with
// Errc::kBadArgument; close() stops the watch and ends the streams. The key
// is the view's name in errors and metrics, with a '*' after a trailing '/'
// (name(): "/config/*", identity(): "KeyspaceView[/config/*]").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/kv.h"
#include "etcd/recipes/recipe.h"
#include "etcd/status.h"
#include "etcd/stream.h"

namespace etcd::recipes {

struct KeyspaceEvent {
  enum class Type { kAdded, kUpdated, kRemoved, kInitialized, kReset };
  Type type = Type::kAdded;
  // kAdded, kUpdated, kRemoved: the key.
  std::string key{};
  // kUpdated, kRemoved: what the view had before (kRemoved: the last value).
  std::optional<KeyValue> previous{};
  // kAdded, kUpdated: the key now.
  std::optional<KeyValue> current{};
  // The view is exact at this revision once the event is applied.
  int64_t revision = 0;
  // kReset: the differences, in key order.
  std::vector<KeyspaceEvent> changes{};
  // kReset: why (Errc::kResyncNeeded / kCompacted after a compaction, the
  // failure that ended the watch, a resync(), or kResourceExhausted for a
  // stream's consumer that fell behind).
  Status cause{};

  friend bool operator==(const KeyspaceEvent&, const KeyspaceEvent&) = default;
};

std::string_view to_string(KeyspaceEvent::Type type) noexcept;

// The view at one revision, in key order.
struct KeyspaceSnapshot {
  std::vector<KeyValue> kvs{};
  int64_t revision = 0;  // 0: not initialized yet
};

struct KeyspaceViewOptions {
  enum class Start { kFromNow, kWithSnapshot, kFromRevision };
  Start start = Start::kFromNow;
  // kFromRevision: the revision of the first read (at least 1).
  int64_t start_revision = 0;
  // Empty: the view's key is a prefix. Otherwise the range [key,
  // range_end) (etcd::kFromKey: every key from it on).
  std::string range_end{};
  // Keys per Range of a (re)read, at least 1.
  int64_t page_size = 1000;
  RecipeOptions recipe{};
};

namespace detail {
class KeyspaceViewState;
}  // namespace detail

class KeyspaceView : public RecipeHandle {
 public:
  using Event = KeyspaceEvent;
  using Options = KeyspaceViewOptions;

  // Do no I/O. `key` is the prefix (or the start of the range); it may end
  // with '/' ("/config/": the keys under /config/).
  KeyspaceView(Client client, std::string key);
  KeyspaceView(Client client, std::string key, KeyspaceViewOptions options);
  KeyspaceView(KeyspaceView&&) noexcept = default;
  KeyspaceView& operator=(KeyspaceView&&) noexcept = default;

  // The prefix or the start of the range; the end of the range ([key(),
  // range_end()), computed from the prefix if none was given).
  const std::string& key() const;
  const std::string& range_end() const;

  // Completes once the first read has been applied and its events
  // delivered. Fails with Errc::kClosed on close(), kBadArgument for bad
  // input, kCompacted (kFromRevision whose revision is gone),
  // kFailedPrecondition before start(), or by its deadline / stop token.
  Call<void> wait_initialized();
  bool initialized() const;
  // The revision at which the view is exact (0 before the first read).
  int64_t revision() const;
  size_t size() const;
  std::optional<KeyValue> get(std::string_view key) const;
  KeyspaceSnapshot snapshot() const;
  // Read the range again now and report the differences as a kReset
  // (e.g. an owner that suspects something). A no-op before the first
  // read and after close().
  void resync();
  // Resyncs done after the first read.
  uint64_t resyncs() const;

  // Runs on each event (see the top of this file). A listener that throws
  // is recorded in errors(). A listener added after the first read hears of
  // later events only.
  Subscription on_event(std::function<void(const KeyspaceEvent&)> listener);
  // The events from now on, to pull (etcd/stream.h); a full buffer folds
  // into one kReset. Ends (std::nullopt) when the view is closed, or with
  // the view's failure (kFromRevision: kCompacted).
  Stream<KeyspaceEvent> events(StreamOptions options);
  Stream<KeyspaceEvent> events() { return events(StreamOptions()); }

 private:
  std::shared_ptr<detail::KeyspaceViewState> state_;
};

}  // namespace etcd::recipes
