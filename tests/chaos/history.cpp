#include "history.h"

#include <algorithm>

namespace chaos {

std::vector<Event> History::around(int64_t index, const std::string& prefix, int radius) const {
  std::lock_guard lk(mu_);
  std::vector<const Event*> family;
  for (const auto& e : events_) {
    if (e.process.rfind(prefix, 0) == 0 || e.process == "nemesis") family.push_back(&e);
  }
  auto it = std::lower_bound(family.begin(), family.end(), index,
                             [](const Event* e, int64_t i) { return e->index < i; });
  const auto pos = it - family.begin();
  const auto from = std::max<std::ptrdiff_t>(0, pos - radius);
  const auto to = std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(family.size()), pos + radius + 1);
  std::vector<Event> out;
  for (auto i = from; i < to; ++i) out.push_back(*family[static_cast<size_t>(i)]);
  return out;
}

}  // namespace chaos
