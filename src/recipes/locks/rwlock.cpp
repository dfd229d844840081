// DistributedReadWriteLock: one driver per side for the contender engine
// (core/contender.h), plus the downgrade.
#include "etcd/recipes/rwlock.h"

#include "../core/contender.h"
#include "../core/key_path.h"
#include "../core/keys.h"
#include "../core/ordered_key.h"
#include "../core/recipe_core.h"
#include "lock_keys.h"

namespace etcd::recipes {

using Mode = DistributedReadWriteLock::Mode;

namespace detail {

namespace {

int idx(Mode m) { return static_cast<int>(m); }
const char* mode_name(Mode m) { return m == Mode::kRead ? "read" : "write"; }

// A write key that was put again after its creation was downgraded: it is a
// read hold now.
bool downgraded(const KeyValue& kv) { return kv.mod_revision != kv.create_revision; }

}  // namespace

// What both sides share (each side owns it; it knows them weakly).
struct RwShared {
  explicit RwShared(std::shared_ptr<RecipeCore> core_in) : core(std::move(core_in)) {}

  const std::shared_ptr<RecipeCore> core;
  std::weak_ptr<RwSide> sides[2];
  std::mutex mu;
  bool downgrading = false;  // (mu)
};

// The Go-like layout's driver of one side (RecipeOptions::contender_layout =
// kGoConcurrency). Order is the keys' create revision across both kinds: a
// reader waits for the last writer key created before its own (a
// downgraded writer key no longer counts), a writer for the last key of
// either kind created before its own.
class RwGoDriver : public ContenderDriver {
 public:
  RwGoDriver(std::shared_ptr<RecipeCore> core_in, Mode mode_in, Labels labels)
      : core(std::move(core_in)), mode(mode_in), labels_(std::move(labels)) {}

  const std::shared_ptr<RecipeCore> core;
  const Mode mode;

  const std::string& prefix(Mode m) const { return prefixes_[idx(m)]; }

  std::string key(const Session& s) override { return prefix(mode) + lease_hex(s.lease_id()); }
  std::string batch_scope() const override { return scope_; }

  // One round trip: create our key unless it exists, and read the newest
  // keys that can conflict with it. Fast path: no key that could conflict
  // (for a reader no writer, for a writer no key at all), so ours holds at
  // once and nothing needs to be read back.
  Txn create(const std::string& key, int64_t lease) override {
    const Op put = Op::put(key, core->client_id(), PutOptions{.lease = lease});
    Txn queued;
    queued.when(Compare::absent(key)).then({put, Op::get(prefix(Mode::kWrite), newest(0))}).otherwise(Op::get(key));
    if (mode == Mode::kWrite) queued.then(Op::get(prefix(Mode::kRead), newest(0)));
    const std::string& conflicting = mode == Mode::kRead ? prefix(Mode::kWrite) : scope_;
    Txn txn;
    txn.when({Compare::create_revision(conflicting).with_prefix() == 0, Compare::absent(key)})
        .then(put)
        .otherwise(Op::txn(std::move(queued)));
    return txn;
  }

  Created created(const TxnResponse& outer) override {
    Created c;
    if (outer.succeeded) {
      c.rev = outer.header.revision;
      c.verdict = Verdict{.holds = true, .revision = outer.header.revision};
      return c;
    }
    const TxnResponse& r = outer.responses.at(0).txn();
    if (!r.succeeded) {
      // A key of ours from an earlier acquisition whose release did not get
      // through: replaced, so that its create revision is ours and a write
      // key is never mistaken for a downgraded one.
      const auto* stale = r.responses[0].get().first();
      c.stale_rev = stale ? stale->create_revision : 0;
      return c;
    }
    c.rev = outer.header.revision;
    c.verdict = verdict(c.rev, r.responses[1].get().kvs, mode == Mode::kWrite ? &r.responses[2].get().kvs : nullptr,
                        outer.header.revision);
    return c;
  }

