// PrefixView (internal): the one mechanism by which a recipe keeps a local,
// exact view of everything under a key prefix (or of one key).
//
// It reads the range at one revision R, page by page (so a large prefix never
// arrives as one huge response), then watches from R+1, so no change between
// the read and the watch is lost. Changes reach the owner as batches, one per
// revision (a Txn may change several keys at once), in revision order, on
// the recipe's strand (client_link.h: its listeners run there too): never
// on a gRPC thread, one at a time.
//
// When the watch cannot continue without a gap (the revision it needs was
// compacted while the client was cut off: Errc::kCompacted /
// Errc::kResyncNeeded) or ends with a failure, the view reads the range again
// at a new revision and reports exactly what differs from what it had shown
// (keys removed, added, updated) as one kResynced batch. The owner never sees
// a silent replacement of its state.
//
// The view follows its owner's RecipeCore: it stops when the core is closed
// (waiters of wait_initialized() end with Errc::kClosed), records failures
// that are not transient on it, and retries every failed read with backoff.
// While it runs (from start() until it stops) it is work in flight: it
// holds the recipe's link to the client, and lets go of it when it stops.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/call.h"
#include "etcd/recipes/recipe.h"
#include "etcd/watch.h"

namespace etcd::recipes::detail {

// One key as etcd stores it (the key itself is the map's key).
struct ViewEntry {
  std::string value{};
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
  // What the owner's Options::decode made of `value` (a typed cache's T,
  // or its decode error), kept in the same node so that a typed view costs
  // one map, not two. Not part of equality: it is derived from `value`.
  std::shared_ptr<const void> decoded{};

  friend bool operator==(const ViewEntry& a, const ViewEntry& b) {
    return a.value == b.value && a.create_revision == b.create_revision && a.mod_revision == b.mod_revision &&
           a.version == b.version && a.lease == b.lease;
  }
};

ViewEntry to_entry(KeyValue kv);
// The KeyValue of `key` with `entry`.
KeyValue to_kv(const std::string& key, const ViewEntry& entry);

using ViewMap = std::map<std::string, ViewEntry, std::less<>>;

struct ViewEvent {
  enum class Type { kAdded, kUpdated, kRemoved };
  Type type = Type::kAdded;
  std::string key{};
  // The entry now (kAdded, kUpdated), or the last one the view had (kRemoved).
  ViewEntry entry{};
  // kUpdated: the entry the view had before.
  std::optional<ViewEntry> previous{};

  friend bool operator==(const ViewEvent&, const ViewEvent&) = default;
};

// What changed between two states of a range, in key order: keys only in
// `before` are kRemoved, keys only in `after` kAdded, keys in both whose
// entry differs kUpdated (a key deleted and created again in between is an
// update whose create_revision changed). Equal states give no event.
std::vector<ViewEvent> diff_views(const ViewMap& before, const ViewMap& after);

// Applies one revision's watch events to `map` (events whose key `accept`
// refuses are ignored) and returns what they changed for the view. A delete
// of a key the view does not have changes nothing; a put whose entry equals
// the one the view has (a repeat) neither. `decoded`, if given, holds the
// ViewEntry::decoded of each event of [begin, end) (by offset from begin).
std::vector<ViewEvent> apply_events(ViewMap& map, const std::vector<Event>& events, size_t begin, size_t end,
                                    const std::function<bool(std::string_view)>& accept);
std::vector<ViewEvent> apply_events(ViewMap& map, const std::vector<Event>& events, size_t begin, size_t end,
                                    const std::function<bool(std::string_view)>& accept,
                                    std::vector<std::shared_ptr<const void>>* decoded);

// A batch of changes delivered to the owner.
struct ViewBatch {
  enum class Kind {
    kInitialized,  // the first read is done (events: see PrefixView::Options::initial_events)
    kChanged,      // one revision's changes, from the watch
    kResynced,     // after a gap: the differences between the old and the new read
  };
  Kind kind = Kind::kChanged;
  // The view is exact at this revision once the batch is applied.
  int64_t revision = 0;
  std::vector<ViewEvent> events{};
  // kResynced: why the view had to read again (Errc::kCompacted or
  // kResyncNeeded after a compaction, or the failure that ended the watch).
  Status cause{};
  // The whole view after this batch. Valid only during the handler call.
  const ViewMap* state = nullptr;
  // A windowed view (Options::window) whose range goes on: the keys at or
  // after this one are not in the view. Empty: the view holds every key.
  std::string window_end{};
};

// An owned copy of the view at one revision.
struct ViewSnapshot {
  ViewMap entries{};
  int64_t revision = 0;  // 0: not initialized yet
};

class PrefixView : public std::enable_shared_from_this<PrefixView> {
 public:
  using Handler = std::function<void(const ViewBatch&)>;

