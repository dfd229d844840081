// client_threads: how many threads this process runs while ONE client holds
// 1000 watches. The client multiplexes every watch over one stream, so the
// count must not grow with the number of watches.
#include <string>
#include <vector>

#include "bench.h"

namespace bench::metrics_threads {
namespace {

constexpr int kWatches = 1000;

double client_threads(Context& ctx) {
  const std::string prefix = Context::key_prefix("client_threads");
  std::vector<etcd::Watcher> watchers;
  watchers.reserve(kWatches);
  for (int i = 0; i < kWatches; ++i) {
    watchers.push_back(ctx.client.watch(prefix + std::to_string(i), {}, [](etcd::Result<etcd::WatchResponse>) {}));
  }
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  for (const auto& w : watchers) {
    if (!w.wait_created(deadline)) throw std::runtime_error("not all 1000 watches were created within 30 s");
  }

  const auto threads = thread_names();
  ctx.note("client_threads: " + std::to_string(total(threads)) + " threads with " + std::to_string(kWatches) +
           " watches open: " + describe(threads));
  ctx.note("client_threads: before the client existed: " + std::to_string(total(ctx.threads_before_client)) + ": " +
           describe(ctx.threads_before_client));
  watchers.clear();  // cancels every watch
  return total(threads);
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "client_threads",
     .unit = "threads",
     .kind = Kind::kCount,
     .base = "",
     .order = 900,
     .run = client_threads},
});

}  // namespace
}  // namespace bench::metrics_threads
