// Pieces the election recipes share (internal): parked waiters with
// deadlines, stop tokens and the close gate; ordered listener lists; reads
// of an election's candidates.
#pragma once

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "etcd/call.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/recipe.h"
#include "core/keys.h"
#include "core/recipe_core.h"
#include "core/waiters.h"
#include "core/calls.h"
#include "client/client_access.h"

namespace etcd::recipes::detail {

using etcd::detail::CallAccess;

// Runs `call`; `f` gets its result on `self->strand` (every step of an
// election object runs on its strand).
template <class Self, class T, class F>
void run_on_strand(const std::shared_ptr<Self>& self, Call<T> call, F f) {
  CallAccess::start_inline(std::move(call), [self, f = std::move(f)](Result<T> r) {
    asio::post(self->strand, [f, r = std::move(r)]() mutable { f(std::move(r)); });
  });
}

// Runs `step` on `self->strand` after a backoff of 50 ms per failure so far
// (counted in `failures`, at most `max_ms`), unless `stale()` says a later
// event made it obsolete or the timer, kept in `slot`, was cancelled.
template <class Self>
void retry_on_strand(const std::shared_ptr<Self>& self, int& failures, std::shared_ptr<asio::steady_timer>& slot,
                     int max_ms, std::function<bool()> stale, std::function<void()> step) {
  ++failures;
  auto timer =
      std::make_shared<asio::steady_timer>(self->strand, std::chrono::milliseconds(std::min(max_ms, 50 * failures)));
  slot = timer;
  timer->async_wait([timer, stale = std::move(stale), step = std::move(step)](const asio::error_code& ec) {
    if (ec || stale()) return;
    step();
  });
}

inline Labels election_labels(const std::string& name) { return {{"election", name}}; }

// Every candidate under `prefix`, the leader first.
inline Call<std::vector<Participant>> read_participants(Client& client, const Status& input, std::string prefix) {
  if (!input.ok()) return Call<std::vector<Participant>>::ready(input, client.executor());
  GetOptions options;
  options.prefix = true;
  options.sort_order = SortOrder::kAscend;
  options.sort_target = SortTarget::kCreate;
  return map_call<std::vector<Participant>>(client.get(std::move(prefix), options), client.executor(),
                                            [](const GetResponse& r) {
                                              std::vector<Participant> out;
                                              for (const auto& kv : r.kvs) {
                                                Participant p;
                                                p.key = kv.key;
                                                p.value = kv.value;
                                                p.term = kv.create_revision;
                                                p.lease = kv.lease;
                                                p.leader = out.empty();
                                                out.push_back(std::move(p));
                                              }
                                              return out;
                                            });
}

inline LeaderInfo leader_info(const KeyValue& kv) {
  LeaderInfo info;
  info.key = kv.key;
  info.value = kv.value;
  info.term = kv.create_revision;
  info.lease = kv.lease;
  return info;
}

// The key with the lowest create revision under `prefix`, if any.
inline Call<std::optional<LeaderInfo>> read_leader(Client& client, const Status& input, std::string prefix) {
  if (!input.ok()) return Call<std::optional<LeaderInfo>>::ready(input, client.executor());
  GetOptions options;
  options.prefix = true;
  options.limit = 1;
  options.sort_order = SortOrder::kAscend;
  options.sort_target = SortTarget::kCreate;
  return map_call<std::optional<LeaderInfo>>(client.get(std::move(prefix), options), client.executor(),
                                             [](const GetResponse& r) -> std::optional<LeaderInfo> {
                                               if (r.kvs.empty()) return std::nullopt;
                                               return leader_info(r.kvs.front());
                                             });
}

// Listeners that run on a strand, in the order they were posted. A listener
// that throws is recorded as an error of the recipe, never propagated.
template <class... Args>
class ListenerList : public std::enable_shared_from_this<ListenerList<Args...>> {
 public:
  using Fn = std::function<void(Args...)>;

  Subscription add(Fn fn) {
    auto entry = std::make_shared<Entry>();
    entry->fn = std::move(fn);
    uint64_t id;
    {
      std::lock_guard lock(mu_);
      id = next_id_++;
      entries_.emplace_back(id, entry);
    }
    std::weak_ptr<ListenerList> weak = this->shared_from_this();
    return Subscription([weak, id, entry] {
      entry->active.store(false);
      if (auto self = weak.lock()) {
        std::lock_guard lock(self->mu_);
        std::erase_if(self->entries_, [id](const auto& p) { return p.first == id; });
      }
    });
  }

  template <class Strand>
  void post(const Strand& strand, const std::shared_ptr<RecipeCore>& core, Args... args) {
    std::vector<std::shared_ptr<Entry>> entries;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, e] : entries_) entries.push_back(e);
    }
    for (auto& e : entries) {
      asio::post(strand, [e, core, tuple = std::tuple<std::decay_t<Args>...>(args...)]() mutable {
        if (!e->active.load()) return;
        try {
          std::apply(e->fn, tuple);
        } catch (const std::exception& ex) {
          core->record_error(Status(StatusCode::kUnknown, std::string("a listener threw: ") + ex.what()));
        } catch (...) {
          core->record_error(Status(StatusCode::kUnknown, "a listener threw"));
        }
      });
    }
  }

 private:
  struct Entry {
    Fn fn;
    std::atomic<bool> active{true};
  };
  std::mutex mu_;
  uint64_t next_id_ = 1;
  std::vector<std::pair<uint64_t, std::shared_ptr<Entry>>> entries_;
};

}  // namespace etcd::recipes::detail
