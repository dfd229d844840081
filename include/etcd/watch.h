// Watches. All watches of one client share one gRPC stream. Events reach a
// watcher's handler in revision order, one call at a time, on the chosen
// executor. If the stream breaks (member killed, link cut), every watch is
// re-created from the revision after the last one it delivered, so no event
// is lost or repeated; if that revision was compacted meanwhile, the
// handler gets an error with reason Errc::kResyncNeeded (status.revision()
// is the compact revision) and the watch ends: reload and watch again.
//
// With WatchOptions::notify_created, the handler also hears when the server
// has created the watch: one response with `created` set and no events,
// delivered in order before any event of the watch. Its header.revision is
// the store revision at creation: a watch whose start revision is at or
// below it started behind the store (etcd 3.4 then delivers its first
// events from a loop that runs only every 100 ms). A watch re-created on a
// new stream reports its creation again, with the revision at that moment,
// before the events that follow the re-creation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etcd/call.h"
#include "etcd/kv.h"
#include "etcd/status.h"

namespace etcd {

struct WatchOptions {
  bool prefix = false;
  std::string range_end{};
  int64_t start_revision = 0;  // 0: from now
  bool prev_kv = false;
  bool progress_notify = false;        // ask the server for periodic progress
  bool filter_puts = false;            // do not deliver PUT events
  bool filter_deletes = false;         // do not deliver DELETE events
  bool notify_created = false;         // deliver a `created` response (above)
  std::optional<Executor> executor{};  // where the handler runs
};

struct Event {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv{};
  std::optional<KeyValue> prev_kv{};
};

struct WatchResponse {
  ResponseHeader header{};
  std::vector<Event> events{};
  // A progress notification: no events, but every event up to
  // header.revision has been delivered.
  bool progress = false;
  // With WatchOptions::notify_created: the server created (or re-created)
  // the watch. No events; header.revision is the store revision then.
  bool created = false;
};

// Called with each batch of events; an error result is the last call.
using WatchHandler = std::function<void(Result<WatchResponse>)>;

namespace detail {
class WatchEntry;
class WatchHub;
}  // namespace detail

// RAII handle of one watch; destroying it cancels the watch.
class Watcher {
 public:
  Watcher() = default;
  Watcher(Watcher&&) noexcept = default;
  Watcher& operator=(Watcher&&) noexcept;
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  ~Watcher();

  // After cancel() returns, the handler is not invoked again (a call that
  // is already running may finish). Idempotent; safe from the handler.
  void cancel();
  bool active() const;
  // The highest revision known to be fully delivered (0 before the watch
  // was established on the server).
  int64_t delivered_revision() const;
  // Completes when the server has confirmed the watch, with the revision
  // from which events will be delivered.
  bool wait_created(Deadline deadline) const;

 private:
  friend class detail::WatchHub;
  explicit Watcher(std::shared_ptr<detail::WatchEntry> entry) : entry_(std::move(entry)) {}
  std::shared_ptr<detail::WatchEntry> entry_{};
};

}  // namespace etcd
