// Key/value request options and responses, as plain value types that do
// not expose protobuf. Keys and values are byte strings (std::string).
//
// The options structs own no memory (each is trivially destructible), so
// every form of passing them is safe, a braced temporary inside a co_await
// expression included: `co_await client.get("/p/", {.prefix = true})`.
// (GCC 12 destroys such a temporary twice when it owns memory.) The one
// field that holds bytes, range_end, is a KeyView: it refers to bytes the
// caller keeps alive until the call it is passed to returns, and the call
// copies every option into its request before it returns, so nothing
// needs to outlive the call's expression.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace etcd {

struct ResponseHeader {
  uint64_t cluster_id = 0;
  uint64_t member_id = 0;
  int64_t revision = 0;  // the store revision when the request was applied
  uint64_t raft_term = 0;
};

struct KeyValue {
  std::string key{};
  std::string value{};
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;

  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

enum class SortOrder { kNone = 0, kAscend = 1, kDescend = 2 };
enum class SortTarget { kKey = 0, kVersion = 1, kCreate = 2, kMod = 3, kValue = 4 };

// Range end helpers.
// The smallest key greater than every key that starts with `prefix`
// ("\0" when the prefix is empty or all 0xff: i.e. "to the end").
std::string prefix_range_end(const std::string& prefix);
// Passed as range_end: every key >= the given key.
inline const std::string kFromKey = std::string(1, '\0');

// Bytes the caller owns, seen through a std::string_view (it is one), for
// an option that must not own memory. It refuses a temporary std::string,
// which would be gone before the call runs: name the string first,
//   const std::string end = etcd::prefix_range_end(p);
//   etcd::GetOptions o{.range_end = end};
// or, for a prefix, say so: {.prefix = true}.
class KeyView : public std::string_view {
 public:
  constexpr KeyView() noexcept = default;
  constexpr KeyView(std::string_view bytes) noexcept : std::string_view(bytes) {}
  constexpr KeyView(const char* text) noexcept : std::string_view(text) {}
  KeyView(const std::string& bytes) noexcept : std::string_view(bytes) {}
  KeyView(std::string&&) = delete;
};

struct GetOptions {
  // Exactly one of: a single key (defaults), a prefix, or [key, range_end).
  bool prefix = false;
  KeyView range_end{};
  int64_t limit = 0;
  int64_t revision = 0;  // 0 = latest
  SortOrder sort_order = SortOrder::kNone;
  SortTarget sort_target = SortTarget::kKey;
  bool serializable = false;  // local read from the member, may be stale
  bool keys_only = false;
  bool count_only = false;
  int64_t min_mod_revision = 0;
  int64_t max_mod_revision = 0;
  int64_t min_create_revision = 0;
  int64_t max_create_revision = 0;
};
static_assert(std::is_trivially_destructible_v<GetOptions>, "safe as a braced temporary inside co_await");

struct GetResponse {
  ResponseHeader header{};
  std::vector<KeyValue> kvs{};
  bool more = false;
  int64_t count = 0;

  // The first key's value, if any key matched.
  const KeyValue* first() const { return kvs.empty() ? nullptr : &kvs.front(); }
};

struct PutOptions {
  int64_t lease = 0;
  bool prev_kv = false;
  bool ignore_value = false;
  bool ignore_lease = false;
};
static_assert(std::is_trivially_destructible_v<PutOptions>, "safe as a braced temporary inside co_await");

struct PutResponse {
  ResponseHeader header{};
  std::optional<KeyValue> prev_kv{};
};

struct DeleteOptions {
  bool prefix = false;
  KeyView range_end{};
  bool prev_kv = false;
};
static_assert(std::is_trivially_destructible_v<DeleteOptions>, "safe as a braced temporary inside co_await");

struct DeleteResponse {
  ResponseHeader header{};
  int64_t deleted = 0;
  std::vector<KeyValue> prev_kvs{};
};

struct CompactResponse {
  ResponseHeader header{};
};

}  // namespace etcd
