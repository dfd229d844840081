// Codec<T>: how a typed recipe turns a T into the bytes of an etcd value and
// back. The typed queues, the work queue, the caches, the transient
// key/values and the counters all take one as a template parameter:
//
//   template <class T, Codec<T> C = DefaultCodec<T>> class TypedQueue;
//
//   etcd::recipes::TypedQueue<std::int64_t> numbers(client, "/q/numbers");       // decimal text
//   etcd::recipes::TypedQueue<Job, etcd::recipes::JsonCodec<Job>> jobs(...);      // codec_json.h
//   etcd::recipes::TypedQueue<orders::Order> orders(...);                         // a protobuf message
//
// A codec is any type with
//
//   encode(const T&)                           -> std::string, or Result<std::string> if it can fail
//   decode(std::string_view bytes, std::string_view key) -> Result<T>
//
// as static or ordinary member functions (a codec object may carry state: a
// schema, a version tag). `key` is there for the error: a value that is not
// a valid T is `decode_error(key, "what was wrong")`, DATA_LOSS
// [decode_failed], and the message names the key:
//
//   DATA_LOSS [decode_failed]: value of key '/q/numbers/000123' is not a decimal int64
//       (a '+' sign is not accepted): "+5"
//
// A recipe never calls a codec directly but through encode_value() and
// decode_value() below, which turn an exception thrown by a codec into an
// error (recipes never throw from background work) and make sure every
// decode error names its key. Recipes report such a value as an error that
// names the key and never drop the item for it (a work queue moves a poison
// item to its dead letters).
//
// Built-in codecs, and the DefaultCodec<T> of each type:
//
//   | T                                 | DefaultCodec<T> | stored as                                  |
//   | std::string                       | StringCodec     | the bytes as they are                      |
//   | std::vector<std::byte>            | BytesCodec      | the bytes as they are                      |
//   | signed/unsigned integers (8..64)  | IntegerCodec<T> | canonical decimal text: "42", "-7"         |
//   | protobuf messages                 | ProtobufCodec<T>| SerializeAsString(), ParseFromArray()      |
//   | nlohmann::json (codec_json.h)     | JsonCodec<json> | compact JSON text                          |
//   | std::string, checked as UTF-8     | Utf8Codec       | the bytes; decode rejects invalid UTF-8    |
//   | your type with to_json/from_json  | JsonCodec<T>    | compact JSON text (opt in, see below)      |
//
// Integers are decimal text because etcdctl and people can read and write
// it (`etcdctl put /counters/hits 41`).
// Parsing is strict: exactly the canonical form is accepted — digits, a '-'
// before a negative number, nothing else (no '+', no spaces or newline, no
// leading zeros, no "-0") — and the value must fit T. So a value decodes
// only from the bytes it encodes to, and a Txn that compares the stored
// bytes (Compare::value) agrees with a comparison of the numbers.
//
// Protobuf messages are recognised by what every google::protobuf::
// MessageLite has (SerializeAsString, ParseFromArray), so this header needs
// no protobuf include. JSON is in codec_json.h, so that nlohmann/json is
// needed only by those who use it.
//
// Your own type: specialise DefaultCodec (as you would std::hash), or pass a
// codec as the recipe's template argument:
//
//   enum class Color { kRed, kGreen };
//   template <>
//   struct etcd::recipes::DefaultCodec<Color> {
//     static std::string encode(Color c) { return c == Color::kRed ? "red" : "green"; }
//     static etcd::Result<Color> decode(std::string_view bytes, std::string_view key) {
//       if (bytes == "red") return Color::kRed;
//       if (bytes == "green") return Color::kGreen;
//       return etcd::recipes::decode_error(key, "is not a color (red or green)");
//     }
//   };
//   // or, for a type that has nlohmann to_json/from_json:
//   template <> struct etcd::recipes::DefaultCodec<Job> : etcd::recipes::JsonCodec<Job> {};
//
// A type with no codec is a compile-time error at the recipe's template
// argument: the constraint Codec<DefaultCodec<T>, T> is not satisfied
// ("the required expression 'codec.encode(value)' is invalid"); check it
// yourself with static_assert(etcd::recipes::HasDefaultCodec<T>).
#pragma once

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "etcd/status.h"

