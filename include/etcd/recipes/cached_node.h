// What NodeCache<T> (node_cache.h) and PathChildrenCache /
// TypedPathChildrenCache<T> (path_children_cache.h) share: the node a cache
// hands out, and the non-template base both are built on. See
// docs/recipes/caches.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/recipes/codec.h"
#include "etcd/recipes/recipe.h"
#include "etcd/status.h"

namespace etcd::recipes {

// One key as a cache holds it.
template <class T>
struct CachedNode {
  // The whole key.
  std::string key{};
  // PathChildrenCache: the key below the cache's path ("a" for PATH/a; in
  // subtree scope also "a/b"). NodeCache: the key.
  std::string name{};
  // The decoded value, shared with the cache (immutable; copying a node
  // never copies a T). Null when the stored bytes do not decode: `error`
  // says why.
  std::shared_ptr<const T> value{};
  // OK, or the codec's error: DATA_LOSS [decode_failed] naming the key,
  // with the codec's message (codec.h). Never set for a bytes cache.
  Status error{};
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;

  bool decoded() const { return value != nullptr; }
};

namespace detail {

class CacheState;

// A cached key seen through the base, for the typed layer to turn into a
// CachedNode<T>. Valid only during the call that hands it out.
struct RawNode {
  std::string_view key;
  std::string_view name;
  std::string_view bytes;
  // What CacheCodec::decode made of `bytes` (null for a bytes cache).
  const std::shared_ptr<const void>* decoded = nullptr;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

struct RawEvent {
  enum class Type { kAdded, kUpdated, kRemoved, kInitialized, kReset };
  Type type = Type::kAdded;
  std::string_view key;
  std::string_view name;
  const RawNode* current = nullptr;
  const RawNode* previous = nullptr;
  int64_t revision = 0;
  bool resync = false;
  const Status* cause = nullptr;
};

// How the typed layer decodes: `decode` turns a stored value into what the
// cache keeps beside its bytes; `error_of` finds a decode error in it. A
// null `decode` is a bytes cache (values handed out as they are stored).
struct CacheCodec {
  std::function<std::shared_ptr<const void>(std::string_view key, std::string_view bytes)> decode{};
  std::function<const Status*(const void* decoded)> error_of{};
};

struct CacheConfig {
  const char* kind = "";
  bool single_key = false;
  bool subtree = false;
  int start_mode = 0;  // PathChildrenCacheOptions::StartMode
  int64_t page_size = 1000;
};

// A decoded value as a typed cache keeps it: the T, or why it is not one.
template <class T>
using Decoded = std::variant<T, Status>;

template <class T, class C>
CacheCodec make_cache_codec(std::shared_ptr<const C> codec) {
  CacheCodec out;
  out.decode = [codec](std::string_view key, std::string_view bytes) -> std::shared_ptr<const void> {
    auto r = decode_value<T>(*codec, bytes, key);
    if (r.ok()) return std::make_shared<const Decoded<T>>(std::in_place_index<0>, std::move(r).value());
    return std::make_shared<const Decoded<T>>(std::in_place_index<1>, std::move(r).status());
  };
  out.error_of = [](const void* decoded) -> const Status* {
    return std::get_if<1>(static_cast<const Decoded<T>*>(decoded));
  };
  return out;
}

// Whether a cache of T with codec C hands out the stored bytes as they are
// (then it keeps nothing beside them).
template <class T, class C>
inline constexpr bool kBytesCache = std::is_same_v<T, std::string> &&
                                    (std::is_same_v<C, StringCodec> || std::is_same_v<C, DefaultCodec<std::string>>);

template <class T, class C>
CachedNode<T> to_cached_node(const RawNode& raw) {
  CachedNode<T> node;
  node.key = std::string(raw.key);
  node.name = std::string(raw.name);
  if constexpr (kBytesCache<T, C>) {
    node.value = std::make_shared<const std::string>(raw.bytes);
  } else {
    if (raw.decoded && *raw.decoded) {
      // Aliasing: the node shares the cache's decoded value.
      std::shared_ptr<const Decoded<T>> d = std::static_pointer_cast<const Decoded<T>>(*raw.decoded);
      if (const T* v = std::get_if<0>(d.get())) {
        node.value = std::shared_ptr<const T>(d, v);
      } else {
        node.error = std::get<1>(*d);
      }
    }
  }
  node.create_revision = raw.create_revision;
  node.mod_revision = raw.mod_revision;
  node.version = raw.version;
  node.lease = raw.lease;
  return node;
}

// The part of every cache that is not a template: the recipe's core, its
// PrefixView, listeners, decode-failure reports. Built on
// src/recipes/caches/.
class CacheBase : public RecipeHandle {
 public:
  CacheBase(CacheBase&&) noexcept = default;
  CacheBase& operator=(CacheBase&&) noexcept = default;

  // start() (from RecipeHandle) begins the first read and the watch in the
  // background; idempotent.

  // Completes once the first read has been applied (and, in a children
  // cache, its events delivered). Fails with Errc::kClosed on close(),
  // kFailedPrecondition before start(), the input error for bad input, or
  // by the deadline it is given (none of its own: etcd/call.h) or its stop
  // token.
  Call<void> wait_initialized();
  bool initialized() const;
  // The revision at which the cache is exact (0 before the first read).
  int64_t revision() const;
  // Keys cached now.
  size_t size() const;
  // Resyncs done after a gap (compaction while disconnected, a failed
  // watch) since start().
  uint64_t resyncs() const;

 protected:
  CacheBase(Client client, std::string path, CacheConfig config, CacheCodec codec, RecipeOptions options, Status input);
  Subscription add_listener(std::function<void(const RawEvent&)> listener);
  // `f` runs under the cache's lock for every key in key order: it must not
  // block nor call back into the cache.
  void read_all(const std::function<void(const RawNode&)>& f) const;
  // The node of `key`, if cached (under the lock, as read_all).
  bool read_one(std::string_view key, const std::function<void(const RawNode&)>& f) const;
  // PATH + "/" (children), or the key (node).
  const std::string& range() const;
  // For the Stream forms (etcd/stream.h): the client's executor, and `fn`
  // run when the cache closes (at once if it is closed).
  Executor stream_executor() const;
  Subscription on_closed(std::function<void()> fn) const;

 private:
  std::shared_ptr<CacheState> state_;
};

}  // namespace detail
}  // namespace etcd::recipes
