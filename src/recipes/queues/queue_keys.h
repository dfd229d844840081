// The keys of one queue (internal), named once for the queues that write
// them and the inspector (etcd/recipes/inspect.h) that reads them. The
// layouts are documented in include/etcd/recipes/queue.h, priority_queue.h
// and work_queue.h.
//   NAME/items/<item>        an item (item_key.h names them; the priority
//                            queue's start with "<4 hex priority>-")
//   NAME/producers/<16 hex>  a producer's key, while it is open
//   NAME/claims/<item>       work queue: the claim of NAME/items/<item>, on
//                            the consumer's presence lease
//   NAME/dead/<item>         work queue: a dead letter (work_record.h)
#pragma once

#include <string>
#include <string_view>

#include "../core/key_path.h"

namespace etcd::recipes::detail {

struct QueueKeys {
  static constexpr std::string_view kItems = "items";
  static constexpr std::string_view kProducers = "producers";
  static constexpr std::string_view kClaims = "claims";
  static constexpr std::string_view kDead = "dead";

  explicit QueueKeys(std::string_view name)
      : items(dir_under(name, kItems)),
        claims(dir_under(name, kClaims)),
        dead(dir_under(name, kDead)),
        producers(dir_under(name, kProducers)) {}
  // The directories, each ending in '/'.
  std::string items, claims, dead, producers;

  // The item id named by `id_or_key`: an id (the part of an item key after
  // NAME/items/, no '/') or a whole item key, as an enqueue returns it
  // (Enqueued::keys). Empty when it names no item of this queue.
  std::string item_id(std::string_view id_or_key) const {
    if (id_or_key.starts_with(items)) id_or_key.remove_prefix(items.size());
    if (id_or_key.empty() || id_or_key.find('/') != std::string_view::npos) return {};
    return std::string(id_or_key);
  }
};

}  // namespace etcd::recipes::detail
