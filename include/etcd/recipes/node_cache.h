// NodeCache<T>: a local copy of one key's value, kept current by a watch.
//
//   etcd::recipes::NodeCache<std::int64_t> limit(client, "/config/limit");
//   auto sub = limit.on_change([](const etcd::recipes::NodeEvent<std::int64_t>& e) {
//     if (e.current && e.current->decoded()) apply(*e.current->value);
//   });
//   limit.start();
//   limit.wait_initialized().timeout(5s).wait().value();
//   if (auto node = limit.current(); node && node->decoded()) use(*node->value);
//
//   etcd::recipes::NodeCache<std::string> raw(client, "/config/banner");  // the bytes as stored
//
// It reads the key at a revision R and watches it from R+1, so no change is
// lost between the read and the watch; after a reconnect the watch resumes
// where it stopped. If it cannot (the revision it needs was compacted while
// the client was cut off) it reads the key again and reports the
// difference as one event with `resync` set — never a silent replacement.
//
// Events, delivered one at a time in revision order on the client's
// executor (never on a gRPC thread):
//   kInitialized  once, after the first read: `current` is the value found
//                 (none if the key is absent)
//   kCreated      the key appeared: `current`
//   kUpdated      its value (or lease, or its incarnation: deleted and
//                 created again while cut off) changed: `previous`, `current`
//   kDeleted      the key is gone: `previous` is the last value seen
// A listener added after the first read hears of later changes only
// (current() has the state).
//
// A value the codec cannot decode is kept as a node with a null `value` and
// an `error` (DATA_LOSS [decode_failed], naming the key, with the codec's
// message); it is recorded in errors() (and on_error listeners run) once per
// stored version. The cache never throws from the background and never
// stops for it.
//
// Costs: one Range and one watch (the client's shared watch stream); one
// more Range after each gap. The constructor does no I/O; lifecycle as every
// recipe (recipe.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "etcd/recipes/cached_node.h"
#include "etcd/stream.h"

namespace etcd::recipes {

template <class T>
struct NodeEvent {
  enum class Type { kInitialized, kCreated, kUpdated, kDeleted };
  Type type = Type::kInitialized;
  // kUpdated, kDeleted: the node the cache had before.
  std::optional<CachedNode<T>> previous{};
  // kInitialized (if the key exists), kCreated, kUpdated: the node now.
  std::optional<CachedNode<T>> current{};
  // The cache is exact at this revision after the event.
  int64_t revision = 0;
  // The event is the difference found by a read after a gap in the watch
  // (e.g. a compaction while disconnected), not one write.
  bool resync = false;
};

template <class T, Codec<T> C = DefaultCodec<T>>
class NodeCache : public detail::CacheBase {
 public:
  using Event = NodeEvent<T>;

  // Do no I/O (see RecipeHandle for the lifecycle). `key` is the key itself.
  NodeCache(Client client, std::string key) : NodeCache(std::move(client), std::move(key), RecipeOptions()) {}
  NodeCache(Client client, std::string key, RecipeOptions options)
      : NodeCache(std::move(client), std::move(key), std::move(options), C()) {}
  NodeCache(Client client, std::string key, RecipeOptions options, C codec)
      : NodeCache(std::move(client), std::move(key), std::move(options), std::make_shared<const C>(std::move(codec))) {}
  NodeCache(NodeCache&&) noexcept = default;
  NodeCache& operator=(NodeCache&&) noexcept = default;

  const std::string& key() const { return name(); }

  // The node now (none if the key is absent or before the first read).
  std::optional<CachedNode<T>> current() const {
    std::optional<CachedNode<T>> out;
    (void)read_one(range(), [&](const detail::RawNode& raw) { out = detail::to_cached_node<T, C>(raw); });
    return out;
  }
  bool exists() const { return current().has_value(); }

  // Runs on each event (see the top of this file), in revision order, on
  // the client's executor. A listener that throws is recorded in errors().
  Subscription on_change(std::function<void(const Event&)> listener) {
    return add_listener([listener = std::move(listener)](const detail::RawEvent& raw) {
      Event e;
      switch (raw.type) {
        case detail::RawEvent::Type::kInitialized:
          e.type = Event::Type::kInitialized;
          break;
        case detail::RawEvent::Type::kAdded:
          e.type = Event::Type::kCreated;
          break;
        case detail::RawEvent::Type::kUpdated:
          e.type = Event::Type::kUpdated;
          break;
        case detail::RawEvent::Type::kRemoved:
          e.type = Event::Type::kDeleted;
          break;
        case detail::RawEvent::Type::kReset:
          return;  // a node cache reports a resync by the flag of its one event
      }
      if (raw.current) e.current = detail::to_cached_node<T, C>(*raw.current);
      if (raw.previous) e.previous = detail::to_cached_node<T, C>(*raw.previous);
      e.revision = raw.revision;
      e.resync = raw.resync;
      listener(e);
    });
  }

  // The same events as a Stream (etcd/stream.h), from now on (open it
  // before start() to hear kInitialized); ends (std::nullopt) when the
  // cache closes. A full buffer fails the stream with kResourceExhausted
  // (the cache itself goes on: current() has the state; open a new stream).
  Stream<Event> events() { return events(StreamOptions()); }
  Stream<Event> events(StreamOptions options) {
    return etcd::detail::listener_stream<Event>(
        stream_executor(), options, etcd::detail::StreamOverflow::kFail,
        [this](std::function<void(Event)> push) { return on_change([push](const Event& e) { push(e); }); },
        [this](std::function<void()> fn) { return on_closed(std::move(fn)); });
  }

  const C& codec() const { return *codec_; }

 private:
  NodeCache(Client client, std::string key, RecipeOptions options, std::shared_ptr<const C> codec)
      : CacheBase(std::move(client), std::move(key), config(), codec_for(codec), std::move(options), Status()),
        codec_(std::move(codec)) {}

  static detail::CacheConfig config() {
    detail::CacheConfig c;
    c.kind = "NodeCache";
    c.single_key = true;
    return c;
  }
  static detail::CacheCodec codec_for(const std::shared_ptr<const C>& codec) {
    if constexpr (detail::kBytesCache<T, C>) {
      return detail::CacheCodec();
    } else {
      return detail::make_cache_codec<T, C>(codec);
    }
  }

  std::shared_ptr<const C> codec_;
};

}  // namespace etcd::recipes
