// A contended handoff between the contenders of one exclusive recipe (a
// lock's holders, an election's leaders), shared by the lock and election
// metrics.
//
// Every contender asks to hold at once; whoever holds gives up at once and,
// once its give-up completed, asks again at the back of the queue, so all
// but one stay queued. A sample is the holder's give-up call → the next
// holder's completion. After `warmup` handoffs, samples are taken for
// `window` (at most `max_samples`); the wake-up counter is read at both ends
// of the measured stretch.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bench.h"
#include "etcd/call.h"

namespace bench {

struct HandoffSpec {
  std::string what;  // "lock handoff": for errors
  std::size_t contenders = 0;
  // Ask contender i to hold (acquire, or start + await leadership).
  std::function<etcd::Call<void>(std::size_t i)> take;
  // Contender i gives up (release, resign); false: its hold had been lost.
  std::function<etcd::Call<bool>(std::size_t i)> give;
  // Ends every contender: parked requests finish (with kClosed).
  std::function<void()> close_all;
  // The recipe's wake-up counter (watch events its waiters acted on).
  std::function<double()> wakeups;
  int warmup = 50;
  Clock::duration window{};
  std::size_t max_samples = 5000;
};

struct HandoffSamples {
  std::vector<double> ms;  // sorted
  double wakeups_per_handoff = 0;

  // Nearest rank.
  double percentile(double p) const;
  // "N samples, min .. p90 .. max .. ms, K over 40 ms, W wake-ups per handoff"
  std::string summary() const;
};

// Runs the handoffs; throws if a request or give-up fails, or if the samples
// are not complete by `give_up`.
HandoffSamples measure_handoffs(const HandoffSpec& spec, Clock::time_point give_up);

}  // namespace bench
