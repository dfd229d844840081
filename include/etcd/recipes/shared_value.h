// SharedValue<T> and SharedCount: one key's value that every process reads
// locally and any may change — a watched, versioned value, the etcd form of
// Curator's SharedValue / SharedCount.
//
//   etcd::recipes::SharedValue<std::string> mode(client, "/config/mode");
//   auto sub = mode.on_change([](const etcd::recipes::SharedValueEvent<std::string>& e) {
//     if (e.current.decoded()) apply(*e.current.value);
//   });
//   mode.start();
//   mode.wait_initialized().timeout(5s).wait().value();
//   etcd::recipes::VersionedValue<std::string> now = mode.get();    // local: no I/O
//   mode.set("drain").wait().value();                               // whatever was there
//   bool won = mode.compare_and_set(now.mod_revision, "drain").wait().value();
//   bool won2 = mode.try_set("drain").wait().value();               // against the newest version seen
//
//   etcd::recipes::SharedCount workers(client, "/config/workers");  // SharedValue<std::int64_t>
//
// Key layout: the value lives in the key itself, encoded by the codec
// (codec.h: decimal text for integers, the bytes for std::string, JSON,
// protobuf...), so `etcdctl get KEY` shows it and `etcdctl put KEY ...`
// changes it (listeners hear of it like any other write). An absent key is
// a value that does not exist (VersionedValue::exists false); nothing is
// created until someone sets it.
//
// Versions. The version a compare_and_set() compares is the key's mod
// revision (VersionedValue::mod_revision; 0 for an absent key): it grows
// with every write to etcd and never comes back, so "the value I read is
// still the value" is exactly "mod_revision is unchanged". (etcd's per-key
// `version` starts again at 1 when a key is deleted and created again, so
// it is reported but never compared.)
//
// The local view. After start(), the object reads the key at a revision R
// and watches it from R+1 (the engine's gap-free view, the one NodeCache
// uses), so it never misses a change. get() answers from memory: the
// newest state this object knows, which is the watch's, or the answer of
// its own last set / compare_and_set when that is newer (so a process
// reads its own writes at once, and a lost compare_and_set brings the
// value that beat it). VersionedValue::revision says as of which etcd
// revision the answer is exact.
//
// Listeners (on_change) hear of every change the watch delivers, one at a
// time, in revision order, on the client's executor (never on a gRPC
// thread): `previous` and `current` (current.exists false when the key
// was deleted). A listener hears of changes after the first read; get()
// has the state before. When the watch cannot go on without a gap (the
// revision it needs was compacted while the client was cut off) the object
// reads the key again and reports the difference as one event with
// `resync` set — a deletion and a re-creation while cut off are one event,
// never a silent replacement; no difference, no event.
//
// Operations (each one Txn, one round trip; a write is one etcd write):
//   set(v):                 Put(KEY, v), Get(KEY)        — whatever was there
//   compare_and_set(R, v):  If mod_revision(KEY) == R Then Put(KEY, v), Get(KEY)
//                                                     Else Get(KEY)
//                           (R = 0: only if the key is absent)
//   try_set(v):             compare_and_set(get().mod_revision, v): wins only
//                           if nobody wrote since the newest version this
//                           object saw (before anything was seen: only if
//                           the key is absent)
// The Get in the same Txn gives the value each call leaves (or the one that
// beat it), which get() then answers. A failed compare is a write request
// etcd passes through raft, with no new revision. A Txn whose answer was lost
// (Errc::kOutcomeUnknown) is not sent again — it may have applied — and the
// call fails with it; the watch shows what happened.
// Watching: one Range at start() and one watch on the client's shared
// stream; one more Range after each gap. Memory: one value.
//
// Errors:
//   - a value the codec cannot encode: Errc::kBadArgument before any write;
//   - a stored value the codec cannot decode (written by someone else, or
//     with another codec): get() has it with a null `value` and an `error`
//     (DATA_LOSS [decode_failed] naming the key); it is recorded in errors()
//     (on_error listeners run) once per stored version; compare_and_set()
//     and set() still work (they compare revisions, not values);
//   - a negative expected revision: Errc::kBadArgument before any write;
//   - lifecycle as every recipe (recipe.h): a bad key is Errc::kBadArgument,
//     after close() Errc::kClosed, both before any I/O. set and
//     compare_and_set need no start(); get() and on_change need it.
//   - wait_initialized() before start(): kFailedPrecondition.
//
// The object holds no lease and no session: its connection state is its
// client's.
//
// Metrics (label `key`): etcd_recipes_shared_value_writes_total (set and
// compare_and_set that wrote), _conflicts_total (compare_and_set that lost),
// _changes_total (changes the watch delivered), _resyncs_total (reads after
// a gap), _decode_failures_total.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/cached_node.h"
#include "etcd/recipes/codec.h"
#include "etcd/recipes/recipe.h"
#include "etcd/status.h"

