// Codec<T> (etcd/recipes/codec.h): the built-in codecs round-trip, every
// decode failure is DATA_LOSS [decode_failed] and names the key, a user's
// codec plugs in, and a type without one is refused at compile time. The
// JSON codec has its own file (codec_json_test.cpp).
#include "etcd/recipes/codec.h"

#include <google/protobuf/message_lite.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "etcd/mvccpb/kv.pb.h"

namespace etcd::recipes {
namespace {

using namespace std::string_literals;

// --- what has a codec, and what does not (checked at compile time) ---------------

struct NoCodec {
  int x = 0;
};

// The shape a typed recipe will have: the codec is a constrained template
// parameter that defaults to DefaultCodec<T>.
template <class T, Codec<T> C = DefaultCodec<T>>
struct TypedRecipeLike {
  C codec;
};
template <class T>
concept TypedRecipeAccepts = requires {
  typename TypedRecipeLike<T>;
};

static_assert(HasDefaultCodec<std::string>);
static_assert(HasDefaultCodec<std::vector<std::byte>>);
static_assert(HasDefaultCodec<std::int8_t> && HasDefaultCodec<std::uint8_t>);
static_assert(HasDefaultCodec<std::int16_t> && HasDefaultCodec<std::uint16_t>);
static_assert(HasDefaultCodec<std::int32_t> && HasDefaultCodec<std::uint32_t>);
static_assert(HasDefaultCodec<std::int64_t> && HasDefaultCodec<std::uint64_t>);
static_assert(HasDefaultCodec<long long> && HasDefaultCodec<unsigned long>);
static_assert(std::is_base_of_v<StringCodec, DefaultCodec<std::string>>);
static_assert(std::is_base_of_v<IntegerCodec<int>, DefaultCodec<int>>);
static_assert(Codec<Utf8Codec, std::string>);

// Protobuf messages are found by shape; the real base class is what that
// shape stands for.
static_assert(std::is_base_of_v<google::protobuf::MessageLite, mvccpb::KeyValue>);
static_assert(ProtobufMessage<mvccpb::KeyValue>);
static_assert(std::is_base_of_v<ProtobufCodec<mvccpb::KeyValue>, DefaultCodec<mvccpb::KeyValue>>);

// No codec: the concept says no, so a recipe's template argument is refused
// with "constraints not satisfied" rather than an error deep inside it.
static_assert(!HasDefaultCodec<NoCodec>);
static_assert(!Codec<DefaultCodec<NoCodec>, NoCodec>);
static_assert(!TypedRecipeAccepts<NoCodec>);
static_assert(TypedRecipeAccepts<std::int64_t>);
// Deliberately no default: how to store these is the user's choice.
static_assert(!HasDefaultCodec<bool> && !HasDefaultCodec<char> && !HasDefaultCodec<char8_t>);
static_assert(!HasDefaultCodec<double>);
// A codec is for one T.
static_assert(!Codec<StringCodec, int>);
static_assert(!Codec<IntegerCodec<int>, std::string>);

constexpr std::string_view kKey = "counters/hits";

template <class T, class C = DefaultCodec<T>>
Result<T> round_trip(const T& value) {
  Result<std::string> bytes = encode_value(C{}, value);
  if (!bytes.ok()) return bytes.status();
  return decode_value<T>(C{}, *bytes, kKey);
}

// The decode error of `bytes` as a T, checked for what every decode error
// has; the message is returned for the specific checks.
template <class T, class C = DefaultCodec<T>>
std::string decode_failure(std::string_view bytes, std::string_view key = kKey) {
  Result<T> r = decode_value<T>(C{}, bytes, key);
  EXPECT_FALSE(r.ok()) << "decoded " << ::testing::PrintToString(bytes);
  if (r.ok()) return {};
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().to_string();
  EXPECT_TRUE(r.status().is(Errc::kDecodeFailed)) << r.status().to_string();
  EXPECT_TRUE(r.status().message().starts_with(detail::value_of_key(key))) << r.status().message();
  return r.status().message();
}

// --- bytes and text ------------------------------------------------------------------

TEST(Codec, StringIsStoredAsItIsWhateverItHolds) {
  const std::string binary = "a\0b\xff\n"s;
  EXPECT_EQ(encode_value(StringCodec{}, binary).value(), binary);
  EXPECT_EQ(round_trip(binary).value(), binary);
  EXPECT_EQ(round_trip(std::string()).value(), "");
  EXPECT_EQ(round_trip(std::string("grüße, 世界")).value(), "grüße, 世界");
}

TEST(Codec, BytesAreStoredAsTheyAre) {
  const std::vector<std::byte> bytes{std::byte{0}, std::byte{0xff}, std::byte{'x'}};
  EXPECT_EQ(encode_value(BytesCodec{}, bytes).value(), "\0\xffx"s);
  EXPECT_EQ(round_trip(bytes).value(), bytes);
  EXPECT_TRUE(round_trip(std::vector<std::byte>()).value().empty());
}

TEST(Codec, Utf8TextRoundTripsAndInvalidUtf8NamesKeyAndOffset) {
  const std::string text = "grüße, 世界, 🙂";
  EXPECT_EQ((round_trip<std::string, Utf8Codec>(text).value()), text);
  EXPECT_EQ((decode_failure<std::string, Utf8Codec>("ab\xff")),
            "value of key 'counters/hits' is not valid UTF-8 text: an invalid sequence at offset 2 (byte \"\\xff\")");
  // Truncated, overlong, a surrogate, above U+10FFFF, a lone continuation byte.
  for (const std::string& bad : {"x\xe2\x82"s, "x\xc0\xaf"s, "x\xed\xa0\x80"s, "x\xf4\x90\x80\x80"s, "x\x80"s}) {
    EXPECT_NE((decode_failure<std::string, Utf8Codec>(bad)).find("at offset 1 "), std::string::npos)
        << ::testing::PrintToString(bad);
  }
}

// --- integers ----------------------------------------------------------------------

template <class I>
class IntegerCodecTest : public ::testing::Test {};
using IntegerTypes = ::testing::Types<std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                                      std::uint32_t, std::int64_t, std::uint64_t>;
TYPED_TEST_SUITE(IntegerCodecTest, IntegerTypes);

TYPED_TEST(IntegerCodecTest, EveryValueRoundTripsThroughItsCanonicalText) {
  using I = TypeParam;
  const I samples[] = {std::numeric_limits<I>::min(),
                       std::numeric_limits<I>::max(),
                       I{0},
                       I{1},
                       I{42},
                       static_cast<I>(std::numeric_limits<I>::max() - 1)};
  for (const I value : samples) {
    const std::string text = encode_value(IntegerCodec<I>{}, value).value();
    EXPECT_EQ(text, std::to_string(value));  // decimal, no padding, '-' only when negative
    EXPECT_EQ(round_trip(value).value(), value) << text;
  }
  if constexpr (std::is_signed_v<I>) {
    EXPECT_EQ(encode_value(IntegerCodec<I>{}, I{-7}).value(), "-7");
    EXPECT_EQ(round_trip(I{-1}).value(), I{-1});
  }
}

TYPED_TEST(IntegerCodecTest, OneAboveTheMaximumIsOutOfRangeNamingTheType) {
  using I = TypeParam;
  const std::string above = std::to_string(static_cast<unsigned long long>(std::numeric_limits<I>::max()) + 1ULL);
  const std::string bits = std::to_string(sizeof(I) * 8);
  if constexpr (sizeof(I) < 8 || std::is_signed_v<I>) {
    const std::string message = decode_failure<I>(above);
    EXPECT_NE(message.find(std::string(std::is_signed_v<I> ? "int" : "uint") + bits + " (out of range "),
              std::string::npos)
        << message;
  }
  // uint64's maximum + 1 wraps in the line above; spelled out instead.
  EXPECT_NE(decode_failure<I>("18446744073709551616").find("out of range"), std::string::npos);
}

TEST(Codec, IntegerMessagesSayWhatIsWrong) {
  EXPECT_EQ(decode_failure<std::int64_t>("+5"),
            "value of key 'counters/hits' is not a decimal int64 (a '+' sign is not accepted): \"+5\"");
  EXPECT_EQ(decode_failure<std::int32_t>("3000000000"),
            "value of key 'counters/hits' is not a decimal int32 (out of range -2147483648..2147483647): "
            "\"3000000000\"");
  EXPECT_EQ(decode_failure<std::uint32_t>("-1"),
            "value of key 'counters/hits' is not a decimal uint32 (out of range 0..4294967295): \"-1\"");
  EXPECT_EQ(decode_failure<std::int8_t>("-129"),
            "value of key 'counters/hits' is not a decimal int8 (out of range -128..127): \"-129\"");
  EXPECT_EQ(decode_failure<int>(""), "value of key 'counters/hits' is not a decimal int32: it is empty");
  EXPECT_EQ(decode_failure<int>("41\n"),
            "value of key 'counters/hits' is not a decimal int32 (whitespace is not accepted): \"41\\x0a\"");
  EXPECT_EQ(decode_failure<int>("12a4"),
            "value of key 'counters/hits' is not a decimal int32 (unexpected \"a\" at offset 2): \"12a4\"");
  EXPECT_EQ(decode_failure<int>("007"),
            "value of key 'counters/hits' is not a decimal int32 (leading zeros are not accepted): \"007\"");
  EXPECT_EQ(decode_failure<int>("-0"),
            "value of key 'counters/hits' is not a decimal int32 (zero is \"0\", not \"-0\"): \"-0\"");
}

TEST(Codec, IntegersAcceptOnlyTheCanonicalForm) {
  // Each of these reads as a number somewhere (strtol, JSON, a person), and
  // none is what encode() writes, so none is accepted.
  for (const char* text :
       {" 5", "5 ", "\t5", "-", "--5", "-+5", "5-", "0x10", "1e3", "1.0", "1,000", "1_000", "٣", "00", "-007", "+0"}) {
    decode_failure<std::int64_t>(text);
  }
  for (const char* text : {"-5", "-0", "+5"}) decode_failure<std::uint64_t>(text);
  EXPECT_EQ(round_trip<std::int64_t>(0).value(), 0);
  EXPECT_EQ(decode_value<std::int64_t>(IntegerCodec<std::int64_t>{}, "-9223372036854775808", kKey).value(),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(decode_value<std::uint64_t>(IntegerCodec<std::uint64_t>{}, "18446744073709551615", kKey).value(),
            std::numeric_limits<std::uint64_t>::max());
}

// --- protobuf ------------------------------------------------------------------------

TEST(Codec, ProtobufMessagesRoundTripInTheirWireFormat) {
  mvccpb::KeyValue kv;
  kv.set_key("jobs/1");
  kv.set_value("\0payload"s);
  kv.set_create_revision(12);
  kv.set_lease(-3);
  const std::string bytes = encode_value(ProtobufCodec<mvccpb::KeyValue>{}, kv).value();
  EXPECT_EQ(bytes, kv.SerializeAsString());
  const mvccpb::KeyValue back = round_trip(kv).value();
  EXPECT_EQ(back.key(), "jobs/1");
  EXPECT_EQ(back.value(), "\0payload"s);
  EXPECT_EQ(back.create_revision(), 12);
  EXPECT_EQ(back.lease(), -3);
  // An empty value is the message with every field at its default.
  EXPECT_EQ(round_trip(mvccpb::KeyValue()).value().create_revision(), 0);
}

TEST(Codec, BytesThatAreNotTheMessageNameKeyAndType) {
  // A length-delimited field 1 that claims 5 bytes and has 2.
  EXPECT_EQ(decode_failure<mvccpb::KeyValue>("\x0a\x05"
                                             "ab",
                                             "jobs/7"),
            "value of key 'jobs/7' is not a valid serialized protobuf message of type mvccpb.KeyValue (4 bytes)");
  // A field tag that is an endless varint.
  decode_failure<mvccpb::KeyValue>(std::string(11, '\xff'));
  // The key's own non-printable bytes are escaped in the message.
  EXPECT_TRUE(decode_failure<mvccpb::KeyValue>("\x0a\x05", "q/\x01\xfe").starts_with("value of key 'q/\\x01\\xfe' "));
}

// --- errors ---------------------------------------------------------------------------

TEST(Codec, DecodeErrorNamesTheKeyAndQuotesLittleOfTheValue) {
  Status s = decode_error("jobs/000123", "is not valid JSON: something");
  EXPECT_EQ(s.to_string(), "DATA_LOSS [decode_failed]: value of key 'jobs/000123' is not valid JSON: something");
  EXPECT_EQ(detail::value_of_key("it's\\"), "value of key 'it\\'s\\\\'");
  EXPECT_EQ(detail::quote_excerpt("a\"b\x01"), "\"a\\\"b\\x01\"");
  const std::string big(1000, 'z');
  EXPECT_EQ(detail::quote_excerpt(big), "\"" + std::string(64, 'z') + "\"... (1000 bytes)");
}

// --- a user's codecs --------------------------------------------------------------

struct Point {
  int x = 0;
  int y = 0;
  friend bool operator==(const Point&, const Point&) = default;
};

}  // namespace

// How a user gives their own type a default codec: specialise DefaultCodec.
template <>
struct DefaultCodec<Point> {
  static std::string encode(const Point& p) { return std::to_string(p.x) + "," + std::to_string(p.y); }
  static Result<Point> decode(std::string_view bytes, std::string_view key) {
    const auto comma = bytes.find(',');
    if (comma == std::string_view::npos) return decode_error(key, "is not a point \"x,y\": no comma");
    Result<int> x = IntegerCodec<int>::decode(bytes.substr(0, comma), key);
    if (!x.ok()) return x.status();
    Result<int> y = IntegerCodec<int>::decode(bytes.substr(comma + 1), key);
    if (!y.ok()) return y.status();
    return Point{*x, *y};
  }
};

namespace {

static_assert(HasDefaultCodec<Point>);
static_assert(TypedRecipeAccepts<Point>);

TEST(Codec, AUserTypeWithItsOwnDefaultCodec) {
  EXPECT_EQ(encode_value(DefaultCodec<Point>{}, Point{3, -4}).value(), "3,-4");
  EXPECT_EQ(round_trip(Point{3, -4}).value(), (Point{3, -4}));
  EXPECT_EQ(decode_failure<Point>("3;4", "points/a"), "value of key 'points/a' is not a point \"x,y\": no comma");
  EXPECT_NE(decode_failure<Point>("3,+4", "points/a").find("(a '+' sign is not accepted)"), std::string::npos);
}

// A codec with state (here a version tag), used through an object.
class TaggedCodec {
 public:
  explicit TaggedCodec(std::string tag) : tag_(std::move(tag)) {}
  std::string encode(const std::string& value) const { return tag_ + value; }
  Result<std::string> decode(std::string_view bytes, std::string_view key) const {
    if (!bytes.starts_with(tag_)) return decode_error(key, "does not start with " + detail::quote_excerpt(tag_));
    return std::string(bytes.substr(tag_.size()));
  }