namespace etcd::recipes {

// --- the concept --------------------------------------------------------------

namespace detail {
template <class R>
concept EncodedBytes =
    std::same_as<std::remove_cvref_t<R>, std::string> || std::same_as<std::remove_cvref_t<R>, Result<std::string>>;
}  // namespace detail

// C encodes and decodes T (see the top of this file). Written
// `Codec<T> C` in a template parameter list. If a compiler error led you
// here with C = DefaultCodec<YourType>: YourType has no default codec;
// specialise DefaultCodec<YourType> or give the recipe a codec.
template <class C, class T>
concept Codec = std::move_constructible<C> &&
    requires(const C& codec, const T& value, std::string_view bytes, std::string_view key) {
  { codec.encode(value) } -> detail::EncodedBytes;
  { codec.decode(bytes, key) } -> std::same_as<Result<T>>;
};

// The codec a typed recipe uses for T unless given another. Disabled (no
// encode, no decode) for a type with none; specialise it for your own types.
template <class T>
struct DefaultCodec {};

template <class T>
concept HasDefaultCodec = Codec<DefaultCodec<T>, T>;

// --- errors -------------------------------------------------------------------

// The error of a value that is not a valid T: DATA_LOSS [decode_failed],
// "value of key 'KEY' " + what. `what` says what was wrong ("is not valid
// JSON: ..."). Non-printable bytes of the key are escaped as \xNN. Recipes
// treat exactly this error as a poison value (dead letters); any other
// status a codec returns is passed on as it is (a codec that consults a
// schema registry may fail with UNAVAILABLE, and the item stays).
Status decode_error(std::string_view key, std::string_view what);

namespace detail {
// "value of key 'KEY'", the start of every decode error.
std::string value_of_key(std::string_view key);
// Whether an error message names `key` (as it is, or as value_of_key() writes it).
bool names_key(std::string_view message, std::string_view key);
// `bytes` for an error message: quoted, non-printable bytes as \xNN, cut
// after 64 bytes (the length is then given) — enough to recognise a value,
// never a megabyte of it in a log.
std::string quote_excerpt(std::string_view bytes);

struct IntegerKind {
  bool is_signed;
  int bits;  // 8, 16, 32 or 64
};
// OK if `text` is the canonical decimal form of some integer (range not
// checked); otherwise the decode error that says why not.
Status check_canonical_decimal(std::string_view text, std::string_view key, IntegerKind kind);
Status integer_out_of_range(std::string_view text, std::string_view key, IntegerKind kind);
// Where the first sequence of `text` that is not valid UTF-8 starts
// (overlong forms, surrogates and code points above U+10FFFF are invalid),
// or npos if it is all valid.
std::size_t invalid_utf8_offset(std::string_view text) noexcept;
}  // namespace detail

// --- what recipes call --------------------------------------------------------

// The bytes to store for `value`. A codec that throws gives INVALID_ARGUMENT
// [bad_argument] (nothing is written); a codec's own error passes through.
template <class T, Codec<T> C>
Result<std::string> encode_value(const C& codec, const T& value) {
  try {
    return Result<std::string>(codec.encode(value));
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("cannot encode the value: ") + e.what());
  } catch (...) {
    return InvalidArgument("cannot encode the value: the codec threw a non-standard exception");
  }
}

// The T stored at `key`. A codec that throws gives decode_error(key, ...);
// an error that does not name the key is given the key in front, so every
// decode failure a recipe reports names its key.
template <class T, Codec<T> C>
Result<T> decode_value(const C& codec, std::string_view bytes, std::string_view key) {
  Result<T> decoded = [&]() -> Result<T> {
    try {
      return codec.decode(bytes, key);
    } catch (const std::exception& e) {
      return decode_error(key, std::string("could not be decoded: ") + e.what());
    } catch (...) {
      return decode_error(key, "could not be decoded: the codec threw a non-standard exception");
    }
  }();
  if (decoded.ok() || detail::names_key(decoded.status().message(), key)) return decoded;
  const Status& status = decoded.status();
  return Status(status.code(), detail::value_of_key(key) + ": " + status.message(), status.reason());
}

// --- bytes and text -----------------------------------------------------------

// std::string as it is, both ways: etcd's values are bytes, and a
// std::string holds any of them, so this never fails.
struct StringCodec {
  static std::string encode(const std::string& value) { return value; }
  static Result<std::string> decode(std::string_view bytes, std::string_view /*key*/) { return std::string(bytes); }
};

