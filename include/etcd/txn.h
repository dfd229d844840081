// A small builder for etcd transactions:
//
//   auto txn = etcd::Txn()
//       .when(etcd::Compare::create_revision("job/1") == 0)
//       .then(etcd::Op::put("job/1", "queued"))
//       .otherwise(etcd::Op::get("job/1"));
//   auto r = client.txn(txn).wait();
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "etcd/kv.h"

namespace etcd {

enum class CompareResult { kEqual = 0, kGreater = 1, kLess = 2, kNotEqual = 3 };
enum class CompareTarget { kVersion = 0, kCreateRevision = 1, kModRevision = 2, kValue = 3, kLease = 4 };

struct Compare {
  std::string key{};
  std::string range_end{};  // compare every key in [key, range_end)
  CompareTarget target = CompareTarget::kVersion;
  CompareResult result = CompareResult::kEqual;
  int64_t number_operand = 0;   // version, revisions, lease
  std::string value_operand{};  // for kValue

  // The left-hand side of a comparison; finish it with ==, !=, <, >.
  template <class V>
  struct Operand {
    std::string key{};
    CompareTarget target{};
    std::string range_end{};
    Compare make(CompareResult r, V v) const {
      Compare c{};
      c.key = key;
      c.range_end = range_end;
      c.target = target;
      c.result = r;
      if constexpr (std::is_same_v<V, std::string>) {
        c.value_operand = std::move(v);
      } else {
        c.number_operand = v;
      }
      return c;
    }
    friend Compare operator==(const Operand& o, V v) { return o.make(CompareResult::kEqual, std::move(v)); }
    friend Compare operator!=(const Operand& o, V v) { return o.make(CompareResult::kNotEqual, std::move(v)); }
    friend Compare operator<(const Operand& o, V v) { return o.make(CompareResult::kLess, std::move(v)); }
    friend Compare operator>(const Operand& o, V v) { return o.make(CompareResult::kGreater, std::move(v)); }
    // Widen the comparison to every key under `key` as a prefix.
    Operand with_prefix() const {
      Operand o = *this;
      o.range_end = prefix_range_end(key);
      return o;
    }
  };

  static Operand<int64_t> version(std::string key) { return {std::move(key), CompareTarget::kVersion, {}}; }
  static Operand<int64_t> create_revision(std::string key) {
    return {std::move(key), CompareTarget::kCreateRevision, {}};
  }
  static Operand<int64_t> mod_revision(std::string key) { return {std::move(key), CompareTarget::kModRevision, {}}; }
  static Operand<std::string> value(std::string key) { return {std::move(key), CompareTarget::kValue, {}}; }
  static Operand<int64_t> lease(std::string key) { return {std::move(key), CompareTarget::kLease, {}}; }

  // Sugar for the most common guards.
  static Compare exists(std::string key) { return create_revision(std::move(key)) > 0; }
  static Compare absent(std::string key) { return create_revision(std::move(key)) == 0; }
};

class Txn;

// One operation inside a transaction branch.
class Op {
 public:
  // An op keeps what it refers to: its options' range_end is copied into
  // `range_end` (and options.range_end left empty), so an Op may outlive
  // the strings it was made from.
  struct Get {
    std::string key{};
    GetOptions options{};
    std::string range_end{};
  };
  struct Put {
    std::string key{};
    std::string value{};
    PutOptions options{};
  };
  struct Delete {
    std::string key{};
    DeleteOptions options{};
    std::string range_end{};
  };
  using Nested = std::shared_ptr<const Txn>;

