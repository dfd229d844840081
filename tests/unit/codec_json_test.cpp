// JsonCodec<T> (etcd/recipes/codec_json.h): user types with to_json /
// from_json and nlohmann::json itself round-trip as compact JSON; invalid
// JSON and JSON of the wrong shape are decode errors naming the key; a
// string that is not UTF-8 cannot be encoded.
#include "etcd/recipes/codec_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace jobs {
// A user's type, converted the usual nlohmann way (found by ADL).
struct Job {
  std::string name;
  int attempts = 0;
  friend bool operator==(const Job&, const Job&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Job, name, attempts)

// The same, made JSON by default (below) rather than named at each use.
struct Resize {
  int width = 0;
  int height = 0;
  friend bool operator==(const Resize&, const Resize&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Resize, width, height)

struct NotJson {
  int x = 0;
};
}  // namespace jobs

template <>
struct etcd::recipes::DefaultCodec<jobs::Resize> : etcd::recipes::JsonCodec<jobs::Resize> {};

namespace etcd::recipes {
namespace {

using jobs::Job;

static_assert(JsonConvertible<Job> && Codec<JsonCodec<Job>, Job>);
static_assert(JsonConvertible<std::vector<int>> && JsonConvertible<std::map<std::string, double>>);
static_assert(!JsonConvertible<jobs::NotJson>);
// JSON is opt-in per type: including codec_json.h changes no other default.
static_assert(!HasDefaultCodec<Job>);
static_assert(HasDefaultCodec<jobs::Resize>);
static_assert(HasDefaultCodec<nlohmann::json>);
static_assert(std::is_base_of_v<IntegerCodec<std::int64_t>, DefaultCodec<std::int64_t>>);
static_assert(std::is_base_of_v<StringCodec, DefaultCodec<std::string>>);

constexpr std::string_view kJsonKey = "jobs/000123";

std::string decode_failure_message(const Result<Job>& r) {
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().to_string();
  EXPECT_TRUE(r.status().is(Errc::kDecodeFailed)) << r.status().to_string();
  return r.status().message();
}

TEST(JsonCodec, AUserTypeRoundTripsAsCompactJson) {
  const Job job{"resize \"big\" 🙂", 2};
  const std::string bytes = encode_value(JsonCodec<Job>{}, job).value();
  EXPECT_EQ(bytes, R"({"attempts":2,"name":"resize \"big\" 🙂"})");
  EXPECT_EQ(decode_value<Job>(JsonCodec<Job>{}, bytes, kJsonKey).value(), job);
  // Whitespace and key order are JSON's business, not the codec's.
  EXPECT_EQ(decode_value<Job>(JsonCodec<Job>{}, "{ \"name\" : \"a\",\n \"attempts\" : 1 }\n", kJsonKey).value(),
            (Job{"a", 1}));
}

TEST(JsonCodec, ATypeMadeJsonByDefault) {
  const jobs::Resize r{640, 480};
  const std::string bytes = encode_value(DefaultCodec<jobs::Resize>{}, r).value();
  EXPECT_EQ(bytes, R"({"height":480,"width":640})");
  EXPECT_EQ(decode_value<jobs::Resize>(DefaultCodec<jobs::Resize>{}, bytes, kJsonKey).value(), r);
}

TEST(JsonCodec, JsonValuesAndStandardContainers) {
  const nlohmann::json doc = {{"limits", {1, 2, 3}}, {"on", true}, {"name", nullptr}};
  const std::string bytes = encode_value(DefaultCodec<nlohmann::json>{}, doc).value();
  EXPECT_EQ(bytes, R"({"limits":[1,2,3],"name":null,"on":true})");
  EXPECT_EQ(decode_value<nlohmann::json>(DefaultCodec<nlohmann::json>{}, bytes, kJsonKey).value(), doc);
  EXPECT_EQ(decode_value<nlohmann::json>(DefaultCodec<nlohmann::json>{}, "42", kJsonKey).value(), 42);

  const std::vector<int> list{3, 1, 2};
  EXPECT_EQ(encode_value(JsonCodec<std::vector<int>>{}, list).value(), "[3,1,2]");
  EXPECT_EQ(decode_value<std::vector<int>>(JsonCodec<std::vector<int>>{}, "[3,1,2]", kJsonKey).value(), list);
}

TEST(JsonCodec, InvalidJsonNamesTheKeyAndWhere) {
  const std::string message = decode_failure_message(decode_value<Job>(JsonCodec<Job>{}, R"({"name": )", kJsonKey));
  EXPECT_TRUE(message.starts_with("value of key 'jobs/000123' is not valid JSON: parse error at line 1, column 10"))
      << message;
  EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;  // the tag is left out
  decode_failure_message(decode_value<Job>(JsonCodec<Job>{}, "", kJsonKey));
  decode_failure_message(decode_value<Job>(JsonCodec<Job>{}, "{} trailing", kJsonKey));
  decode_failure_message(decode_value<Job>(JsonCodec<Job>{}, "\xff", kJsonKey));
  Result<nlohmann::json> raw = decode_value<nlohmann::json>(JsonCodec<nlohmann::json>{}, "{'single': 1}", "cfg/x");
  EXPECT_TRUE(raw.status().is(Errc::kDecodeFailed));
  EXPECT_TRUE(raw.status().message().starts_with("value of key 'cfg/x' is not valid JSON: ")) << raw.status().message();
}

TEST(JsonCodec, JsonOfTheWrongShapeNamesTheKeyAndTheMismatch) {
  EXPECT_EQ(decode_failure_message(decode_value<Job>(JsonCodec<Job>{}, R"({"name": 5, "attempts": 1})", kJsonKey)),
            "value of key 'jobs/000123' is JSON of the wrong shape: type must be string, but is number");
  EXPECT_EQ(decode_failure_message(decode_value<Job>(JsonCodec<Job>{}, R"({"name": "a"})", kJsonKey)),
            "value of key 'jobs/000123' is JSON of the wrong shape: key 'attempts' not found");
  EXPECT_NE(decode_failure_message(decode_value<Job>(JsonCodec<Job>{}, "[1, 2]", kJsonKey)).find("wrong shape"),
            std::string::npos);
}

TEST(JsonCodec, AStringThatIsNotUtf8CannotBeEncoded) {
  Result<std::string> bytes = encode_value(JsonCodec<Job>{}, Job{"bad \xff byte", 1});
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(bytes.status().is(Errc::kBadArgument));
  EXPECT_TRUE(bytes.status().message().starts_with("cannot encode the value as JSON: invalid UTF-8 byte"))
      << bytes.status().message();
}

}  // namespace
}  // namespace etcd::recipes
