// The client's Stream forms (etcd/stream.h: watch_stream, state_stream)
// over its listener forms: a handler only appends to the stream's buffer.
#include <memory>
#include <utility>

#include "etcd/client.h"
#include "etcd/stream.h"

namespace etcd {

Stream<WatchResponse> watch_stream(Client& client, std::string key, WatchOptions options, StreamOptions stream) {
  auto channel =
      std::make_shared<detail::StreamChannel<WatchResponse>>(client.executor(), stream, detail::StreamOverflow::kFail);
  std::weak_ptr<detail::StreamChannel<WatchResponse>> weak = channel;
  auto watcher =
      std::make_shared<Watcher>(client.watch(std::move(key), std::move(options), [weak](Result<WatchResponse> r) {
        auto ch = weak.lock();
        if (!ch) return;
        if (r.ok()) return ch->push(std::move(r).value());
        ch->finish(r.status());
      }));
  channel->on_end([watcher] { watcher->cancel(); });
  return Stream<WatchResponse>(std::move(channel));
}

Stream<ConnectionState> state_stream(Client& client, StreamOptions stream) {
  return detail::listener_stream<ConnectionState>(
      client.executor(), stream, detail::StreamOverflow::kKeepNewest,
      [&client](std::function<void(ConnectionState)> push) { return client.on_state_change(std::move(push)); });
}

}  // namespace etcd
