// The ordered layout's one cost that grows (--scale): an acquisition that
// finds nothing before it (here: an uncontended mutex) looks back over the
// layout's keys deleted since etcd's last compaction, which etcd keeps in
// its index until then. Uncontended lock + unlock cycles of one ordered
// mutex in a private member: on a fresh name, after 100,000 of the layout's
// keys were created and deleted under it (keys that name an old revision,
// as past acquisitions do), and after a compaction. The value is the rate
// with the deleted keys; the detail gives the other two and etcd's CPU per
// cycle in each.
#include <cstdio>
#include <string>
#include <utility>

#include "bench.h"
#include "etcd/recipes/mutex.h"
#include "server_metrics.h"

namespace bench::metrics_ordered_history {
namespace {

using Seconds = std::chrono::duration<double>;

constexpr int kDeleted = 100'000;
constexpr auto kWindow = std::chrono::seconds(3);

struct Rate {
  double per_s = 0;
  double cpu_ms = 0;  // etcd CPU per cycle
};

Rate cycles(etcd::recipes::DistributedMutex& m, const std::string& metrics_endpoint) {
  const double cpu_before = etcd_cpu_seconds(metrics_endpoint);
  const auto from = Clock::now();
  int n = 0;
  while (Clock::now() - from < kWindow) {
    m.acquire().timeout(kCallBound).wait().value();
    if (!m.release().timeout(kCallBound).wait().value()) throw std::runtime_error("a release found no hold");
    ++n;
  }
  const double seconds = Seconds(Clock::now() - from).count();
  return Rate{.per_s = n / seconds, .cpu_ms = 1000.0 * (etcd_cpu_seconds(metrics_endpoint) - cpu_before) / n};
}

double ordered_cycles_over_deleted_keys(Context& ctx) {
  auto member = ctx.private_member();
  const std::string metrics_endpoint = "127.0.0.1:" + std::to_string(member->metrics_port(0));
  etcd::Client client(worker_client_options(member->endpoints_csv()));
  const std::string name = "scale/ordered-history";
  etcd::recipes::RecipeOptions options;
  options.contender_layout = etcd::recipes::ContenderLayout::kOrdered;
  etcd::recipes::DistributedMutex m(client, name, options);
  (void)cycles(m, metrics_endpoint);  // warm: session, a revision seen
  const Rate fresh = cycles(m, metrics_endpoint);
  // Keys of the layout naming revision 1 (long past), created and deleted.
  const std::string old = name + "/~0000000000000001-";
  put_all(
      client, kDeleted,
      [&](int i) {
        char n[40];
        std::snprintf(n, sizeof n, "%016x-%016x", i, 1);
        return std::pair{old + n, std::string("x")};
      },
      Clock::now() + std::chrono::minutes(5));
  const auto deleted = client.del(old, {.prefix = true}).timeout(kCallBound).wait().value();
  if (deleted.deleted != kDeleted) throw std::runtime_error(fmt("deleted %lld keys", (long long)deleted.deleted));
  const Rate piled = cycles(m, metrics_endpoint);
  // Compacted past the deletions (etcd keeps a key deleted at exactly the
  // compaction's revision), as auto-compaction does.
  const auto now = client.put(name + "-probe", "x").timeout(kCallBound).wait().value();
  (void)client.compact(now.header.revision, /*physical=*/true).timeout(kCallBound).wait().value();
  const Rate compacted = cycles(m, metrics_endpoint);
  ctx.set_detail(ctx.metric(), {{"fresh_per_s", fresh.per_s},
                                {"compacted_per_s", compacted.per_s},
                                {"etcd_cpu_ms_fresh", fresh.cpu_ms},
                                {"etcd_cpu_ms_deleted", piled.cpu_ms},
                                {"etcd_cpu_ms_compacted", compacted.cpu_ms}});
  ctx.note(fmt("%s: etcd %s, uncontended lock + unlock of one ordered mutex: %.0f cycles/s (etcd CPU %.2f ms each) on "
               "a fresh name; %.0f/s (%.2f ms) with %d of the layout's keys deleted under it and not yet compacted; "
               "%.0f/s (%.2f ms) after a compaction",
               ctx.metric().c_str(), member->version().text.c_str(), fresh.per_s, fresh.cpu_ms, piled.per_s,
               piled.cpu_ms, kDeleted, compacted.per_s, compacted.cpu_ms));
  return piled.per_s;
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    scale_metric("mutex_ordered_cycle_per_s_100k_deleted", "cycles/s", Kind::kRate, 4067,
                 ordered_cycles_over_deleted_keys),
});

}  // namespace
}  // namespace bench::metrics_ordered_history
