// How a recipe's work holds its client (internal).
//
// A closed recipe must not keep its client (docs/recipes.md, "Lifecycle"),
// yet the work close() starts — releasing a hold, deleting a contender key,
// the last notice to a listener — needs the client until it is done. So a
// recipe holds its client through one ClientLink: the recipe keeps it until
// close(); each piece of work in flight (an acquisition, a hold, a parked
// waiter, a running view, a Call not consumed yet) keeps a copy; the client
// goes with the last copy. What is bound to the client's executor — the
// recipe's strand, and timers through the handlers that own them — lives
// no longer than a link, so it never outlives the client's event loop.
#pragma once

#include <asio/strand.hpp>
#include <memory>

#include "etcd/call.h"
#include "etcd/client.h"

namespace etcd::recipes::detail {

class ClientLink {
 public:
  static std::shared_ptr<ClientLink> make(Client client);

  Client& client() { return client_; }
  Executor executor() const { return client_.executor(); }
  // The recipe's one strand on the client's executor: its listeners run
  // there in order, and so do the steps of its views.
  const asio::strand<Executor>& strand() const { return strand_; }

 private:
  explicit ClientLink(Client client);
  ~ClientLink() = default;

  // Declared first: destroyed last, after the strand on its executor.
  Client client_;
  asio::strand<Executor> strand_;
};

// Where a completion runs once the client may be gone: the link's executor,
// or asio's system executor without one.
inline Executor executor_or_system(const std::shared_ptr<ClientLink>& link) {
  return link ? link->executor() : Executor(asio::system_executor());
}

// A Call that keeps `link` until it is consumed and completes on its
// executor; without a link, on asio's system executor.
template <class T>
Call<T> link_call(std::shared_ptr<ClientLink> link, typename Call<T>::Starter start) {
  const Executor ex = executor_or_system(link);
  if (!link) return Call<T>(std::move(start), ex);
  return Call<T>([link = std::move(link), start = std::move(start)](
                     CallOptions options, Callback<T> done) { start(std::move(options), std::move(done)); },
                 ex);
}

// The same, answering `result`.
template <class T>
Call<T> ready_call(std::shared_ptr<ClientLink> link, Result<T> result) {
  return link_call<T>(std::move(link), [shared = std::make_shared<Result<T>>(std::move(result))](
                                           CallOptions, Callback<T> done) { done(std::move(*shared)); });
}

}  // namespace etcd::recipes::detail