namespace etcd::recipes {

// A value and its version, as one SharedValue knows it.
template <class T>
struct VersionedValue {
  // The decoded value (immutable, shared: copying never copies a T). Null
  // when the key is absent, or when its bytes do not decode (`error`).
  std::shared_ptr<const T> value{};
  // OK, or the codec's error: DATA_LOSS [decode_failed], naming the key.
  Status error{};
  // The key exists.
  bool exists = false;
  // The version compare_and_set() compares: the key's mod revision (0: absent).
  int64_t mod_revision = 0;
  // etcd's per-key version (writes since the key was created; 0: absent).
  int64_t version = 0;
  int64_t create_revision = 0;
  // The answer is exact at this etcd revision (0: nothing known yet).
  int64_t revision = 0;

  bool decoded() const { return value != nullptr; }
};

// A change the watch delivered.
template <class T>
struct SharedValueEvent {
  VersionedValue<T> previous{};
  // current.exists is false when the key was deleted.
  VersionedValue<T> current{};
  // The difference found by a read after a gap in the watch, not one write.
  bool resync = false;
};

namespace detail {

class SharedValueState;

// The value as the non-template base knows it: the stored bytes and what
// the typed layer's codec made of them.
struct RawSharedValue {
  bool exists = false;
  std::string bytes{};
  std::shared_ptr<const void> decoded{};
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
  int64_t revision = 0;
};

struct RawSharedValueEvent {
  const RawSharedValue* previous = nullptr;
  const RawSharedValue* current = nullptr;
  bool resync = false;
};

// What every SharedValue<T> shares, not a template: the recipe's core, its
// one-key view, the Txns, listeners and decode-failure reports. Built on
// src/recipes/counters/shared_value.cpp.
class SharedValueBase : public RecipeHandle {
 public:
  SharedValueBase(SharedValueBase&&) noexcept = default;
  SharedValueBase& operator=(SharedValueBase&&) noexcept = default;

  // The key (the recipe's name).
  const std::string& key() const { return name(); }

  // start() (from RecipeHandle) begins the first read and the watch in the
  // background; idempotent.

  // Completes once the first read has been applied. Fails with
  // Errc::kClosed on close(), kFailedPrecondition before start(), the input
  // error for bad input, or by its deadline / stop token.
  Call<void> wait_initialized();
  bool initialized() const;
  // Reads after a gap in the watch since start().
  uint64_t resyncs() const;

 protected:
  SharedValueBase(Client client, const char* kind, std::string key, CacheCodec codec, RecipeOptions options,
                  Status input);
  RawSharedValue raw() const;
  // The new mod revision.
  Call<int64_t> set_encoded(std::string bytes);
  // expected < 0: the newest version this object knows (try_set).
  Call<bool> compare_and_set_encoded(int64_t expected, std::string bytes);
  Subscription add_listener(std::function<void(const RawSharedValueEvent&)> listener);
  // Calls that fail at once with `why` (a value the codec cannot encode:
  // kBadArgument), named after this recipe.
  Call<int64_t> refuse_set(Status why) const;
  Call<bool> refuse_compare(Status why) const;

