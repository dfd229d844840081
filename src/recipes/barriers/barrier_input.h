// What the counted barriers check of their input (internal).
#pragma once

#include <cstdint>
#include <string>

#include "etcd/status.h"

namespace etcd::recipes::detail {

inline Status check_parties(int64_t parties) {
  if (parties < 1) return InvalidArgument("parties must be at least 1 (got " + std::to_string(parties) + ")");
  return Status();
}

}  // namespace etcd::recipes::detail
