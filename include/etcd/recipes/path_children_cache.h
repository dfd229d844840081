// PathChildrenCache and TypedPathChildrenCache<T>: a local copy of the keys
// under a path, kept current by a watch — configuration, membership, a
// directory of work.
//
//   etcd::recipes::PathChildrenCache cache(client, "/config");   // keys under /config/
//   auto sub = cache.on_event([](const etcd::recipes::ChildEvent<std::string>& e) {
//     switch (e.type) { case ...kAdded: ...; case ...kUpdated: ...; case ...kRemoved: ...; default: break; }
//   });
//   cache.start();
//   cache.wait_initialized().timeout(5s).wait().value();
//   for (const auto& child : cache.snapshot().nodes) std::cout << child.name << " = " << *child.value << "\n";
//   auto limit = cache.get("limit");                             // by child name
//
//   etcd::recipes::TypedPathChildrenCache<Job, etcd::recipes::JsonCodec<Job>> jobs(client, "/jobs");
//
// What it caches. The children of PATH are the keys under PATH + "/". By
// default only the direct children ("PATH/a", not "PATH/a/b"), as Curator
// does; CacheScope::kSubtree caches every key under PATH/ (names then
// contain '/'). Either way the read and the watch cover the whole subtree
// (etcd has no range of "direct children"): deeper keys are filtered out
// locally, so a busy subtree costs traffic even in kDirectChildren scope.
//
// Consistency. It reads the range at one revision R — page by page
// (PathChildrenCacheOptions::page_size keys per Range, fewer when their
// values pass 4 MiB), never as one huge response — and watches from R+1: nothing between the read and the watch
// is lost. Events come one revision at a time, in revision order (a Txn
// that changes several children gives several events with the same
// revision), on the client's executor, one at a time, never on a gRPC
// thread. When a listener runs, snapshot() already shows the state after
// that event's revision. After a reconnect the watch resumes where it
// stopped. When it cannot (the revision it needs was compacted while the
// client was cut off) or the watch fails, the cache reads the range again
// and emits exactly the differences between what it had and what it read
// (kRemoved, kAdded, kUpdated in key order, each with `resync` set; a key
// deleted and created again meanwhile is kUpdated, its create_revision
// changed), then one kReset event with the cause. Changes that cancelled
// out during the gap (a key created and deleted) give no event.
//
// Events:
//   kAdded        a child appeared: `current`
//   kUpdated      a child's value, lease or incarnation changed: `previous`, `current`
//   kRemoved      a child is gone: `previous` is the last node seen
//   kInitialized  the first read is done (StartMode::kPostInitializedEvent only)
//   kReset        a resync after a gap is done (its differences came just before)
// Start modes (Curator's):
//   kNormal               the first read's children arrive as kAdded events
//   kBuildInitialCache    the first read fills the cache silently: after
//                         wait_initialized(), snapshot() has it and events are
//                         changes only
//   kPostInitializedEvent as kNormal, then one kInitialized event
// wait_initialized() completes, in every mode, once the first read is
// applied and its events delivered.
//
// A value the codec cannot decode is cached as a node with a null `value`
// and an `error` (DATA_LOSS [decode_failed], naming the key, with the
// codec's message), delivered in events like any other, and recorded in
// errors() (on_error listeners run) once per stored version. The cache never
// throws from the background and never stops for it.
//
// Memory: one std::map node per key holding the key, the value bytes and
// four revisions (~110 bytes beside the key and value, allocator included);
// a typed cache also keeps the decoded T (one allocation per key). During a
// resync the old and the new read exist at once. Docs: docs/recipes/caches.md.
//
// The constructor does no I/O; lifecycle as every recipe (recipe.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/recipes/cached_node.h"
#include "etcd/stream.h"

namespace etcd::recipes {

struct PathChildrenCacheOptions {
  enum class StartMode { kNormal, kBuildInitialCache, kPostInitializedEvent };
  enum class Scope { kDirectChildren, kSubtree };
  StartMode start_mode = StartMode::kNormal;
  Scope scope = Scope::kDirectChildren;
  // Keys per Range of a (re)read, at least 1 (fewer when their values
  // would pass 4 MiB). Each page after the first ends about where that
  // many keys will have been read (it is bounded in key space), so that
  // etcd, which walks a limited Range to its end to count it, does work
  // in proportion to the page: a load is linear in the number of keys on
  // every release.
  int64_t page_size = 1000;
  RecipeOptions recipe{};
};

template <class T>
struct ChildEvent {
  enum class Type { kAdded, kUpdated, kRemoved, kInitialized, kReset };
  Type type = Type::kAdded;
  // kAdded, kUpdated, kRemoved: the child's key and name.
  std::string key{};
  std::string name{};
  // kUpdated, kRemoved: the node the cache had before.
  std::optional<CachedNode<T>> previous{};
  // kAdded, kUpdated: the node now.
  std::optional<CachedNode<T>> current{};
  // The cache is exact at this revision once the event's revision is
  // applied (kInitialized, kReset: the revision of the read).
  int64_t revision = 0;
  // Part of the differences reported after a gap (and kReset itself).
  bool resync = false;
  // kReset: why the cache read again (Errc::kCompacted / kResyncNeeded
  // after a compaction, or the failure that ended the watch).
  Status cause{};
};

// The cache's children at one revision, sorted by key (and so by name).
template <class T>
struct CacheSnapshot {
  std::vector<CachedNode<T>> nodes{};
  int64_t revision = 0;  // 0: not initialized yet

