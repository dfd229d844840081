// A fenced register: one etcd key that takes a write only from a holder
// whose hold is intact (Hold::guarded: its key still exists with its
// token) and only with a token at least as high as every write it took
// (a value comparison in the same Txn). Each accepted write also leaves a
// log entry, so the checker sees every accepted write and its revision.
//
// A write refused as stale while the writer's hold was intact means a
// holder with a higher token wrote while this one still held, as etcd
// saw it: two holders' writes interleaved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/recipes/hold.h"
#include "workload.h"

namespace chaos {

class FencedRegister {
 public:
  explicit FencedRegister(std::string key) : key_(std::move(key)) {}

  const std::string& key() const { return key_; }
  // Writes token 0, so that every later value comparison has a value.
  void init(etcd::Client& admin) const;

  enum class Outcome { kOk, kStale, kLost, kUnknown };
  struct Write {
    Outcome outcome = Outcome::kUnknown;
    int64_t revision = 0;  // kOk: the revision it landed at
    std::string seen;      // kStale: the register's value (the other writer)
    std::string error;     // kLost, kUnknown: why
  };
  Write write(const etcd::recipes::Hold& hold, const std::string& writer, int64_t seq) const;

  struct Accepted {
    int64_t revision = 0;
    int64_t token = 0;
    std::string writer;
    int64_t seq = 0;
  };
  // Every accepted write, in revision order (from the log; reads from the
  // members directly).
  std::vector<Accepted> accepted(etcd::Client& admin) const;

  // The register's own guarantee over its log: tokens never decrease in
  // revision order (the writes of one token form one run).
  std::vector<Violation> check_log(const std::string& recipe, const std::vector<Accepted>& log) const;

  static const char* name(Outcome o);

 private:
  std::string key_;
};

}  // namespace chaos
