// The process-wide log sink (etcd/log.h) and the posting of records.
#include "etcd/log.h"

#include <unistd.h>

#include <asio/post.hpp>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <utility>

#include "log_dispatch.h"

namespace etcd {

namespace {

// The installed sink and its level; -1: none.
struct LogSinkSlot {
  std::mutex mu;
  std::shared_ptr<const LogSink> sink;
  std::atomic<int> min_level{-1};
};

LogSinkSlot& log_sink_slot() {
  static LogSinkSlot* slot = new LogSinkSlot();  // never destroyed: records may be posted at exit
  return *slot;
}

std::shared_ptr<const LogSink> current_log_sink() {
  auto& slot = log_sink_slot();
  std::lock_guard lock(slot.mu);
  return slot.sink;
}

std::string log_time_text(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

std::string LogRecord::to_string() const {
  std::string line = log_time_text(time);
  line.append(" ").append(etcd::to_string(level)).append(" ").append(source.kind);
  line.append("[").append(source.name).append("]: ").append(message);
  if (!status.ok()) line.append(": ").append(status.to_string());
  return line;
}

void set_log_sink(LogSink sink) { set_log_sink(std::move(sink), LogLevel::kInfo); }

void set_log_sink(LogSink sink, LogLevel min_level) {
  auto& slot = log_sink_slot();
  std::shared_ptr<const LogSink> old;
  {
    std::lock_guard lock(slot.mu);
    old = std::move(slot.sink);
    if (sink) slot.sink = std::make_shared<const LogSink>(std::move(sink));
    slot.min_level.store(slot.sink ? static_cast<int>(min_level) : -1);
  }
  // `old` (and what it captured) goes here, outside the lock.
}

LogSink stderr_log_sink() {
  return [](const LogRecord& r) {
    std::string line = r.to_string();
    line.push_back('\n');
    // One write per line, so that concurrent records do not interleave.
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(2, line.data() + done, line.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  };
}

namespace detail {

bool log_wanted(LogLevel level) {
  const int min = log_sink_slot().min_level.load(std::memory_order_relaxed);
  return min >= 0 && static_cast<int>(level) >= min;
}

void post_log(const Executor& executor, LogLevel level, LogSource source, std::string message, Status status) {
  if (!log_wanted(level)) return;
  LogRecord record{level, std::chrono::system_clock::now(), std::move(source), std::move(message), std::move(status)};
  asio::post(executor, [record = std::move(record)] {
    // The sink installed when the record runs (set_log_sink(nullptr)
    // silences what is already on its way too).
    if (!log_wanted(record.level)) return;
    const auto sink = current_log_sink();
    if (!sink) return;
    try {
      (*sink)(record);
    } catch (...) {
      // Contained: a sink's failure is not the library's to report (where
      // to?), and never takes a thread down.
    }
  });
}

}  // namespace detail

}  // namespace etcd
