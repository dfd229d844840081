#include "delete_take.h"

#include "../core/keys.h"
#include "../core/strand_steps.h"

namespace etcd::recipes::detail {

void DeleteTake::take(const std::shared_ptr<ClientLink>& link, const std::string& key, const ViewEntry& entry,
                      std::shared_ptr<void> decoded, OutcomeCallback done) {
  send(link, key, entry, std::move(decoded), false, std::move(done));
}

void DeleteTake::send(const std::shared_ptr<ClientLink>& link, const std::string& key, const ViewEntry& entry,
                      std::shared_ptr<void> decoded, bool again, OutcomeCallback done) {
  if (!guarded_ && !again) {
    // Untyped, the common case: a plain delete. Of several consumers that
    // delete the same key, exactly one is told it deleted it (and gets the
    // value that was there); cheaper for etcd than a Txn.
    run_on_strand(link->strand(), link->client().del(key, DeleteOptions{.prev_kv = true}),
                  [self = std::static_pointer_cast<DeleteTake>(shared_from_this()), link, key, entry,
                   done = std::move(done)](Result<DeleteResponse> d) mutable {
                    Result<TxnResponse> r = [&]() -> Result<TxnResponse> {
                      if (!d.ok()) return std::move(d).status();
                      TxnResponse as_txn;
                      as_txn.header = d->header;
                      as_txn.succeeded = d->deleted > 0;
                      if (as_txn.succeeded) as_txn.responses.push_back(OpResponse{std::move(*d)});
                      return as_txn;
                    }();
                    if (!r.ok() && r.status().is(Errc::kOutcomeUnknown)) {
                      return self->send(link, key, entry, nullptr, true, std::move(done));
                    }
                    done(self->decide(key, entry, nullptr, false, std::move(r)));
                  });
    return;
  }
  // Typed (the value was decoded before the take: only that value may be
  // taken), or sent again after an unknown outcome (a resent delete must
  // not take what another consumer could get): guarded by the revision.
  Txn txn;
  txn.when(Compare::mod_revision(key) == entry.mod_revision).then(Op::del(key, DeleteOptions{.prev_kv = true}));
  // Sent again after an unknown outcome: whether the item is still there
  // tells a conflict from a possible loss.
  if (again) txn.otherwise(Op::get(key, GetOptions{.keys_only = true}));
  run_on_strand(link->strand(), link->client().txn(std::move(txn)),
                [self = std::static_pointer_cast<DeleteTake>(shared_from_this()), link, key, entry,
                 decoded = std::move(decoded), again, done = std::move(done)](Result<TxnResponse> r) mutable {
                  if (!again && !r.ok() && r.status().is(Errc::kOutcomeUnknown)) {
                    // The guarded delete may or may not have applied: send it
                    // once more (still guarded, so it deletes nothing that
                    // another consumer got).
                    return self->send(link, key, entry, std::move(decoded), true, std::move(done));
                  }
                  done(self->decide(key, entry, std::move(decoded), again, std::move(r)));
                });
}

TakeDriver::Outcome DeleteTake::decide(const std::string& key, const ViewEntry& entry, std::shared_ptr<void> decoded,
                                       bool again, Result<TxnResponse> r) {
  Outcome out;
  if (r.ok() && r->succeeded) {
    out.kind = Outcome::Kind::kTaken;
    out.item = TakenItem{key, entry.value, entry.create_revision, std::move(decoded)};
    const auto& del = r->responses.at(0).del();
    if (!del.prev_kvs.empty()) {
      out.item.value = del.prev_kvs.front().value;
      out.item.revision = del.prev_kvs.front().create_revision;
    }
    core_->metrics().add("etcd_recipes_queue_dequeued_total", labels_, 1);
    return out;
  }
  const bool unknown_again = again && !r.ok() && r.status().is(Errc::kOutcomeUnknown);
  const bool gone_after_unknown = again && r.ok() && r->responses.at(0).get().kvs.empty();
  if (unknown_again || gone_after_unknown) {
    // Our first delete may have taken it without anyone receiving it.
    core_->metrics().add("etcd_recipes_queue_lost_total", labels_, 1);
    core_->record_error(Status(StatusCode::kUnavailable,
                               "the take of " + key +
                                   " had an unknown outcome and the item is gone: if that take deleted it, the item "
                                   "is lost",
                               Errc::kOutcomeUnknown));
  }
  if (r.ok() || unknown_again) {
    out.kind = Outcome::Kind::kConflict;
    return out;
  }
  out.status = std::move(r).status();
  return out;
}

}  // namespace etcd::recipes::detail
