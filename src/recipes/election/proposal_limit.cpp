#include "proposal_limit.h"

#include <cstdint>
#include <limits>

#include "../core/keys.h"
#include "../core/lowest_key.h"
#include "client/client_access.h"
#include "etcd/recipes/election.h"

namespace etcd::recipes {

std::size_t max_proposal_bytes(const Client& client, const std::string& name) {
  // The campaign's Txn with an empty proposal, for the longest lease id.
  constexpr int64_t kLongestLease = std::numeric_limits<int64_t>::max();
  const std::string prefix = name + "/";
  const Txn empty = detail::LowestKeyDriver::create_txn(prefix, prefix + detail::lease_hex(kLongestLease), "",
                                                        kLongestLease);
  const std::size_t fixed = etcd::detail::ClientAccess::txn_request_bytes(client, empty);
  // Each copy of the value also lengthens the length prefixes around it:
  // at most five nested messages per copy, each prefix by at most 2 bytes
  // (a length below 2 MiB takes 3 bytes instead of 1).
  constexpr std::size_t kCopies = 3;
  constexpr std::size_t kPrefixGrowth = kCopies * 5 * 2;
  if (fixed + kPrefixGrowth >= detail::kDefaultMaxRequestBytes) return 0;
  return (detail::kDefaultMaxRequestBytes - fixed - kPrefixGrowth) / kCopies;
}

namespace detail {

Status check_proposal(const Client& client, const std::string& name, const std::string& value) {
  const std::size_t limit = max_proposal_bytes(client, name);
  if (value.size() <= limit) return Status();
  return InvalidArgument("the proposal is " + std::to_string(value.size()) + " bytes; a candidate of this election " +
                         "campaigns with at most " + std::to_string(limit) +
                         " bytes (a campaign sends its proposal three times in one request, and etcd's default "
                         "--max-request-bytes is 1.5 MiB)");
}

}  // namespace detail

}  // namespace etcd::recipes
