// JsonCodec<T>: values stored as JSON text, with nlohmann/json.
//
// A header of its own so that nlohmann/json is needed only where it is used:
// etcd/recipes/codec.h does not include it. With CMake, link
// etcd_recipes::json (it exists when nlohmann_json was found;
// `find_package(etcd_recipes REQUIRED COMPONENTS json)` makes it required);
// with pkg-config, use etcd_recipes_json.
//
//   struct Job { std::string name; int attempts = 0; };
//   NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Job, name, attempts)   // or your own to_json/from_json
//
//   etcd::recipes::TypedQueue<Job, etcd::recipes::JsonCodec<Job>> jobs(client, "/jobs");
//   // or make JSON the default for Job, once, next to the type:
//   template <> struct etcd::recipes::DefaultCodec<Job> : etcd::recipes::JsonCodec<Job> {};
//
// T is any type nlohmann converts both ways (to_json and from_json, found by
// ADL or through adl_serializer), including the standard containers, and
// nlohmann::json itself, whose default codec this is.
//
// JSON is opt-in per type, not picked for every convertible T, because
// nlohmann converts many types (integers, std::string, containers) that have
// a default codec of their own, and whether a value is stored as JSON must
// not depend on which headers a translation unit happens to include.
//
// Encoding is compact (json::dump() without indentation); a string that is
// not valid UTF-8 cannot be JSON and is an INVALID_ARGUMENT [bad_argument]
// error (nothing is written). Decoding reports, naming the key, either
//   value of key 'jobs/000123' is not valid JSON: parse error at line 1, column 9: ...
//   value of key 'jobs/000123' is JSON of the wrong shape: type must be number, but is string
// as DATA_LOSS [decode_failed].
#pragma once

#include <concepts>
#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "etcd/recipes/codec.h"
#include "etcd/status.h"

namespace etcd::recipes {

// The types JsonCodec<T> accepts: nlohmann converts them both ways.
template <class T>
concept JsonConvertible = std::constructible_from<nlohmann::json, const T&> && std::default_initializable<T> &&
    requires(const nlohmann::json& json) {
  { json.template get<T>() } -> std::same_as<T>;
};

namespace detail {
// nlohmann's what() without its "[json.exception.parse_error.101] " tag:
// the tag is for programs, the rest is for the person reading the error.
inline std::string json_error_text(const std::exception& e) {
  std::string_view text = e.what();
  if (text.starts_with("[json.exception.")) {
    if (const auto end = text.find("] "); end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  return std::string(text);
}
}  // namespace detail

template <JsonConvertible T>
struct JsonCodec {
  static Result<std::string> encode(const T& value) {
    try {
      // strict: a string that is not UTF-8 is refused, never altered.
      constexpr int kCompact = -1;
      if constexpr (std::same_as<T, nlohmann::json>) {
        return value.dump(kCompact, ' ', false, nlohmann::json::error_handler_t::strict);
      } else {
        return nlohmann::json(value).dump(kCompact, ' ', false, nlohmann::json::error_handler_t::strict);
      }
    } catch (const std::exception& e) {
      return InvalidArgument("cannot encode the value as JSON: " + detail::json_error_text(e));
    }
  }

  static Result<T> decode(std::string_view bytes, std::string_view key) {
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(bytes);
    } catch (const std::exception& e) {
      return decode_error(key, "is not valid JSON: " + detail::json_error_text(e));
    }
    if constexpr (std::same_as<T, nlohmann::json>) {
      return json;
    } else {
      try {
        return json.template get<T>();
      } catch (const std::exception& e) {
        // nlohmann's type_error / out_of_range, or whatever a from_json threw.
        return decode_error(key, "is JSON of the wrong shape: " + detail::json_error_text(e));
      }
    }
  }
};

template <>
struct DefaultCodec<nlohmann::json> : JsonCodec<nlohmann::json> {};

}  // namespace etcd::recipes
