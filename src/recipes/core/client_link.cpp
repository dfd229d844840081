#include "client_link.h"

#include <thread>

#include "client/client_access.h"

namespace etcd::recipes::detail {

ClientLink::ClientLink(Client client) : client_(std::move(client)), strand_(asio::make_strand(client_.executor())) {}

std::shared_ptr<ClientLink> ClientLink::make(Client client) {
  // The last copy usually goes at the end of a completion, on a gRPC thread
  // or one of the client's own. If its Client is the client's last full
  // handle, letting go of it closes the client, and close() waits for the
  // calls in flight — the one completing on this very thread among them —
  // then for the client's threads. Such a link goes on a short-lived thread
  // of its own (as make_core in client.cpp does for a core released on one
  // of its own threads); any other goes here. (Were the user's last handle
  // to go at the very same moment, this one could still close the client
  // here: a bounded wait on this thread, never a fault.)
  return std::shared_ptr<ClientLink>(new ClientLink(std::move(client)), [](ClientLink* link) {
    if (etcd::detail::ClientAccess::last_full_handle(link->client_)) {
      std::thread([link] { delete link; }).detach();
    } else {
      delete link;
    }
  });
}

}  // namespace etcd::recipes::detail
