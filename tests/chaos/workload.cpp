#include "workload.h"

#include <chrono>
#include <utility>

namespace chaos {

void clear_prefix(Context& ctx, const std::string& prefix) {
  auto r = ctx.admin->del(prefix, etcd::DeleteOptions{.prefix = true}).timeout(std::chrono::seconds(10)).wait();
  if (!r.ok()) throw etcd::Error(std::move(r).status());
}

}  // namespace chaos
