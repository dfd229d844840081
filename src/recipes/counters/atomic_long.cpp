// DistributedAtomicLong: a facade over the recipe core and the client's add
// combiner for the name (add_combiner.h: the guarded read-modify-write).
// Semantics, costs and the handling of unknown outcomes:
// etcd/recipes/atomic_long.h.
#include "etcd/recipes/atomic_long.h"

#include <memory>
#include <utility>

#include "../core/calls.h"
#include "../core/recipe_core.h"
#include "add_combiner.h"
#include "etcd/recipes/codec.h"
#include "etcd/txn.h"

namespace etcd::recipes {

namespace detail {

namespace {

using Codec64 = IntegerCodec<int64_t>;

Status check_options(const AtomicLongOptions& o) {
  if (o.max_attempts < 1) return InvalidArgument("max_attempts must be at least 1");
  if (o.max_backoff.count() < 0) return InvalidArgument("max_backoff must not be negative");
  return Status();
}

// What a write this object made without reading shows: `value` at
// `revision`, its version unknown (no prev_kv: only the resolution of an
// unknown add uses it, and it re-reads through its guard then).
inline CounterSeen written(int64_t value, int64_t revision) {
  CounterSeen s;
  s.value = value;
  s.mod_revision = revision;
  s.version = -1;
  s.observed_at = revision;
  return s;
}

}  // namespace

class AtomicLongState {
 public:
  AtomicLongState(Client client, std::string name, AtomicLongOptions options)
      : core(std::make_shared<RecipeCore>(client, "DistributedAtomicLong", name, std::move(options.recipe),
                                          check_options(options))),
        key(std::move(name)),
        adder(std::make_shared<const AdderOptions>(
            AdderOptions{core, {{"counter", key}}, options.max_attempts, options.max_backoff})),
        combiner(AddCombiner::join(client, key, core->client_id())) {}

  const std::shared_ptr<RecipeCore> core;
  const std::string key;
  const std::shared_ptr<const AdderOptions> adder;  // every add of this object carries it
  // Shared with the client's other objects of this name: their adds go out
  // together, and they share what was last seen of the value.
  const std::shared_ptr<AddCombiner> combiner;

  // The value of `kv` (absent: 0), or the decode error naming the key.
  Result<CounterSeen> seen_of(const KeyValue* kv, int64_t header_revision) const {
    auto s = counter_seen(kv, header_revision);
    if (!s.ok()) return core->named(std::move(s).status());
    return s;
  }
};

}  // namespace detail

using detail::AtomicLongState;
using detail::CallAccess;
using detail::Codec64;

DistributedAtomicLong::DistributedAtomicLong(Client client, std::string name)
    : DistributedAtomicLong(std::move(client), std::move(name), AtomicLongOptions()) {}

DistributedAtomicLong::DistributedAtomicLong(Client client, std::string name, RecipeOptions options)
    : DistributedAtomicLong(std::move(client), std::move(name), AtomicLongOptions{.recipe = std::move(options)}) {}

DistributedAtomicLong::DistributedAtomicLong(Client client, std::string name, AtomicLongOptions options)
    : state_(std::make_shared<AtomicLongState>(std::move(client), std::move(name), std::move(options))) {
  // At close(), the last object of this client and name deletes the
  // combiner's receipt (only that combiner ever writes it).
  state_->core->set_close_action([core = std::weak_ptr<detail::RecipeCore>(state_->core),
                                  combiner = state_->combiner] {
    if (!combiner->leave()) return;
    auto c = core.lock();
    auto link = c ? c->link() : nullptr;
    if (!link) return;
    // A clean-up (RecipeCore::close): the client's close() waits for it, so
    // it holds no link — a full handle here would keep a client whose
    // owner let go of it open past the program's exit, the delete unsent.
    CallAccess::start_inline(link->client().del(combiner->receipt()), [](Result<DeleteResponse>) {});
  });
  bind_recipe(state_->core);
}

Call<int64_t> DistributedAtomicLong::get() {
  const auto& core = state_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<int64_t>(st);
  return detail::then_call<int64_t>(
      link->client().get(state_->key), link, [state = state_](Result<GetResponse> r) -> Result<int64_t> {
        if (!r.ok()) return state->core->named(std::move(r).status());
        auto seen = state->seen_of(r->kvs.empty() ? nullptr : &r->kvs.front(), r->header.revision);
        if (!seen.ok()) return std::move(seen).status();
        state->combiner->remember(*seen);
        return seen->value;
      });
}

Call<void> DistributedAtomicLong::set(int64_t value) {
  const auto& core = state_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<void>(st);
  return detail::then_call<void>(link->client().put(state_->key, Codec64::encode(value)), link,
                                 [state = state_, value](Result<PutResponse> r) -> Result<void> {
                                   if (!r.ok()) return state->core->named(std::move(r).status());
                                   state->combiner->remember(detail::written(value, r->header.revision));
                                   return Result<void>();
                                 });
}

Call<int64_t> DistributedAtomicLong::add(int64_t delta) {
  return state_->core->call<int64_t>([state = state_, delta](CallOptions options, Callback<int64_t> done) {
    const auto& core = state->core;
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) return done(st);
    auto add = std::make_unique<detail::CounterAdd>();
    add->delta = delta;
    add->options = std::move(options);
    add->options.caller_waits = false;  // a batch's Txn goes out from whichever add started it
    add->done = std::move(done);
    add->adder = state->adder;
    add->link = std::move(link);
    state->combiner->submit(std::move(add));
  });
}

Call<bool> DistributedAtomicLong::compare_and_set(int64_t expected, int64_t desired) {
  const auto& core = state_->core;
  auto link = core->link();
  if (Status st = core->usable(link); !st.ok()) return core->ready<bool>(st);
  const std::string& key = state_->key;
  Txn txn;
  txn.when(Compare::value(key) == Codec64::encode(expected)).then(Op::put(key, Codec64::encode(desired)));
  if (expected == 0) {
    // An absent key is 0 too: etcd has no "or", so the else branch asks again.
    txn.otherwise(Op::txn(Txn()
                              .when(Compare::create_revision(key) == 0)
                              .then(Op::put(key, Codec64::encode(desired)))
                              .otherwise(Op::get(key))));
  } else {
    txn.otherwise(Op::get(key));
  }
  return detail::then_call<bool>(link->client().txn(std::move(txn)), link,
                                 [state = state_, desired, expected](Result<TxnResponse> r) -> Result<bool> {
                                   if (!r.ok()) return state->core->named(std::move(r).status());
                                   const TxnResponse* answer = &*r;
                                   bool wrote = r->succeeded;
                                   if (!wrote && expected == 0) {
                                     answer = &r->responses.at(0).txn();
                                     wrote = answer->succeeded;
                                   }
                                   if (wrote) {
                                     state->combiner->remember(detail::written(desired, r->header.revision));
                                     return true;
                                   }
                                   // What is stored instead must be a number: a foreign value is an
                                   // error, not a mismatch.
                                   auto seen =
                                       state->seen_of(answer->responses.at(0).get().first(), r->header.revision);
                                   if (!seen.ok()) return std::move(seen).status();
                                   state->combiner->remember(*seen);
                                   return false;
                                 });
}

}  // namespace etcd::recipes
