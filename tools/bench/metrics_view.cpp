// KeyspaceView: the cycle rate of a put seen through the view's stream
// (etcd/stream.h) — one put, then the stream's next() until the view has
// it — as a ratio to put_seq measured in the same run: what a view costs
// over the put itself (the watch's delivery, the view's map, the stream's
// hand-off to the consumer).
#include <cstdio>
#include <string>

#include "bench.h"
#include "etcd/recipes/keyspace_view.h"
#include "etcd/stream.h"

namespace bench::metrics_view {
namespace {

using etcd::recipes::KeyspaceEvent;

double view_cycle_seq(Context& ctx) {
  const std::string prefix = Context::key_prefix("view_cycle");
  const int warmup = ctx.settings.quick ? 20 : 50;
  const int measured = ctx.settings.quick ? 300 : 1000;
  etcd::recipes::KeyspaceView view(ctx.client, prefix);
  auto events = view.events();
  view.start();
  view.wait_initialized().timeout(std::chrono::seconds(10)).wait().value();
  const auto next_event = [&]() {
    auto e = events.next().timeout(std::chrono::seconds(5)).wait().value();
    if (!e) throw std::runtime_error("the view's stream ended");
    return std::move(*e);
  };
  (void)next_event();  // kInitialized
  Clock::time_point started;
  for (int i = 0; i < warmup + measured; ++i) {
    if (i == warmup) started = Clock::now();
    const std::string value = std::to_string(i);
    ctx.client.put(prefix + std::to_string(i % 64), value).timeout(kCallBound).wait().value();
    for (KeyspaceEvent e = next_event(); !e.current || e.current->value != value; e = next_event()) {
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - started).count();
  char line[160];
  std::snprintf(line, sizeof line,
                "view cycle: %d puts each seen through a KeyspaceView's stream in %.2f s (%zu keys held)", measured,
                secs, view.size());
  ctx.note(line);
  view.close();
  return measured / secs;
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "view_cycle_seq", .unit = "cycles/s", .kind = Kind::kRate, .order = 508, .run = view_cycle_seq},
});

}  // namespace
}  // namespace bench::metrics_view
