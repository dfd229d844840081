#include "producer.h"

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <cstdio>
#include <random>

#include "../core/calls.h"
#include "../core/keys.h"
#include "../core/strand_steps.h"

namespace etcd::recipes::detail {

namespace {

// Attempts of one batch (the first and its retries), bounded besides by
// the callers' deadline; the step backoff (kStepBackoff) between them.
constexpr int kMaxAttempts = 8;
// A grouped item's key and the Txn's framing of it, besides the value and
// the key prefix: NAME/items/ + producer id + "-" + 16 hex digits, a create
// guard and the put (an estimate: only the byte bound of a group uses it).
constexpr size_t kItemKeyOverhead = 256;

Status outcome_unknown(const Status& last) {
  return Status(last.code() == StatusCode::kOk ? StatusCode::kUnavailable : last.code(),
                "enqueue: the outcome is unknown (it may or may not have been committed): " + last.message(),
                Errc::kOutcomeUnknown);
}

}  // namespace

QueueProducer::QueueProducer(std::shared_ptr<RecipeCore> core, std::string items, std::string producers, Labels labels)
    : core_(std::move(core)),
      items_(std::move(items)),
      id_(random_id()),
      key_(std::move(producers) + id_),
      labels_(std::move(labels)) {}

void QueueProducer::enqueue(std::vector<std::string> values, const CallOptions& options, Callback<Enqueued> done,
                            std::string key_prefix) {
  if (Status st = core_->usable(); !st.ok()) return done(st);
  if (values.empty()) return done(Enqueued{});
  auto link = core_->link();
  if (!link) return done(core_->closed_status());
  if (options.stop.stop_requested()) return done(core_->named(Cancelled("enqueue cancelled")));
  bool start = false;
  {
    std::lock_guard lock(mu_);
    pending_.push_back(Caller{std::move(values), std::move(key_prefix), std::move(done), options.deadline, options.stop,
                              std::move(link)});
    if (!sending_) start = sending_ = true;
  }
  if (start) send_next();
}

std::shared_ptr<QueueProducer::Batch> QueueProducer::next_batch_locked(std::vector<Caller>& refused) {
  auto batch = std::make_shared<Batch>();
  size_t items = 0;
  size_t bytes = 0;
  const auto now = Clock::now();
  while (!pending_.empty()) {
    Caller& c = pending_.front();
    // Callers that gave up while waiting for their turn were never sent.
    if (c.stop.stop_requested() || (c.deadline && *c.deadline <= now)) {
      refused.push_back(std::move(c));
      pending_.pop_front();
      continue;
    }
    // An enqueue_all is never split; the first caller always goes.
    size_t caller_bytes = 0;
    for (const auto& v : c.values) caller_bytes += v.size() + c.key_prefix.size() + kItemKeyOverhead;
    if (!batch->callers.empty() &&
        (items + c.values.size() > kMaxGroupedItems || bytes + caller_bytes > kMaxGroupedBytes)) {
      break;
    }
    items += c.values.size();
    bytes += caller_bytes;
    if (c.deadline && (!batch->deadline || *c.deadline < *batch->deadline)) batch->deadline = c.deadline;
    batch->callers.push_back(std::move(c));
    pending_.pop_front();
  }
  if (batch->callers.empty()) {
    sending_ = false;
    return nullptr;
  }
  batch->first_seq = next_seq_;
  for (const auto& c : batch->callers) next_seq_ += c.values.size();
  batch->last_seq = next_seq_ - 1;
  batch->link = batch->callers.front().link;
  return batch;
}

QueueProducer::Next QueueProducer::take_next() {
  Next next;
  std::lock_guard lock(mu_);
  next.batch = next_batch_locked(next.refused);
  return next;
}

void QueueProducer::go(Next next) {
  for (auto& c : next.refused) {
    c.done(core_->named(c.stop.stop_requested() ? Cancelled("enqueue cancelled")
                                                : DeadlineExceeded("enqueue timed out before it was sent")));
  }
  if (next.batch) send(std::move(next.batch));
}

void QueueProducer::send(std::shared_ptr<Batch> batch) {
  if (!batch->keys.empty()) return write(batch);
  bool fresh;
  {
    std::lock_guard lock(mu_);
    fresh = seen_ != 0 && Clock::now() - seen_at_ < kFreshRevision;
  }
  if (fresh) {
    name_keys(batch);
    return write(batch);
  }
  // Any revision this member has applied is below the one our Txn will
  // commit at: a local read is enough.
  ++batch->attempts;
  auto call = batch->link->client().get(key_, GetOptions{.serializable = true, .keys_only = true});
  if (batch->deadline) call.deadline(*batch->deadline);
  CallAccess::start_inline(std::move(call), [self = shared_from_this(), batch](Result<GetResponse> r) {
    if (!r.ok()) {
      if (transient(r.status())) return self->retry_later(batch, r.status());
      return self->fail(batch, r.status());
    }
    {
      std::lock_guard lock(self->mu_);
      self->seen(r->header.revision);
    }
    self->name_keys(batch);
    self->write(batch);
  });
}

void QueueProducer::seen(int64_t revision) {
  seen_ = std::max(seen_, revision);
  seen_at_ = Clock::now();
}

void QueueProducer::name_keys(const std::shared_ptr<Batch>& batch) {
  int64_t revision;
  {
    std::lock_guard lock(mu_);
    revision = seen_;
  }
  uint64_t seq = batch->first_seq;
  for (const auto& c : batch->callers) {
    std::vector<std::string> keys;
    keys.reserve(c.values.size());
    for (size_t i = 0; i < c.values.size(); ++i) keys.push_back(items_ + item_name(c.key_prefix, revision, id_, seq++));
    batch->keys.push_back(std::move(keys));
  }
}

void QueueProducer::write(const std::shared_ptr<Batch>& batch) {
  int64_t guard;
  {
    std::lock_guard lock(mu_);
    guard = guard_;
  }
  // If the producer key is as our last enqueue left it, create the items and
  // record this batch's last sequence number in the same revision;
  // otherwise read it, to tell whether an earlier attempt applied.
  Txn txn;
  txn.when(Compare::mod_revision(key_) == guard);
  for (size_t c = 0; c < batch->callers.size(); ++c) {
    for (size_t i = 0; i < batch->callers[c].values.size(); ++i) {
      txn.then(Op::put(batch->keys[c][i], batch->callers[c].values[i]));
    }
  }
  txn.then(Op::put(key_, hex16(batch->last_seq)));
  txn.otherwise(Op::get(key_));
  ++batch->attempts;
  auto call = batch->link->client().txn(std::move(txn));
  if (batch->deadline) call.deadline(*batch->deadline);
  CallAccess::start_inline(std::move(call), [self = shared_from_this(), batch](Result<TxnResponse> r) {
    self->on_result(batch, std::move(r));
  });
}

void QueueProducer::on_result(const std::shared_ptr<Batch>& batch, Result<TxnResponse> r) {
  if (r.ok()) {
    std::lock_guard lock(mu_);
    seen(r->header.revision);
    if (r->succeeded) guard_ = r->header.revision;
  }
  if (r.ok() && r->succeeded) return complete(batch, r->header.revision);
  if (r.ok()) {
    // The producer key moved since our last enqueue.
    const KeyValue* kv = r->responses.at(0).get().first();
    const auto stored = kv ? parse_hex16(kv->value) : std::nullopt;
    if (stored && *stored >= batch->first_seq) {
      // An earlier attempt of this batch applied (its items may have been
      // taken since): done, nothing written twice.
      {
        std::lock_guard lock(mu_);
        guard_ = kv->mod_revision;
      }
      return complete(batch, kv->mod_revision);
    }
    if (kv || !batch->maybe_applied) {
      // An earlier batch whose outcome was unknown applied after all (or
      // someone reset the key). This batch did not apply and, the guard
      // having moved, never will: send it again under the new guard.
      {
        std::lock_guard lock(mu_);
        guard_ = kv ? kv->mod_revision : 0;
      }
      if (batch->attempts >= kMaxAttempts) {
        return fail(batch, Status(StatusCode::kAborted, "enqueue: the producer key " + key_ +
                                                            " keeps changing (is another process using it?)"));
      }
      return write(batch);
    }
    // The key was deleted after an attempt that may have applied: whether
    // it did cannot be told any more.
    {
      std::lock_guard lock(mu_);
      guard_ = 0;
    }
    return fail(batch, outcome_unknown(Status(StatusCode::kUnavailable, "the producer key " + key_ + " was deleted")));
  }
  const Status& st = r.status();
  if (st.is(Errc::kOutcomeUnknown)) {
    batch->maybe_applied = true;
    std::lock_guard lock(mu_);
    ever_unknown_ = true;
  }
  if (transient(st)) return retry_later(batch, st);
  fail(batch, batch->maybe_applied ? outcome_unknown(st) : st);
}

void QueueProducer::retry_later(std::shared_ptr<Batch> batch, Status why) {
  bool all_gone = true;
  for (const auto& c : batch->callers) all_gone = all_gone && c.stop.stop_requested();
  const auto backoff = kStepBackoff.delay(batch->attempts);
  const bool out_of_time = batch->deadline && Clock::now() + backoff >= *batch->deadline;
  if (all_gone || out_of_time || batch->attempts >= kMaxAttempts) {
    return fail(batch, batch->maybe_applied ? outcome_unknown(why) : why);
  }
  core_->metrics().add("etcd_recipes_queue_enqueue_retries_total", labels_, 1);
  // The batch keeps the link (and with it the executor) alive until then.
  run_after(batch->link->executor(), backoff, [self = shared_from_this(), batch] { self->send(batch); });
}

void QueueProducer::close() {
  int64_t guard;
  {
    std::lock_guard lock(mu_);
    if (sending_ || ever_unknown_ || guard_ == 0) return;
    guard = guard_;
  }
  auto link = core_->link();
  if (!link) return;
  Txn txn;
  txn.when(Compare::mod_revision(key_) == guard).then(Op::del(key_));
  // A clean-up (RecipeCore::close): the client's close() waits for it, so
  // the callback holds no link, which would keep the client open (and
  // unwaited for) after its owner let go of it.
  CallAccess::start_inline(link->client().txn(std::move(txn)), [core = core_, key = key_](Result<TxnResponse> r) {
    if (!r.ok()) {
      core->record_error(Status(r.status().code(), "deleting the producer key " + key + ": " + r.status().message(),
                                r.status().reason()));
    }
  });
}

void QueueProducer::complete(const std::shared_ptr<Batch>& batch, int64_t revision) {
  // The producer moves on before its callers hear: one that closes the
  // queue as soon as its enqueue returns (a short-lived program) must find
  // no send in flight, or close() would skip deleting the producer key.
  Next next = take_next();
  size_t n = 0;
  for (size_t c = 0; c < batch->callers.size(); ++c) {
    n += batch->keys[c].size();
    batch->callers[c].done(Enqueued{revision, std::move(batch->keys[c])});
  }
  core_->metrics().add("etcd_recipes_queue_enqueued_total", labels_, static_cast<double>(n));
  go(std::move(next));
}

void QueueProducer::fail(const std::shared_ptr<Batch>& batch, const Status& why) {
  const Status named = core_->named(why);
  Next next = take_next();  // before the callers hear, as in complete()
  for (auto& c : batch->callers) c.done(named);
  go(std::move(next));
}

}  // namespace etcd::recipes::detail
