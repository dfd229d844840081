// How DistributedQueue and TypedQueue take an item (internal): by deleting
// its key. Why that delivers each item to exactly one consumer:
// include/etcd/recipes/queue.h.
#pragma once

#include <memory>
#include <string>

#include "consumer.h"

namespace etcd::recipes::detail {

class DeleteTake : public TakeDriver {
 public:
  // `guarded`: every take compares the revision the item was read at (a
  // typed queue takes only the value it decoded).
  DeleteTake(std::shared_ptr<RecipeCore> core, Labels labels, bool guarded)
      : core_(std::move(core)), labels_(std::move(labels)), guarded_(guarded) {}

  void take(const std::shared_ptr<ClientLink>& link, const std::string& key, const ViewEntry& entry,
            std::shared_ptr<void> decoded, OutcomeCallback done) override;

 private:
  void send(const std::shared_ptr<ClientLink>& link, const std::string& key, const ViewEntry& entry,
            std::shared_ptr<void> decoded, bool again, OutcomeCallback done);
  Outcome decide(const std::string& key, const ViewEntry& entry, std::shared_ptr<void> decoded, bool again,
                 Result<TxnResponse> r);

  const std::shared_ptr<RecipeCore> core_;
  const Labels labels_;
  const bool guarded_;
};

}  // namespace etcd::recipes::detail
