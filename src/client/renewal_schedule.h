// When a kept lease is renewed, over which keep-alive stream, and when such
// a stream counts as dead: the pure rules the LeaseKeeper follows, apart from
// its streams and locks so that they can be checked on their own.
//
// Why several streams: etcd answers the renewals of one LeaseKeepAlive
// stream one at a time, and on the leader each renewal first waits until
// the member applied everything it committed. Under write load that wait
// bounds one stream's renewals per second, whatever the member's CPU has to
// spare, so leases are spread over streams of at most kLeasesPerStream each.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "etcd/call.h"

namespace etcd::detail {

struct RenewalSchedule {
  // A stream carries at most this many leases (until kMaxStreams are open;
  // then the leases are spread evenly over those). 256 leases of the
  // default 10 s TTL ask a stream for 77 renewals a second.
  static constexpr std::size_t kLeasesPerStream = 256;
  static constexpr std::size_t kMaxStreams = 64;
  // How often the keeper looks at its leases.
  static constexpr Clock::duration kTick = std::chrono::milliseconds(100);
  // A silence shorter than this never ends a stream (scheduling noise).
  static constexpr Clock::duration kMinSilence = std::chrono::seconds(1);
  // Sends a stream may make in one tick even when its steady rate is lower.
  static constexpr std::size_t kMinSendsPerTick = 32;

  // A renewal is due a third of the TTL after the previous one was sent:
  // two more chances to renew remain before the TTL runs out.
  static Clock::duration interval(std::chrono::seconds ttl);

  // The first renewal of a lease granted (or adopted) at `granted_at`:
  // between half and all of the interval later, at a point fixed by the
  // lease id, so that leases granted together do not renew together.
  static Deadline first_renewal(Deadline granted_at, std::chrono::seconds ttl, int64_t id);

  // A stream with renewals outstanding is dead when nothing at all came
  // back on it for this long (at least kMinSilence). Slow answers keep it
  // alive; only silence ends it. With another member to go to
  // (`elsewhere`), a third of the shortest TTL it carries: early enough
  // that a renewal there still beats the TTL. With nowhere better (one
  // endpoint), half of it: a member that answers within half the TTL keeps
  // every lease (a lease renews once per round trip at worst, since a
  // renewal waits for the previous one's answer), so a slow member is
  // waited for, and a dead connection is still replaced with a sixth of
  // the TTL left for a renewal over a fresh one.
  static Clock::duration silence_limit(std::chrono::seconds shortest_ttl, bool elsewhere);

  // True when the stream is dead by that rule: a renewal is outstanding
  // since `oldest_outstanding` and the last message arrived at `last_heard`
  // (or the stream opened then).
  static bool silent_too_long(Deadline now, Deadline oldest_outstanding, Deadline last_heard, Clock::duration limit);

  // Renewals one stream may send in one tick: twice its steady rate
  // (`due_per_tick`, the sum over its leases of kTick / interval), so a
  // backlog drains while a burst is spread over several ticks.
  static std::size_t sends_per_tick(double due_per_tick);

  // The stream a new lease joins, given how many leases each carries: the
  // least loaded one below kLeasesPerStream, else a new one (the returned
  // index equals leases.size()), else, with kMaxStreams open, the least
  // loaded one.
  static std::size_t pick_stream(const std::vector<std::size_t>& leases);
};

}  // namespace etcd::detail