  // Our key and the nearest conflicting predecessors, at one revision.
  Txn read(const std::string& key, int64_t rev) override {
    Txn txn;
    txn.then({Op::get(key, GetOptions{.keys_only = true}), Op::get(prefix(Mode::kWrite), newest(rev))});
    if (mode == Mode::kWrite) txn.then(Op::get(prefix(Mode::kRead), newest(rev)));
    return txn;
  }

  Verdict judge(const TxnResponse& r, int64_t rev) override {
    return verdict(rev, r.responses[1].get().kvs, mode == Mode::kWrite ? &r.responses[2].get().kvs : nullptr,
                   r.header.revision);
  }

  HoldSpec hold_spec() override {
    return HoldSpec{.require_unmodified = mode == Mode::kWrite,
                    .noun = std::string(mode_name(mode)) + " lock",
                    .family = family_,
                    .labels = labels_};
  }
  const std::string& family() const override { return family_; }
  const Labels& labels() const override { return labels_; }
  std::string waiting_for() const override { return std::string("the ") + mode_name(mode) + " lock"; }

 private:
  // The two newest keys created before `before` (0: any), newest first.
  static GetOptions newest(int64_t before) {
    return GetOptions{.prefix = true,
                      .limit = 2,
                      .sort_order = SortOrder::kDescend,
                      .sort_target = SortTarget::kCreate,
                      .keys_only = true,
                      .max_create_revision = before > 0 ? before - 1 : 0};
  }

  // Holds, or waits for the nearest conflicting key created before ours:
  // a writer waits for its deletion only; a reader also for a put (the
  // predecessor write key being downgraded).
  Verdict verdict(int64_t rev, const std::vector<KeyValue>& writers, const std::vector<KeyValue>* readers,
                  int64_t at) const {
    const KeyValue* best = nullptr;
    for (const auto& kv : writers) {  // newest first
      if (kv.create_revision >= rev) continue;
      if (mode == Mode::kRead && downgraded(kv)) continue;
      best = &kv;
      break;
    }
    if (readers) {
      for (const auto& kv : *readers) {
        if (kv.create_revision >= rev) continue;
        if (!best || kv.create_revision > best->create_revision) best = &kv;
        break;
      }
    }
    if (!best) return Verdict{.holds = true, .revision = at};
    const bool writer = mode == Mode::kWrite;
    return Verdict{.wait = WaitFor{.key = best->key,
                                   .options = WatchOptions{.filter_puts = writer},
                                   .recheck = key_changed(best->key, at + 1, /*puts=*/!writer)},
                   .revision = at};
  }

  const std::string scope_ = core->name() + "/";
  const std::string prefixes_[2] = {dir_under(core->name(), rwlock_keys::kRead),
                                    dir_under(core->name(), rwlock_keys::kWrite)};
  const std::string family_ = "rwlock";
  const Labels labels_;
};

// One side: its slot and its contender driver, in the recipe's layout. In
// the ordered layout (core/ordered_key.h) a reader's keys are
// NAME/read/~<R>-<lease>-<n> and wait for the writers' spaces, a writer's
// NAME/write/~... and wait for both.
class RwSide {
 public:
  RwSide(const std::shared_ptr<RwShared>& shared_in, Mode mode_in)
      : shared(shared_in),
        core(shared_in->core),
        mode(mode_in),
        slot(std::make_shared<HolderSlot>(core)),
        contender(make_contender(core, mode_in)) {}

  const std::shared_ptr<RwShared> shared;
  const std::shared_ptr<RecipeCore> core;
  const Mode mode;
  const std::shared_ptr<HolderSlot> slot;
  const std::shared_ptr<ContenderDriver> contender;

