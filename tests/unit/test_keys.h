// Hand-made keys, as etcd returns them, for the unit tests that recognize
// recipes in keys (inspect_test.cpp) and render what they recognized
// (cli_inspect_test.cpp, cli_metrics_text_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "etcd/kv.h"

namespace test_keys {

// `key` holding `value`, created at revision `create`, last written at
// `mod` (0: at `create`), `version` writes so far, on `lease` (0: none).
inline etcd::KeyValue kv(std::string key, std::string value, int64_t create, int64_t lease = 0, int64_t mod = 0,
                         int64_t version = 1) {
  return etcd::KeyValue{.key = std::move(key),
                        .value = std::move(value),
                        .create_revision = create,
                        .mod_revision = mod ? mod : create,
                        .version = version,
                        .lease = lease};
}

}  // namespace test_keys
