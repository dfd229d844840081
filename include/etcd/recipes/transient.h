// TransientKeyValue and TypedTransientKeyValue<T>: a key that exists while
// its owner lives — a registration, a "this worker is busy with X" marker,
// a piece of state others may read but that must vanish with its owner.
//
//   etcd::recipes::TransientKeyValue marker(client, "/workers/w7/current", "job-42");
//   marker.create().wait().value();           // kAlreadyExists if another owner has the key
//   marker.set_value("job-43").wait().value(); // only while the key is ours (kHoldLost otherwise)
//   auto lost = marker.on_lost([](const etcd::Status& why) { ... });
//   auto back = marker.on_restored([] { ... });
//   marker.close();                           // or the destructor: the key goes at once
//
//   etcd::recipes::TypedTransientKeyValue<std::int64_t> port(client, "/svc/a/port", 8080);
//
// Ownership: the key is created under a presence lease (etcd/presence.h)
// with TTL RecipeOptions::session_ttl (default 10 s: how long the key
// outlives an owner that died without closing). The transient keys of one
// Client with the same TTL share that lease (one lease and one keep-alive
// per process, however many keys); each key is still lost, healed and
// removed on its own, and two objects of one client on one key are two
// owners (the second is refused). RecipeOptions::own_presence_lease gives
// an object a lease of its own. A transient
// key heals, so it is not a hold: RecipeOptions::session and
// session_factory are not used (a shared session is for exclusive holds,
// which stay lost). The key is "ours" from the revision that created it: its
// create revision is the owner's identity, and every write is guarded by it
// (If create_revision(key) == C), never by the value or the lease alone.
//
// Creation (create(), set_value() before the key exists, or start() in the
// background): one Txn, If create_revision(key) == 0 Then Put(key, value,
// lease) Else Get(key). A key held by anyone else — another owner, or a
// plain put without a lease — is left alone and the call fails with
// StatusCode::kAlreadyExists naming the key and its lease; the object can try
// again later (create() is not sticky on failure). Nothing is ever
// overwritten. start() records a failed creation in errors() and, when a
// retry can fix it (etcd unreachable, an unknown outcome), tries again with
// backoff until the key is created or the object closed.
//
// Loss and healing. The key stops being ours when its lease is lost (the
// owner was cut off from etcd longer than the TTL, or the lease was revoked)
// or when a guarded set_value() finds it deleted or re-created by someone
// else. Then: on_lost listeners run with why (once per loss), errors()
// records it, state() becomes kLost, and the object heals: with a new lease
// (the presence lease re-grants) it re-creates the key with the CURRENT
// value — the last one given to set_value(), also while lost — by the same
// create-if-absent Txn. Where the key was taken meanwhile (someone else
// created it), it is left alone: that is recorded in errors() once per loss
// (kAlreadyExists, naming the key and the other owner's lease), state()
// stays kLost, and the object keeps trying, with a backoff of at most 1 s
// (one Txn each), so that it gets its key back as soon as it is free. Once
// re-created, on_restored listeners run and state() is kReconnected.
//
// Not watched: a deletion of the key by someone else (etcdctl del) while
// the owner's lease lives is noticed by the owner's next set_value() (which
// then fails with kHoldLost, reports the loss and heals as above). Watch the
// key yourself if you must know at once.
//
// Removal: close() (and the destructor) deletes the key — guarded, only if
// it is still ours — and revokes the lease if no other object uses it,
// without waiting; release() does the same and tells when it is done (true
// if the key was ours). An owner that dies without either leaves the key
// for at most the TTL; a delete that failed (etcd unreachable) on a shared
// lease leaves the key until that lease ends (its last user closes, or the
// process dies and the TTL runs out).
//
// Lifecycle as every recipe (recipe.h); the constructor does no I/O. Costs:
// create: one Txn (and, for the client's first key of a TTL, a lease
// grant); set_value, release: one Txn each (release also revokes the lease
// when it was the last user);
// while healing against a taken key, one Txn per backoff (at most 1 s).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/recipes/codec.h"
#include "etcd/recipes/recipe.h"
#include "etcd/status.h"

namespace etcd::recipes {

namespace detail {
class TransientState;

// What TransientKeyValue and TypedTransientKeyValue share. The value is
// kept as bytes, and a typed variant keeps its T beside them (opaque here),
// so that both change together.
class TransientBase : public RecipeHandle {
 public:
  TransientBase(TransientBase&&) noexcept = default;
  TransientBase& operator=(TransientBase&&) noexcept = default;

  // The key (the recipe's name).
  const std::string& key() const { return name(); }

  // Creates the key under this object's lease if it is absent; completes
  // once the key is ours. Idempotent: concurrent calls share one creation,
  // and it completes at once while the key is ours. Fails with
  // StatusCode::kAlreadyExists (naming the key) if another owner has it — nothing
  // written — and with Errc::kHoldLost while healing after a loss.
  Call<void> create();
  // Deletes the key (only if it is still ours) and revokes the lease, then
  // closes the recipe: true if the key was ours. close() does the same
  // without waiting.
  [[nodiscard]] Call<bool> release();