 private:
  std::string tag_;
};
static_assert(Codec<TaggedCodec, std::string>);
static_assert(!HasDefaultCodec<TaggedCodec>);

TEST(Codec, ACodecWithState) {
  const TaggedCodec v2("v2:");
  EXPECT_EQ(encode_value(v2, "hello"s).value(), "v2:hello");
  EXPECT_EQ(decode_value<std::string>(v2, "v2:hello", kKey).value(), "hello");
  Result<std::string> old = decode_value<std::string>(v2, "v1:hello", "cfg/greeting");
  EXPECT_EQ(old.status().message(), "value of key 'cfg/greeting' does not start with \"v2:\"");
}

// Codecs that break the rules, to show what encode_value/decode_value make
// of them: recipes never see an exception, and always see the key.
struct ThrowingCodec {
  static std::string encode(const std::string&) { throw std::length_error("too long for this codec"); }
  static Result<std::string> decode(std::string_view, std::string_view) { throw std::runtime_error("boom"); }
};
struct TerseCodec {  // errors that forget the key
  static Result<std::string> encode(const std::string&) { return InvalidArgument("refused"); }
  static Result<std::string> decode(std::string_view bytes, std::string_view) {
    if (bytes == "later") return Status(StatusCode::kUnavailable, "schema registry unreachable");
    return Status(StatusCode::kDataLoss, "bad magic number", Errc::kDecodeFailed);
  }
};

TEST(Codec, ACodecThatThrowsBecomesAnError) {
  Result<std::string> encoded = encode_value(ThrowingCodec{}, "x"s);
  EXPECT_EQ(encoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(encoded.status().is(Errc::kBadArgument));
  EXPECT_EQ(encoded.status().message(), "cannot encode the value: too long for this codec");
  EXPECT_EQ((decode_failure<std::string, ThrowingCodec>("x", "jobs/9")),
            "value of key 'jobs/9' could not be decoded: boom");
}

TEST(Codec, EveryDecodeErrorNamesTheKeyAndKeepsItsCode) {
  Result<std::string> encoded = encode_value(TerseCodec{}, "x"s);
  EXPECT_EQ(encoded.status().message(), "refused");  // a codec's own encode error passes through
  EXPECT_EQ((decode_failure<std::string, TerseCodec>("x", "jobs/9")), "value of key 'jobs/9': bad magic number");
  // Not a poison value: the codec said something else, and that stays.
  Result<std::string> later = decode_value<std::string>(TerseCodec{}, "later", "jobs/9");
  EXPECT_EQ(later.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(later.status().is(Errc::kDecodeFailed));
  EXPECT_EQ(later.status().message(), "value of key 'jobs/9': schema registry unreachable");
}

}  // namespace
}  // namespace etcd::recipes
