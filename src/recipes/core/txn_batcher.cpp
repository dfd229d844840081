#include "txn_batcher.h"
#include "client/client_access.h"

#include <algorithm>
#include <atomic>

namespace etcd::recipes::detail {

using etcd::detail::CallAccess;

namespace {

// Errors that one member of a batch can cause on its own (its lease is
// gone, its key is not permitted, the batch is too big for this server).
// The others' transactions were not applied and are sent again alone.
bool caused_by_one_member(const Status& st) {
  switch (st.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kPermissionDenied:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kResourceExhausted:
    case StatusCode::kOutOfRange:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::shared_ptr<TxnBatcher> TxnBatcher::of(const Client& client) {
  return etcd::detail::ClientAccess::service<TxnBatcher>(client, [] { return std::make_shared<TxnBatcher>(); });
}

bool TxnBatcher::nests(const std::string& a, const std::string& b) { return a.starts_with(b) || b.starts_with(a); }

void TxnBatcher::submit(std::shared_ptr<ClientLink> link, Txn txn, std::string scope, bool caller_waits,
                        Callback<TxnResponse> done) {
  std::vector<Item> batch;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(Item{std::move(link), std::move(txn), std::move(scope), std::move(done)});
    if (in_flight_ >= kMaxBatchesInFlight) return;  // a completion sends it
    ++in_flight_;
    take_batch(batch);
  }
  // With a free slot the queue held only this transaction (a completion
  // drains the queue before it frees its slot), so it goes alone, now, and
  // may use the caller's thread.
  send(std::move(batch), caller_waits);
}

void TxnBatcher::take_batch(std::vector<Item>& batch) {
  for (auto it = queue_.begin(); it != queue_.end() && batch.size() < max_batch_;) {
    const bool conflicts =
        std::any_of(batch.begin(), batch.end(), [&](const Item& taken) { return nests(taken.scope, it->scope); });
    if (conflicts) {
      ++it;  // waits for a later batch
      continue;
    }
    batch.push_back(std::move(*it));
    it = queue_.erase(it);
  }
}

void TxnBatcher::send(std::vector<Item> batch, bool caller_waits) {
  if (batch.size() == 1) return send_alone(std::move(batch.front()), caller_waits);
  Txn combined;
  for (const auto& item : batch) combined.then(Op::txn(item.txn));
  auto call = batch.front().link->client().txn(std::move(combined));
  auto shared = std::make_shared<std::vector<Item>>(std::move(batch));
  CallAccess::start_inline(std::move(call), [self = shared_from_this(), shared](Result<TxnResponse> r) {
    self->finish_batch(*shared, std::move(r));
  });
}

void TxnBatcher::finish_batch(std::vector<Item>& batch, Result<TxnResponse> r) {
  if (!r.ok() && caused_by_one_member(r.status())) {
    if (r.status().is(Errc::kTooManyOps)) {
      std::lock_guard lock(mu_);
      max_batch_ = std::max<std::size_t>(1, std::min(max_batch_, batch.size()) / 2);
    }
    // Nothing of the batch was applied: each transaction goes again alone
    // and meets its own outcome. They keep this batch's in-flight slot.
    auto remaining = std::make_shared<std::atomic<std::size_t>>(batch.size());
    for (auto& item : batch) {
      auto done = std::move(item.done);
      CallAccess::start_inline(item.link->client().txn(std::move(item.txn)),
                               [self = shared_from_this(), done, remaining](Result<TxnResponse> alone) {
                                 done(std::move(alone));
                                 if (remaining->fetch_sub(1) == 1) self->send_next();
                               });
    }
    return;
  }
  // The next batch goes out before this one's continuations run.
  send_next();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!r.ok()) {
      batch[i].done(r.status());
      continue;
    }
    TxnResponse own = r->responses.at(i).txn();
    own.header = r->header;  // the nested responses carry no header
    batch[i].done(std::move(own));
  }
}

void TxnBatcher::send_alone(Item item, bool caller_waits) {
  CallAccess::start_inline(CallAccess::caller_waits(item.link->client().txn(std::move(item.txn)), caller_waits),
                           [self = shared_from_this(), done = std::move(item.done)](Result<TxnResponse> r) {
                             self->send_next();
                             done(std::move(r));
                           });
}

void TxnBatcher::send_next() {
  std::vector<Item> batch;
  {
    std::lock_guard lock(mu_);
    take_batch(batch);
    if (batch.empty()) {
      --in_flight_;
      return;
    }
  }
  send(std::move(batch), false);
}

}  // namespace etcd::recipes::detail
