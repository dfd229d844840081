// The text format of `-w simple` (docs/cli.md, "Output: -w simple|json"):
// every key, value or other byte string a command prints on a line goes
// through simple_field(), so that a line is always a sequence of fields
// separated by single spaces, and each field decodes back to its exact
// bytes with the shell's `printf '%b'`.
//
// A field is its bytes with these replaced:
//   \      ->  \\          newline  ->  \n       tab  ->  \t
//   CR     ->  \r          space    ->  \x20     =    ->  \x3d
//   any other byte below 0x20, 0x7f, and every byte that is not part of a
//   valid UTF-8 sequence (or encodes a C1 control, U+0080..U+009F)
//   ->  \xHH (two lower-case hex digits)
// Everything else, valid UTF-8 included, is printed as it is, so a plain
// key or value reads the same as before it was encoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace etcd_cli {

// The length of the valid UTF-8 sequence of two or more bytes starting at
// bytes[i] (0 if there is none): no overlong forms, no surrogates, nothing
// past U+10FFFF, and no C1 control (U+0080..U+009F, which terminals act on).
// The other text formats of the tool (Prometheus labels) escape by it too.
size_t utf8_sequence(std::string_view bytes, size_t i);

// Appends the four characters \xHH (lower-case hex) of byte `c`.
void append_hex(std::string& out, unsigned char c);

// Copies `bytes` to `out`: each valid UTF-8 sequence of two or more bytes
// (utf8_sequence()) as it is, each other byte through `escape(out, byte)`,
// stopping before the byte at `max` (0: no limit). Returns whether every
// byte was copied. The tool's text forms (Prometheus label values, the
// dashboard's text) escape by it.
template <class Escape>
bool copy_utf8(std::string& out, std::string_view bytes, Escape escape, size_t max = 0) {
  out.reserve(out.size() + bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    if (max != 0 && i >= max) return false;
    const auto c = static_cast<unsigned char>(bytes[i]);
    const size_t n = c >= 0x80 ? utf8_sequence(bytes, i) : 0;
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      escape(out, c);
      ++i;
    }
  }
  return true;
}

// One field: `bytes` escaped as above. Never contains a space, a tab, a
// newline, '=' or a backslash that does not start an escape.
std::string simple_field(std::string_view bytes);

// A line: `literal` (the tool's own word, like PUT, copied as it is; may be
// empty) and then each of `fields` escaped with simple_field(), all
// separated by single spaces: simple_line("PUT", {key, value}).
std::string simple_line(std::string_view literal, std::initializer_list<std::string_view> fields);

// A lease id as 16 lower-case hex digits, zero-padded.
std::string lease_hex(int64_t id);

// Keys and values are arbitrary bytes: in JSON output they are base64
// (RFC 4648, with padding), as etcdctl -w json writes them; base64_decode
// gives the bytes back (none: not such a text).
std::string base64(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace etcd_cli
