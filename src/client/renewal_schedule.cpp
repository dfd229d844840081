#include "renewal_schedule.h"

#include <algorithm>
#include <cmath>

namespace etcd::detail {

namespace {
// A well-mixed 64-bit hash (splitmix64's finaliser): etcd's lease ids are
// nearly sequential, their hashes are not.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

Clock::duration RenewalSchedule::interval(std::chrono::seconds ttl) {
  return std::max<Clock::duration>(std::chrono::duration_cast<Clock::duration>(ttl) / 3, kTick);
}

Deadline RenewalSchedule::first_renewal(Deadline granted_at, std::chrono::seconds ttl, int64_t id) {
  const auto full = interval(ttl);
  // In [0, 1): the lease's fixed point in the second half of the interval.
  const double u = static_cast<double>(mix(static_cast<uint64_t>(id)) >> 11) * 0x1.0p-53;
  const auto offset = std::chrono::duration_cast<Clock::duration>(full / 2 + (full / 2) * u);
  return granted_at + offset;
}

Clock::duration RenewalSchedule::silence_limit(std::chrono::seconds shortest_ttl, bool elsewhere) {
  const auto ttl = std::chrono::duration_cast<Clock::duration>(shortest_ttl);
  return std::max<Clock::duration>(elsewhere ? ttl / 3 : ttl / 2, kMinSilence);
}

bool RenewalSchedule::silent_too_long(Deadline now, Deadline oldest_outstanding, Deadline last_heard,
                                      Clock::duration limit) {
  return now - std::max(oldest_outstanding, last_heard) > limit;
}

std::size_t RenewalSchedule::sends_per_tick(double due_per_tick) {
  const double twice = std::ceil(2 * std::max(due_per_tick, 0.0));
  return std::max(kMinSendsPerTick, static_cast<std::size_t>(twice));
}

std::size_t RenewalSchedule::pick_stream(const std::vector<std::size_t>& leases) {
  if (leases.empty()) return 0;
  const auto least = static_cast<std::size_t>(std::ranges::min_element(leases) - leases.begin());
  if (leases[least] < kLeasesPerStream) return least;
  if (leases.size() < kMaxStreams) return leases.size();
  return least;
}

}  // namespace etcd::detail
