// Logging: what the library does in the background — a call retried after
// a failure, a hold lost, a presence healed, a view resynchronised after a
// compaction, an item moved to the dead letters, a background loop that
// gives up — goes to one process-wide sink as well as (for a recipe) to
// its errors() and on_error listeners.
//
//   etcd::set_log_sink(etcd::stderr_log_sink(), etcd::LogLevel::kInfo);   // one line per record
//   etcd::set_log_sink([](const etcd::LogRecord& r) { my_logger.log(r.level, r.to_string()); });
//   etcd::set_log_sink(nullptr);                                           // silent again
//
// The default is silent: a library writes nothing of its own. Records below
// the level given are not even built (one atomic load per event).
//
// Where the sink runs: on the executor of the client the record is about
// (its callback executor, the one its callbacks and listeners run on),
// never on a gRPC thread and never while the library holds a lock of its
// own, so a sink may call the library. Records of one recipe arrive in the
// order they happened (they run on its strand); records of different
// clients or recipes may run at once on different threads, so a sink that
// writes somewhere shared locks it itself. A record made after its client
// closed is dropped. A sink that throws is contained: the exception is
// dropped and the sink keeps receiving records.
//
// The source: for the client, kind "client" and the endpoint involved; for
// a recipe, its kind ("DistributedMutex", "DistributedWorkQueue", ...) and
// its name, as in its identity() ("DistributedMutex[/locks/a]").
//
// The client's long-lived streams (the watch stream, the lease keep-alive
// streams) report their heals: a warning when one breaks (the status says
// why; one record per break, however many reconnections it takes) and an
// info record when it carries answers again.
//
// Levels: kDebug, what is routine (not used by the library today); kInfo, a
// retry, a heal, a resync — the library coped; kWarning, something a user
// may have to know of — a hold lost, an item moved to the dead letters, a
// background failure recorded in a recipe's errors(); kError, a background
// loop that stopped for good.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "etcd/status.h"

namespace etcd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning", "error".
std::string_view to_string(LogLevel level) noexcept;

struct LogSource {
  std::string kind{};  // "client", or a recipe's kind
  std::string name{};  // the endpoint, or the recipe's name
};

struct LogRecord {
  LogLevel level = LogLevel::kInfo;
  std::chrono::system_clock::time_point time{};  // when it happened
  LogSource source{};
  std::string message{};
  Status status{};  // the failure the record is about; OK when there is none

  // One line: "<UTC time> <level> <kind>[<name>]: <message>[: <status>]",
  // e.g. "2026-01-02T03:04:05.678Z warning DistributedMutex[/locks/a]: the
  // hold was lost: ABORTED: ...".
  std::string to_string() const;
};

using LogSink = std::function<void(const LogRecord&)>;

// Installs the process-wide sink for records at `min_level` and above,
// replacing the one before (records already on their way may still reach
// the old one). nullptr: silent.
void set_log_sink(LogSink sink);
void set_log_sink(LogSink sink, LogLevel min_level);

// A sink that writes each record's to_string() as one line to stderr (one
// write per line: lines of concurrent records do not mix).
LogSink stderr_log_sink();

}  // namespace etcd
