// How large an election's proposal may be (internal): the bound behind
// max_proposal_bytes() (election.h) and the check of the constructors and
// proclaim().
#pragma once

#include <cstddef>
#include <string>

#include "etcd/client.h"
#include "etcd/status.h"

namespace etcd::recipes::detail {

// etcd's default --max-request-bytes (1.5 MiB): the request size a
// campaign must fit in.
inline constexpr std::size_t kDefaultMaxRequestBytes = 1536 * 1024;

// Errc::kBadArgument naming the limit when `value` is larger than a
// candidate of election `name` on `client` can campaign with, else OK.
Status check_proposal(const Client& client, const std::string& name, const std::string& value);

}  // namespace etcd::recipes::detail