  // Overloads, never `Options options = {}`: GCC 12 destroys a defaulted
  // class-type argument twice when the call sits inside a `co_await`
  // expression (e.g. `co_await client.txn(Txn().then(Op::del(k)))`).
  static Op get(std::string key) { return get(std::move(key), GetOptions()); }
  static Op get(std::string key, GetOptions options) {
    std::string range_end(options.range_end);
    options.range_end = {};
    return Op(Get{std::move(key), options, std::move(range_end)});
  }
  static Op put(std::string key, std::string value) { return put(std::move(key), std::move(value), PutOptions()); }
  static Op put(std::string key, std::string value, PutOptions options) {
    return Op(Put{std::move(key), std::move(value), options});
  }
  static Op del(std::string key) { return del(std::move(key), DeleteOptions()); }
  static Op del(std::string key, DeleteOptions options) {
    std::string range_end(options.range_end);
    options.range_end = {};
    return Op(Delete{std::move(key), options, std::move(range_end)});
  }
  static Op txn(Txn nested);

  const std::variant<Get, Put, Delete, Nested>& op() const { return op_; }

 private:
  template <class T>
  explicit Op(T op) : op_(std::move(op)) {}
  std::variant<Get, Put, Delete, Nested> op_;
};

// Several compares or ops at once: `.then(a, b, c)` or `.then({a, b, c})`.
// Inside a co_await expression prefer the first: GCC 12 rejects a braced
// list of class objects there ("array used as initializer").
class Txn {
 public:
  template <class... More>
  requires(std::is_convertible_v<More, Compare>&&...) Txn& when(Compare first, Compare second, More... more) {
    compares_.push_back(std::move(first));
    compares_.push_back(std::move(second));
    (compares_.push_back(Compare(std::move(more))), ...);
    return *this;
  }
  template <class... More>
  requires(std::is_convertible_v<More, Op>&&...) Txn& then(Op first, Op second, More... more) {
    success_.push_back(std::move(first));
    success_.push_back(std::move(second));
    (success_.push_back(Op(std::move(more))), ...);
    return *this;
  }
  template <class... More>
  requires(std::is_convertible_v<More, Op>&&...) Txn& otherwise(Op first, Op second, More... more) {
    failure_.push_back(std::move(first));
    failure_.push_back(std::move(second));
    (failure_.push_back(Op(std::move(more))), ...);
    return *this;
  }

  Txn& when(Compare c) {
    compares_.push_back(std::move(c));
    return *this;
  }
  Txn& when(std::initializer_list<Compare> cs) {
    compares_.insert(compares_.end(), cs.begin(), cs.end());
    return *this;
  }
  Txn& then(Op op) {
    success_.push_back(std::move(op));
    return *this;
  }
  Txn& then(std::initializer_list<Op> ops) {
    success_.insert(success_.end(), ops.begin(), ops.end());
    return *this;
  }
  Txn& otherwise(Op op) {
    failure_.push_back(std::move(op));
    return *this;
  }
  Txn& otherwise(std::initializer_list<Op> ops) {
    failure_.insert(failure_.end(), ops.begin(), ops.end());
    return *this;
  }

  const std::vector<Compare>& compares() const { return compares_; }
  const std::vector<Op>& success() const { return success_; }
  const std::vector<Op>& failure() const { return failure_; }

 private:
  std::vector<Compare> compares_{};
  std::vector<Op> success_{};
  std::vector<Op> failure_{};
};

inline Op Op::txn(Txn nested) { return Op(std::make_shared<const Txn>(std::move(nested))); }

struct TxnResponse;

// The result of one operation of the branch that ran, in order.
struct OpResponse {
  std::variant<GetResponse, PutResponse, DeleteResponse, std::shared_ptr<TxnResponse>> response{};

  const GetResponse& get() const { return std::get<GetResponse>(response); }
  const PutResponse& put() const { return std::get<PutResponse>(response); }
  const DeleteResponse& del() const { return std::get<DeleteResponse>(response); }
  const TxnResponse& txn() const { return *std::get<std::shared_ptr<TxnResponse>>(response); }
};

struct TxnResponse {
  ResponseHeader header{};
  bool succeeded = false;  // the compares held: the `then` branch ran
  std::vector<OpResponse> responses{};
};

}  // namespace etcd
