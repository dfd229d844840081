// How the library makes log records (internal): etcd/log.h says where they
// go and on which thread.
#pragma once

#include <string>

#include "etcd/call.h"
#include "etcd/log.h"

namespace etcd::detail {

// Whether a sink wants records of `level` (one atomic load): check it
// before building a message that costs anything.
bool log_wanted(LogLevel level);

// Posts a record, stamped now, to `executor`, where the sink installed
// then runs (never inline: the caller may hold a lock). Nothing when no
// sink wants `level`.
void post_log(const Executor& executor, LogLevel level, LogSource source, std::string message, Status status);

}  // namespace etcd::detail