// std::vector<std::byte> as it is, both ways. Never fails.
struct BytesCodec {
  static std::string encode(const std::vector<std::byte>& value) {
    return std::string(reinterpret_cast<const char*>(value.data()), value.size());
  }
  static Result<std::vector<std::byte>> decode(std::string_view bytes, std::string_view /*key*/) {
    const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
    return std::vector<std::byte>(first, first + bytes.size());
  }
};

// std::string that must be UTF-8 text: stored as it is; a value that is
// not valid UTF-8 is a decode error naming the key and the offset of the
// first bad byte. For values you hand on as text (to JSON, to a terminal).
struct Utf8Codec {
  static std::string encode(const std::string& value) { return value; }
  static Result<std::string> decode(std::string_view bytes, std::string_view key) {
    const std::size_t bad = detail::invalid_utf8_offset(bytes);
    if (bad == std::string_view::npos) return std::string(bytes);
    return decode_error(key, "is not valid UTF-8 text: an invalid sequence at offset " + std::to_string(bad) +
                                 " (byte " + detail::quote_excerpt(bytes.substr(bad, 1)) + ")");
  }
};

template <>
struct DefaultCodec<std::string> : StringCodec {};
template <>
struct DefaultCodec<std::vector<std::byte>> : BytesCodec {};

// --- integers -------------------------------------------------------------------

// The integer types stored as decimal text: signed and unsigned integers of
// 8 to 64 bits. Not bool and not the character types (char, wchar_t,
// char8_t, char16_t, char32_t): whether 'A' is stored as "A" or "65" is a
// choice the library does not make for you.
template <class T>
concept DecimalInteger =
    std::integral<T> && !std::same_as<std::remove_cv_t<T>, bool> && !std::same_as<std::remove_cv_t<T>, char> &&
    !std::same_as<std::remove_cv_t<T>, wchar_t> && !std::same_as<std::remove_cv_t<T>, char8_t> &&
    !std::same_as<std::remove_cv_t<T>, char16_t> && !std::same_as<std::remove_cv_t<T>, char32_t> && sizeof(T) <= 8;

// Canonical decimal text, parsed strictly (see the top of this file).
template <DecimalInteger I>
struct IntegerCodec {
  static std::string encode(I value) {
    char text[24];  // 20 digits of a uint64, or a '-' and 19 digits
    const auto end = std::to_chars(text, text + sizeof(text), value).ptr;
    return std::string(text, end);
  }

  static Result<I> decode(std::string_view bytes, std::string_view key) {
    constexpr detail::IntegerKind kind{std::is_signed_v<I>, static_cast<int>(sizeof(I) * 8)};
    if (Status syntax = detail::check_canonical_decimal(bytes, key, kind); !syntax.ok()) return syntax;
    I value{};
    const char* last = bytes.data() + bytes.size();
    const auto [end, error] = std::from_chars(bytes.data(), last, value);
    if (error == std::errc() && end == last) return value;
    // Canonical digits that from_chars refuses can only be out of range (or
    // a '-' before an unsigned number, which is the same thing).
    return detail::integer_out_of_range(bytes, key, kind);
  }
};

template <DecimalInteger I>
struct DefaultCodec<I> : IntegerCodec<I> {};

// --- protobuf -------------------------------------------------------------------

// What every google::protobuf::MessageLite has, which is all this codec uses.
template <class T>
concept ProtobufMessage = std::default_initializable<T> && requires(const T& message, T& target, const void* data) {
  { message.SerializeAsString() } -> std::same_as<std::string>;
  { target.ParseFromArray(data, 0) } -> std::same_as<bool>;
};

// SerializeAsString() / ParseFromArray(): protobuf's binary wire format.
// Bytes that do not parse as the message (truncated, a wrong wire type,
// missing proto2 required fields) are a decode error naming the key and the
// message type. (Protobuf parsing is lenient by design: bytes of another
// message type often parse, as unknown fields; put a type or version in the
// key or the message if that matters.)
template <ProtobufMessage M>
struct ProtobufCodec {
  static std::string encode(const M& message) { return message.SerializeAsString(); }

  static Result<M> decode(std::string_view bytes, std::string_view key) {
    M message;
    if (bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
        message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return message;
    }
    std::string what = "is not a valid serialized protobuf message";
    if constexpr (requires { std::string(message.GetTypeName()); }) {
      what += " of type " + std::string(message.GetTypeName());
    }
    return decode_error(key, what + " (" + std::to_string(bytes.size()) + " bytes)");
  }
};

template <ProtobufMessage M>
struct DefaultCodec<M> : ProtobufCodec<M> {};

}  // namespace etcd::recipes