  // The child named `name`, or null.
  const CachedNode<T>* find(std::string_view name) const {
    auto it = std::lower_bound(nodes.begin(), nodes.end(), name,
                               [](const CachedNode<T>& n, std::string_view x) { return n.name < x; });
    return it != nodes.end() && it->name == name ? &*it : nullptr;
  }
};

template <class T, Codec<T> C = DefaultCodec<T>>
class TypedPathChildrenCache : public detail::CacheBase {
 public:
  using Event = ChildEvent<T>;
  using Node = CachedNode<T>;
  using Options = PathChildrenCacheOptions;

  // Do no I/O (see RecipeHandle for the lifecycle). `path` is a name as
  // every recipe's (no trailing '/'); the children are the keys under
  // path + "/". A page_size below 1 is Errc::kBadArgument.
  TypedPathChildrenCache(Client client, std::string path)
      : TypedPathChildrenCache(std::move(client), std::move(path), Options()) {}
  TypedPathChildrenCache(Client client, std::string path, Options options)
      : TypedPathChildrenCache(std::move(client), std::move(path), std::move(options), C()) {}
  TypedPathChildrenCache(Client client, std::string path, Options options, C codec)
      : TypedPathChildrenCache(std::move(client), std::move(path), std::move(options),
                               std::make_shared<const C>(std::move(codec))) {}
  TypedPathChildrenCache(TypedPathChildrenCache&&) noexcept = default;
  TypedPathChildrenCache& operator=(TypedPathChildrenCache&&) noexcept = default;

  const std::string& path() const { return name(); }

  // Every child now, sorted, with the revision the cache is exact at.
  CacheSnapshot<T> snapshot() const {
    CacheSnapshot<T> out;
    out.nodes.reserve(size());
    read_all([&](const detail::RawNode& raw) { out.nodes.push_back(detail::to_cached_node<T, C>(raw)); });
    out.revision = initialized() ? revision() : 0;
    return out;
  }
  // The child named `name` (the key path + "/" + name), if cached.
  std::optional<Node> get(std::string_view name) const {
    std::optional<Node> out;
    std::string key = range();
    key.append(name);
    (void)read_one(key, [&](const detail::RawNode& raw) { out = detail::to_cached_node<T, C>(raw); });
    return out;
  }

  // Runs on each event (see the top of this file), in revision order, on
  // the client's executor. A listener that throws is recorded in errors().
  // A listener added after the first read hears of later events only.
  Subscription on_event(std::function<void(const Event&)> listener) {
    return add_listener([listener = std::move(listener)](const detail::RawEvent& raw) {
      Event e;
      e.type = static_cast<typename Event::Type>(raw.type);
      e.key = std::string(raw.key);
      e.name = std::string(raw.name);
      if (raw.current) e.current = detail::to_cached_node<T, C>(*raw.current);
      if (raw.previous) e.previous = detail::to_cached_node<T, C>(*raw.previous);
      e.revision = raw.revision;
      e.resync = raw.resync;
      if (raw.cause) e.cause = *raw.cause;
      listener(e);
    });
  }

  // The same events as a Stream (etcd/stream.h), from now on (open it
  // before start() to hear the first read's); ends (std::nullopt) when the
  // cache closes. A full buffer fails the stream with kResourceExhausted
  // (the cache itself goes on: snapshot() has the state; open a new one).
  Stream<Event> events() { return events(StreamOptions()); }
  Stream<Event> events(StreamOptions options) {
    return etcd::detail::listener_stream<Event>(
        stream_executor(), options, etcd::detail::StreamOverflow::kFail,
        [this](std::function<void(Event)> push) { return on_event([push](const Event& e) { push(e); }); },
        [this](std::function<void()> fn) { return on_closed(std::move(fn)); });
  }

  const C& codec() const { return *codec_; }

 protected:
  // For a recipe built on this cache (ServiceCache): its kind names it in
  // errors, and `input` is its own check of its arguments (OK if none).
  TypedPathChildrenCache(Client client, std::string path, Options options, std::shared_ptr<const C> codec,
                         const char* kind, Status input)
      : CacheBase(std::move(client), std::move(path), config(options, kind), codec_for(codec),
                  std::move(options.recipe),
                  !input.ok() ? std::move(input)
                  : options.page_size < 1
                      ? InvalidArgument("page_size must be at least 1 (got " + std::to_string(options.page_size) + ")")
                      : Status()),
        codec_(std::move(codec)) {}

 private:
  TypedPathChildrenCache(Client client, std::string path, Options options, std::shared_ptr<const C> codec)
      : TypedPathChildrenCache(std::move(client), std::move(path), std::move(options), std::move(codec), nullptr,
                               Status()) {}

  static detail::CacheConfig config(const Options& options, const char* kind) {
    detail::CacheConfig c;
    c.kind = kind != nullptr ? kind : detail::kBytesCache<T, C> ? "PathChildrenCache" : "TypedPathChildrenCache";
    c.subtree = options.scope == Options::Scope::kSubtree;
    c.start_mode = static_cast<int>(options.start_mode);
    c.page_size = options.page_size;
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

// The bytes as stored: nothing is kept beside them, and no value is ever
// undecodable.
using PathChildrenCache = TypedPathChildrenCache<std::string>;

}  // namespace etcd::recipes
