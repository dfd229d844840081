// Group commit for the contender transactions of one Client (internal).
//
// Every acquisition of a lock-like recipe starts with one small
// create-if-absent Txn. When many recipes of one client acquire at once
// (hundreds of lock names in flight), sending each as its own RPC costs etcd
// one raft entry and, on etcd 3.4, one copy of its whole uncommitted read
// buffer per Txn, which makes a write Txn 2-3 times as expensive as a put
// under load. The batcher sends such transactions as they come while fewer
// than kMaxBatchesInFlight batches are outstanding, and otherwise queues
// them; each completion sends what queued meanwhile as one Txn whose branch
// holds the queued transactions nested. A lone caller therefore pays no
// extra latency, and a busy client gets one etcd write per batch.
//
// What nesting changes, and why it is safe here:
// - Every write in one Txn gets the same main revision. Two contenders of
//   the same lock must never share a revision (the lowest create revision
//   holds, and fencing tokens must strictly increase), so a batch never
//   holds two transactions whose scopes (key prefixes) nest.
// - One bad request fails the whole Txn (say, a session whose lease just
//   expired). A batch that fails for any reason other than a transient one
//   is therefore sent again one transaction at a time, so each error lands
//   on the acquisition it belongs to. A transient failure (unavailable,
//   deadline, outcome unknown) is reported to every member; their
//   transactions are create-if-absent and safe to retry.
// - A server with a smaller --max-txn-ops refuses large batches; the
//   batcher then halves its batch size for the rest of its life.
//
// One batcher per client, kept in the client's core (a service, see
// ClientAccess::service) and destroyed with it. So it must not own the
// client: each queued transaction carries its caller's link to the client
// (client_link.h), which keeps the client alive exactly while there is
// something to send, and a batch goes out through its first member's.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client_link.h"
#include "etcd/client.h"
#include "etcd/txn.h"

namespace etcd::recipes::detail {

class TxnBatcher : public std::enable_shared_from_this<TxnBatcher> {
 public:
  // etcd's default --max-txn-ops is 128 and counts a nested Txn's ops
  // against what its parent leaves over: 64 nested transactions leave each
  // of them 64 ops.
  static constexpr std::size_t kMaxBatch = 64;
  static constexpr int kMaxBatchesInFlight = 2;

  // The batcher of `client`, shared by every recipe on it.
  static std::shared_ptr<TxnBatcher> of(const Client& client);

  // Runs `txn` through `link` (to this batcher's client), alone or nested
  // in a batch. `scope` is the key prefix the
  // transaction reads and writes. `caller_waits`: the submitting thread
  // blocks for the answer anyway, so a transaction sent alone right away
  // may run its RPC on it. `done` runs on whatever thread completed the RPC
  // (library-internal continuations only) with the transaction's own
  // responses and the batch's header.
  void submit(std::shared_ptr<ClientLink> link, Txn txn, std::string scope, bool caller_waits,
              Callback<TxnResponse> done);

 private:
  struct Item {
    std::shared_ptr<ClientLink> link;
    Txn txn;
    std::string scope;
    Callback<TxnResponse> done;
  };

  static bool nests(const std::string& a, const std::string& b);
  // Moves up to max_batch_ queued items with pairwise disjoint scopes into
  // `batch`. Requires mu_.
  void take_batch(std::vector<Item>& batch);
  void send(std::vector<Item> batch, bool caller_waits);
  void send_alone(Item item, bool caller_waits);
  void send_next();
  void finish_batch(std::vector<Item>& batch, Result<TxnResponse> r);

  mutable std::mutex mu_;
  std::deque<Item> queue_;
  int in_flight_ = 0;
  std::size_t max_batch_ = kMaxBatch;
};

}  // namespace etcd::recipes::detail