  struct Options {
    // Follow exactly one key (NodeCache) instead of a prefix.
    bool single_key = false;
    // Follow [range, range_end) instead of the prefix `range` (a recipe
    // whose keys of interest sit under neighbouring prefixes, and not the
    // ones between them or after).
    std::string range_end{};
    // Keys to keep (e.g. only direct children); others are never stored
    // nor reported. Runs on the view's strand.
    std::function<bool(std::string_view key)> accept{};
    // The kInitialized batch lists every key as kAdded (a cache that
    // reports each child once); without it, the batch has no events and the
    // owner reads `state`.
    bool initial_events = false;
    // Turns a stored value into ViewEntry::decoded (a typed cache decodes
    // with its codec here). Runs on the view's strand, outside its lock,
    // once per stored version of a key; must not throw.
    std::function<std::shared_ptr<const void>(std::string_view key, std::string_view value)> decode{};
    // Keys per Range page (at least 1): a large prefix arrives in many
    // small responses, never in one that holds it all.
    int64_t page_size = 1000;
    // Backoff cap for retried reads.
    std::chrono::milliseconds max_backoff{2000};
    // A window (the queues: the head of a long range, not all of it):
    // keys at or after `window_from` are held only up to a bound, the
    // first `window` of them in key order (fewer if their values pass
    // `window_bytes`); keys before `window_from` (up to `full_end`, if
    // set: keys between it and window_from are neither read nor kept) are
    // held in full. The first read of the window is one Range of
    // `window` + 1 keys, whichever the range's length; the watch covers the
    // whole range, and keeps only changes before the bound. When the
    // window drains under half of its size the view reads on from the
    // bound (one Range, at the view's revision, with the changes that came
    // meanwhile applied), and when changes grow it past twice its size it
    // lets go of the keys past its size (kRemoved: they left the window).
    // grow() doubles it. 0: no window, every key is held.
    int64_t window = 0;
    // etcd counts every key from a limited Range's start to its end, so a
    // read on from the bound of a long range costs what is left of it. A
    // range whose keys sort by something that grows (the queues': a
    // revision) can say where a part of it ends: given the key a read
    // starts at, a step (1, then 2, 4, ... while the parts hold too few
    // keys) and the view's revision, the end of the part to read (empty:
    // the range's end). Then each read counts about the keys it returns.
    std::function<std::string(std::string_view from, uint64_t step, int64_t revision)> window_slice{};
    std::string window_from{};
    std::string full_end{};
    size_t window_bytes = 8 << 20;
    // Read the range first at this revision instead of the newest (and
    // watch from the one after it): the owner hears of every change since.
    // If etcd compacted it already, the view does not fall back to a newer
    // one: it stops, its waiters (and later ones) fail with
    // Errc::kCompacted, and `on_failed` runs on its strand. 0: the newest.
    int64_t start_revision = 0;
    std::function<void(const Status&)> on_failed{};
  };

  // Does no I/O. `range` is the prefix (or the key in single_key mode).
  // The handler is held until the view stops (the owner's core closes).
  static std::shared_ptr<PrefixView> create(std::shared_ptr<RecipeCore> core, std::string range, Options options,
                                            Handler handler);

  PrefixView(const PrefixView&) = delete;
  PrefixView& operator=(const PrefixView&) = delete;
  ~PrefixView();

  // Begins reading and watching. Idempotent; does nothing once the core is
  // closed.
  void start();

  // Completes once the first read has been delivered (at once if it has).
  // Fails with Errc::kClosed when the core closes, kFailedPrecondition
  // before start(), and by its deadline / stop token.
  Call<void> wait_initialized();
  bool initialized() const;
  // The revision at which the view is exact (0 before the first read).
  int64_t revision() const;

  // Thread-safe reads of the current view.
  std::optional<ViewEntry> get(std::string_view key) const;
  size_t size() const;
  ViewSnapshot snapshot() const;
  // Runs `f(state, revision)` under the view's lock: for owners that need
  // one consistent look without a copy. `f` must not block nor call back
  // into the view.
  void read(const std::function<void(const ViewMap&, int64_t revision)>& f) const;

  // Read again now and report the differences (e.g. an owner that suspects
  // it missed something). A no-op before start() or after close.
  void resync();

  // A windowed view whose range goes on past its window: doubles the
  // window and reads on from the bound (an owner that found nothing it can
  // use in the window). Reported as one kChanged batch; a no-op
  // while such a read is in flight, or when the view holds every key.
  void grow();

  const std::string& range() const { return range_; }
  // Reads (pages) and resyncs done so far, for tests and metrics.
  uint64_t pages_read() const;
  uint64_t resyncs() const;

 private:
  struct Impl;
  PrefixView(std::shared_ptr<RecipeCore> core, std::string range, Options options, Handler handler);
  std::string range_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace etcd::recipes::detail
