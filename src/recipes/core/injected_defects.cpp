#include "injected_defects.h"

namespace etcd::recipes::detail {

InjectedDefects& injected_defects() {
  static InjectedDefects defects;
  return defects;
}

}  // namespace etcd::recipes::detail