  // The key exists and is ours (advisory: not seen lost).
  bool is_held() const;
  // The key's create revision while it is ours, else 0.
  int64_t create_revision() const;
  // The lease of the key while it is ours, else 0.
  int64_t lease() const;

  // The key stopped being ours (its lease was lost, or it was deleted or
  // re-created by someone else); healing starts. Once per loss.
  Subscription on_lost(std::function<void(const Status&)> listener);
  // The key was re-created, with the current value, after a loss.
  Subscription on_restored(std::function<void()> listener);

 protected:
  TransientBase(Client client, const char* kind, std::string key, std::string bytes, std::shared_ptr<const void> typed,
                Status input, RecipeOptions options);
  // The value: bytes as stored, and the typed variant's T.
  std::pair<std::string, std::shared_ptr<const void>> current() const;
  // Makes `bytes` (and `typed`) the value when the call is consumed, and
  // writes it if the key is ours (creating the key first if it was never
  // created); kHoldLost while the key is not ours (the value is kept: a
  // heal writes it).
  Call<void> set_encoded(std::string bytes, std::shared_ptr<const void> typed);
  // A Call that fails at once with `why` (named after this recipe).
  Call<void> refuse(Status why) const;
  // A value the codec could not encode: kBadArgument, whatever the codec said.
  static Status bad_value(Status why);

 private:
  std::shared_ptr<TransientState> state_;
};

}  // namespace detail

class TransientKeyValue : public detail::TransientBase {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle). `key` is the key itself.
  TransientKeyValue(Client client, std::string key, std::string value);
  TransientKeyValue(Client client, std::string key, std::string value, RecipeOptions options);
  TransientKeyValue(TransientKeyValue&&) noexcept = default;
  TransientKeyValue& operator=(TransientKeyValue&&) noexcept = default;

  // The current value: the last one given (whether or not it is in etcd
  // now: see set_value).
  std::string value() const { return current().first; }
  // Makes `value` the current value and writes it, guarded: only while the
  // key is ours (kHoldLost otherwise — the value is kept all the same and
  // a heal re-creates the key with it). Before the key was first created,
  // this creates it (with `value`). Writes of one object are applied in
  // the order the calls are consumed.
  Call<void> set_value(std::string value) { return set_encoded(std::move(value), nullptr); }
};

// A transient key whose value is a T stored through a Codec<T> (codec.h). A
// value the codec cannot encode is Errc::kBadArgument before any write: in
// the constructor's value, it is reported by every operation (as all bad
// input); in set_value(), by that call, the current value unchanged.
template <class T, Codec<T> C = DefaultCodec<T>>
class TypedTransientKeyValue : public detail::TransientBase {
 public:
  TypedTransientKeyValue(Client client, std::string key, T value)
      : TypedTransientKeyValue(std::move(client), std::move(key), std::move(value), RecipeOptions()) {}
  TypedTransientKeyValue(Client client, std::string key, T value, RecipeOptions options)
      : TypedTransientKeyValue(std::move(client), std::move(key), std::move(value), std::move(options), C()) {}
  TypedTransientKeyValue(Client client, std::string key, T value, RecipeOptions options, C codec)
      : TypedTransientKeyValue(std::move(client), std::move(key), init(std::move(value), std::move(codec)),
                               std::move(options)) {}
  TypedTransientKeyValue(TypedTransientKeyValue&&) noexcept = default;
  TypedTransientKeyValue& operator=(TypedTransientKeyValue&&) noexcept = default;

  // The current value (see TransientKeyValue::value).
  T value() const { return *std::static_pointer_cast<const T>(current().second); }
  // See TransientKeyValue::set_value.
  Call<void> set_value(const T& value) {
    auto bytes = encode_value<T>(*codec_, value);
    if (!bytes.ok()) return refuse(bad_value(std::move(bytes).status()));
    return set_encoded(std::move(*bytes), std::make_shared<const T>(value));
  }

  const C& codec() const { return *codec_; }

 private:
  struct Init {
    std::shared_ptr<const T> value;
    std::shared_ptr<const C> codec;
    Result<std::string> bytes;
  };
  static Init init(T value, C codec) {
    auto v = std::make_shared<const T>(std::move(value));
    auto c = std::make_shared<const C>(std::move(codec));
    auto bytes = encode_value<T>(*c, *v);
    if (!bytes.ok()) bytes = bad_value(std::move(bytes).status());
    return Init{std::move(v), std::move(c), std::move(bytes)};
  }
  TypedTransientKeyValue(Client client, std::string key, Init init, RecipeOptions options)
      : TransientBase(std::move(client), "TypedTransientKeyValue", std::move(key),
                      init.bytes.ok() ? std::move(*init.bytes) : std::string(), init.value,
                      init.bytes.ok() ? Status() : init.bytes.status(), std::move(options)),
        codec_(std::move(init.codec)) {}

  std::shared_ptr<const C> codec_;
};

}  // namespace etcd::recipes
