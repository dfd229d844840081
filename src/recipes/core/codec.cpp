// The non-template half of etcd/recipes/codec.h: error messages and the
// strict checks of the built-in codecs.
#include "etcd/recipes/codec.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace etcd::recipes {

namespace {

constexpr std::size_t kExcerptBytes = 64;

// Printable ASCII stays; `quote` and '\\' get a backslash; anything else
// (control bytes, bytes of multi-byte UTF-8, binary) becomes \xNN, so a
// message is one readable line whatever the value holds.
void append_escaped(std::string& out, std::string_view bytes, char quote) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char ch : bytes) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (byte >= 0x20 && byte < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
}

std::string integer_type_name(detail::IntegerKind kind) {
  return (kind.is_signed ? "int" : "uint") + std::to_string(kind.bits);
}

template <class I>
std::string range_of() {
  return std::to_string(std::numeric_limits<I>::min()) + ".." + std::to_string(std::numeric_limits<I>::max());
}

std::string integer_range(detail::IntegerKind kind) {
  switch (kind.bits) {
    case 8:
      return kind.is_signed ? range_of<std::int8_t>() : range_of<std::uint8_t>();
    case 16:
      return kind.is_signed ? range_of<std::int16_t>() : range_of<std::uint16_t>();
    case 32:
      return kind.is_signed ? range_of<std::int32_t>() : range_of<std::uint32_t>();
    default:
      return kind.is_signed ? range_of<std::int64_t>() : range_of<std::uint64_t>();
  }
}

Status not_a_decimal(std::string_view text, std::string_view key, detail::IntegerKind kind, std::string_view why) {
  return decode_error(key, "is not a decimal " + integer_type_name(kind) + " (" + std::string(why) +
                               "): " + detail::quote_excerpt(text));
}

bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'; }
bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

}  // namespace

Status decode_error(std::string_view key, std::string_view what) {
  return Status(StatusCode::kDataLoss, detail::value_of_key(key) + " " + std::string(what), Errc::kDecodeFailed);
}

namespace detail {

std::string value_of_key(std::string_view key) {
  std::string out = "value of key '";
  append_escaped(out, key, '\'');
  out += '\'';
  return out;
}

bool names_key(std::string_view message, std::string_view key) {
  return message.find(key) != std::string_view::npos || message.find(value_of_key(key)) != std::string_view::npos;
}

std::string quote_excerpt(std::string_view bytes) {
  std::string out = "\"";
  append_escaped(out, bytes.substr(0, kExcerptBytes), '"');
  if (bytes.size() > kExcerptBytes) {
    out += "\"... (" + std::to_string(bytes.size()) + " bytes)";
  } else {
    out += '"';
  }
  return out;
}

Status check_canonical_decimal(std::string_view text, std::string_view key, IntegerKind kind) {
  if (text.empty()) return decode_error(key, "is not a decimal " + integer_type_name(kind) + ": it is empty");
  // The likeliest mistakes first, so the message names them: a trailing
  // newline from `echo`, a '+' from a formatter.
  for (const char ch : text) {
    if (is_space(ch)) return not_a_decimal(text, key, kind, "whitespace is not accepted");
  }
  if (text.front() == '+') return not_a_decimal(text, key, kind, "a '+' sign is not accepted");
  const std::string_view digits = text.front() == '-' ? text.substr(1) : text;
  if (digits.empty()) return not_a_decimal(text, key, kind, "a '-' without digits");
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (!is_digit(digits[i])) {
      const std::size_t offset = i + (text.size() - digits.size());
      return not_a_decimal(text, key, kind,
                           "unexpected " + quote_excerpt(digits.substr(i, 1)) + " at offset " + std::to_string(offset));
    }
  }
  // One number, one text: without these, "007" would read as 7 and then
  // differ from encode(7) in a Txn's Compare::value.
  if (digits.size() > 1 && digits.front() == '0') {
    return not_a_decimal(text, key, kind, "leading zeros are not accepted");
  }
  if (text == "-0") return not_a_decimal(text, key, kind, "zero is \"0\", not \"-0\"");
  return Status::Ok();
}

Status integer_out_of_range(std::string_view text, std::string_view key, IntegerKind kind) {
  return not_a_decimal(text, key, kind, "out of range " + integer_range(kind));
}

std::size_t invalid_utf8_offset(std::string_view text) noexcept {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t code_point = 0;
    std::uint32_t smallest = 0;  // below it, the sequence is an overlong form
    if ((lead & 0xe0) == 0xc0) {
      length = 2;
      code_point = lead & 0x1f;
      smallest = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3;
      code_point = lead & 0x0f;
      smallest = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4;
      code_point = lead & 0x07;
      smallest = 0x10000;
    } else {
      return i;  // a continuation byte without a lead, or 0xf8..0xff
    }
    if (text.size() - i < length) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return i;
      code_point = (code_point << 6) | (next & 0x3f);
    }
    if (code_point < smallest || code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff)) return i;
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace detail
}  // namespace etcd::recipes