 private:
  std::shared_ptr<SharedValueState> state_;
};

template <class T, class C>
VersionedValue<T> to_versioned_value(const RawSharedValue& raw, std::string_view key) {
  VersionedValue<T> out;
  out.revision = raw.revision;
  if (!raw.exists) return out;
  RawNode node;
  node.key = key;
  node.name = key;
  node.bytes = raw.bytes;
  node.decoded = raw.decoded ? &raw.decoded : nullptr;
  CachedNode<T> cached = to_cached_node<T, C>(node);
  out.value = std::move(cached.value);
  out.error = std::move(cached.error);
  out.exists = true;
  out.mod_revision = raw.mod_revision;
  out.version = raw.version;
  out.create_revision = raw.create_revision;
  return out;
}

}  // namespace detail

template <class T, Codec<T> C = DefaultCodec<T>>
class SharedValue : public detail::SharedValueBase {
 public:
  using Event = SharedValueEvent<T>;

  // Do no I/O (see RecipeHandle for the lifecycle). `key` is the key itself.
  SharedValue(Client client, std::string key) : SharedValue(std::move(client), std::move(key), RecipeOptions()) {}
  SharedValue(Client client, std::string key, RecipeOptions options)
      : SharedValue(std::move(client), std::move(key), std::move(options), C()) {}
  SharedValue(Client client, std::string key, RecipeOptions options, C codec)
      : SharedValue(std::move(client), std::move(key), std::move(options),
                    std::make_shared<const C>(std::move(codec))) {}
  SharedValue(SharedValue&&) noexcept = default;
  SharedValue& operator=(SharedValue&&) noexcept = default;

  // The newest value this object knows, from memory (see "The local view").
  VersionedValue<T> get() const { return detail::to_versioned_value<T, C>(raw(), key()); }

  // Stores `value`, whatever was there; the new mod revision.
  Call<int64_t> set(const T& value) {
    auto bytes = encode_value<T>(*codec_, value);
    if (!bytes.ok()) return refuse_set(bad_value(std::move(bytes).status()));
    return set_encoded(std::move(*bytes));
  }
  // Stores `value` if the key's mod revision is `expected_revision` (0: the
  // key is absent); true if it did.
  Call<bool> compare_and_set(int64_t expected_revision, const T& value) {
    if (expected_revision < 0) {
      return refuse_compare(InvalidArgument("compare_and_set: the expected revision " +
                                            std::to_string(expected_revision) + " is negative"));
    }
    auto bytes = encode_value<T>(*codec_, value);
    if (!bytes.ok()) return refuse_compare(bad_value(std::move(bytes).status()));
    return compare_and_set_encoded(expected_revision, std::move(*bytes));
  }
  // compare_and_set() against the newest version this object knows.
  Call<bool> try_set(const T& value) {
    auto bytes = encode_value<T>(*codec_, value);
    if (!bytes.ok()) return refuse_compare(bad_value(std::move(bytes).status()));
    return compare_and_set_encoded(-1, std::move(*bytes));
  }

  // Every change the watch delivers (see above). The Subscription removes it.
  Subscription on_change(std::function<void(const Event&)> listener) {
    return add_listener([listener = std::move(listener), k = key()](const detail::RawSharedValueEvent& raw) {
      Event e;
      e.previous = detail::to_versioned_value<T, C>(*raw.previous, k);
      e.current = detail::to_versioned_value<T, C>(*raw.current, k);
      e.resync = raw.resync;
      listener(e);
    });
  }

  const C& codec() const { return *codec_; }

 private:
  SharedValue(Client client, std::string key, RecipeOptions options, std::shared_ptr<const C> codec)
      : SharedValueBase(std::move(client), "SharedValue", std::move(key), codec_for(codec), std::move(options),
                        Status()),
        codec_(std::move(codec)) {}

  static detail::CacheCodec codec_for(const std::shared_ptr<const C>& codec) {
    if constexpr (detail::kBytesCache<T, C>) {
      return detail::CacheCodec();
    } else {
      return detail::make_cache_codec<T, C>(codec);
    }
  }
  static Status bad_value(Status why) {
    if (why.is(Errc::kBadArgument)) return why;
    return InvalidArgument("cannot encode the value: " + why.message());
  }

  std::shared_ptr<const C> codec_;
};

// Curator's SharedCount: a shared 64-bit integer, stored as decimal text.
using SharedCount = SharedValue<std::int64_t>;

}  // namespace etcd::recipes
