// MultiLock and cooperative-release metrics: the uncontended cycle of a
// three-name multi-lock, measured like lock_cycle_seq (paired with
// put_seq's puts: see measure_sequential_paired), and the hand-off of a
// release request.
#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "etcd/recipes/multi_lock.h"
#include "etcd/recipes/mutex.h"

namespace bench::metrics_multi_lock {
namespace {

using etcd::recipes::DistributedMutex;
using etcd::recipes::MultiLock;

// Uncontended acquire + release of three names: three Txns one after the
// other, then three deletes sent together (six etcd writes per cycle).
double multilock_cycle_seq(Context& ctx) {
  const std::string p = Context::key_prefix("multilock_cycle_seq");
  MultiLock lock(ctx.client, {p + "c", p + "a", p + "b"});
  return measure_cycle_paired(ctx, [&] {
    lock.acquire().timeout(kCallBound).wait().value();
    if (!lock.release().timeout(kCallBound).wait().value()) {
      throw std::runtime_error("multilock_cycle_seq: release reported a lost hold");
    }
  });
}

// A holder that releases when asked, an asker parked in acquire(): ms from
// the asker's request_release() call to its acquisition, median of the
// rounds (20 in a quick run, 50 otherwise).
double release_request_handoff_p50_ms(Context& ctx) {
  const std::string name = Context::key_prefix("release_request_handoff") + "lock";
  DistributedMutex holder(ctx.client, name), asker(ctx.client, name);
  auto sub = holder.on_release_requested([&] { holder.release().then([](etcd::Result<bool>) {}); });
  const int rounds = ctx.settings.quick ? 20 : 50;
  std::vector<double> ms;
  for (int i = 0; i < rounds; ++i) {
    holder.acquire().timeout(kCallBound).wait().value();
    auto parked = std::async(std::launch::async, [&] { return asker.acquire().timeout(kCallBound).wait(); });
    // Parked: both keys exist.
    const auto until = Clock::now() + kCallBound;
    while (ctx.client.get(name + "/", {.prefix = true, .count_only = true}).timeout(kCallBound).wait().value().count < 2) {
      if (Clock::now() > until) throw std::runtime_error("release_request_handoff: the asker never queued");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const auto asked = Clock::now();
    if (!asker.request_release().timeout(kCallBound).wait().value()) {
      throw std::runtime_error("release_request_handoff: no holder to ask");
    }
    parked.get().value();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - asked).count());
    if (!asker.release().timeout(kCallBound).wait().value()) throw std::runtime_error("release_request_handoff: lost");
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "multilock_cycle_seq", .unit = "cycles/s", .order = 445, .run = multilock_cycle_seq},
    {.name = "release_request_handoff_p50_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 446,
     .run = release_request_handoff_p50_ms},
});

}  // namespace
}  // namespace bench::metrics_multi_lock