 private:
  static std::shared_ptr<ContenderDriver> make_contender(const std::shared_ptr<RecipeCore>& core, Mode mode) {
    Labels labels{{"lock", core->name()}, {"mode", mode_name(mode)}};
    if (core->options().contender_layout != ContenderLayout::kOrdered) {
      return std::make_shared<RwGoDriver>(core, mode, std::move(labels));
    }
    const std::string read = dir_under(core->name(), rwlock_keys::kRead);
    const std::string write = dir_under(core->name(), rwlock_keys::kWrite);
    const bool reader = mode == Mode::kRead;
    return std::make_shared<OrderedKeyDriver>(
        core,
        LowestKeySettings{.noun = std::string(mode_name(mode)) + " lock",
                          .family = "rwlock",
                          .labels = std::move(labels),
                          .value = [id = core->client_id()] { return id; }},
        OrderedSpaces{.own = reader ? read : write,
                      .conflicts = reader ? std::vector<std::string>{write} : std::vector<std::string>{read, write},
                      .reader = reader,
                      .require_unmodified = !reader,
                      .records_handoff = !reader,
                      .tailed = {read, write}});
  }
};

namespace {

// Re-purposes the write key as the read hold: the same key keeps its create
// revision (its place in the queue); the put changes its mod revision,
// which marks it as downgraded and wakes the readers that wait for it
// (writers ignore puts). Idempotent, so retried when its outcome is unknown.
void downgrade_attempt(std::shared_ptr<ClientLink> link, std::shared_ptr<RwShared> shared,
                       std::shared_ptr<HoldState> write, int attempt, Callback<void> done) {
  const auto& key = write->spec().key;
  Txn put;
  put.when(Compare::create_revision(key) == write->spec().token)
      .then(Op::put(key, shared->core->client_id(), PutOptions{.lease = write->spec().lease}));
  auto call = link->client().txn(std::move(put));
  etcd::detail::CallAccess::start_inline(
      std::move(call), [link, shared, write, attempt, done = std::move(done)](Result<TxnResponse> r) mutable {
        auto& core = shared->core;
        if (!r.ok() && attempt < 3 && transient(r.status())) {
          return downgrade_attempt(std::move(link), std::move(shared), std::move(write), attempt + 1, std::move(done));
        }
        {
          std::lock_guard lock(shared->mu);
          shared->downgrading = false;
        }
        if (r.ok() && !r->succeeded) {
          write->lose(Status(StatusCode::kNotFound, "the write key is gone", Errc::kKeyNotFound));
          return done(core->named(Status(StatusCode::kAborted,
                                         "downgrade: the write hold was lost; nothing was changed", Errc::kHoldLost)));
        }
        // Applied, or (after retries) unknown: the hold is a read hold from
        // now on either way. If the put did not land, the key still reads
        // as a writer: later readers wait until we release, which is safe.
        if (!r.ok()) {
          core->record_error(Status(r.status().code(),
                                    "downgrade: outcome unknown, holding as a reader: " + r.status().message(),
                                    r.status().reason()));
        }
        if (!write->is_held()) {
          return done(core->named(Status(StatusCode::kAborted, "downgrade: the write hold ended", Errc::kHoldLost)));
        }
        auto reader = shared->sides[idx(Mode::kRead)].lock();
        auto writer = shared->sides[idx(Mode::kWrite)].lock();
        if (!reader || !writer) return done(core->closed_status());
        HoldSpec read_spec = reader->contender->hold_spec();
        read_spec.key = write->spec().key;
        read_spec.token = write->spec().token;
        read_spec.lease = write->spec().lease;
        read_spec.session = write->session();
        read_spec.claims = write->spec().claims;
        auto read = std::make_shared<HoldState>(core, link, std::move(read_spec), reader->slot);
        // The read side holds before the write side lets go: no moment in
        // which this object would admit another acquisition.
        reader->slot->held(HoldAccess::make(read));
        write->hand_over();
        read->arm();
        core->metrics().add("etcd_recipes_rwlock_downgrades_total", writer->contender->labels(), 1);
        // close() could not release while we were downgrading.
        if (core->closed()) reader->slot->release(false, [](Result<bool>) {});
        done(Result<void>());
      });
}

}  // namespace

}  // namespace detail

// --- LockView -----------------------------------------------------------------

void DistributedReadWriteLock::LockView::bind(std::shared_ptr<detail::RwSide> side, Mode mode) {
  side_ = std::move(side);
  mode_ = mode;
  bind_holder(side_->slot);
}

Call<Hold> DistributedReadWriteLock::LockView::acquire() {
  return detail::acquire_call(side_->core, side_->contender, side_->slot, side_->core->input());
}

Call<std::optional<Hold>> DistributedReadWriteLock::LockView::try_acquire() {
  return detail::try_acquire_call(side_->core, side_->contender, side_->slot, side_->core->input());
}

Call<bool> DistributedReadWriteLock::LockView::release() {
  auto side = side_;
  return side->core->call<bool>([side](CallOptions options, Callback<bool> done) {
    if (side->mode == Mode::kWrite) {
      std::lock_guard lock(side->shared->mu);
      if (side->shared->downgrading) {
        return done(side->core->named(Status(StatusCode::kFailedPrecondition, "a downgrade is in progress")));
      }
    }
    side->slot->release(options.caller_waits, std::move(done));
  });
}

// --- DistributedReadWriteLock -------------------------------------------------

DistributedReadWriteLock::DistributedReadWriteLock(Client client, std::string name)
    : DistributedReadWriteLock(std::move(client), std::move(name), RecipeOptions()) {}

DistributedReadWriteLock::DistributedReadWriteLock(Client client, std::string name, RecipeOptions options) {
  auto core = std::make_shared<detail::RecipeCore>(std::move(client), "DistributedReadWriteLock", std::move(name),
                                                   std::move(options));
  auto shared = std::make_shared<detail::RwShared>(core);
  auto reader = std::make_shared<detail::RwSide>(shared, Mode::kRead);
  auto writer = std::make_shared<detail::RwSide>(shared, Mode::kWrite);
  shared->sides[0] = reader;
  shared->sides[1] = writer;
  writer->slot->exclude(reader->slot,
                        Status(StatusCode::kFailedPrecondition,
                               "upgrade refused: this object holds (or is acquiring) the read lock; release it before "
                               "taking the write lock (an in-place upgrade would deadlock two readers that both "
                               "upgrade)"));
  reader->slot->exclude(writer->slot,
                        Status(StatusCode::kFailedPrecondition,
                               "this object holds (or is acquiring) the write lock; use downgrade() to turn it into a "
                               "read hold"));
  // Releases what is held, fire and forget. (A slot that holds is kept
  // alive by its hold, even once this object's sides are gone.)
  core->set_close_action([slots = std::vector<std::weak_ptr<detail::HolderSlot>>{reader->slot, writer->slot}] {
    for (auto& w : slots) {
      if (auto slot = w.lock()) slot->release(false, [](Result<bool>) {});
    }
  });
  read_.bind(reader, Mode::kRead);
  write_.bind(writer, Mode::kWrite);
  bind_recipe(core);
}

DistributedReadWriteLock::DistributedReadWriteLock(DistributedReadWriteLock&& other) noexcept
    : RecipeHandle(std::move(other)) {
  read_.bind(std::move(other.read_.side_), Mode::kRead);
  write_.bind(std::move(other.write_.side_), Mode::kWrite);
}

DistributedReadWriteLock& DistributedReadWriteLock::operator=(DistributedReadWriteLock&& other) noexcept {
  if (this != &other) {
    RecipeHandle::operator=(std::move(other));
    read_.bind(std::move(other.read_.side_), Mode::kRead);
    write_.bind(std::move(other.write_.side_), Mode::kWrite);
  }
  return *this;
}

Call<void> DistributedReadWriteLock::downgrade() {
  auto side = write_.side_;
  return side->core->call<void>([side](CallOptions, Callback<void> done) {
    auto& shared = side->shared;
    auto state = detail::HoldAccess::state(side->slot->current());
    auto link = state ? state->link() : nullptr;
    if (!state || !link) {
      return done(side->core->named(Status(StatusCode::kFailedPrecondition, "downgrade: the write lock is not held")));
    }
    if (state->lost()) {
      return done(
          side->core->named(Status(StatusCode::kAborted, "downgrade: the write hold was lost", Errc::kHoldLost)));
    }
    {
      std::lock_guard lock(shared->mu);
      if (shared->downgrading) {
        return done(side->core->named(
            Status(StatusCode::kFailedPrecondition, "downgrade: a downgrade is already in progress")));
      }
      shared->downgrading = true;
    }
    detail::downgrade_attempt(std::move(link), shared, state, 1, std::move(done));
  });
}

}  // namespace etcd::recipes
