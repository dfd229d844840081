// The `-w simple` field encoding of the CLI (tools/etcd-recipes/simple_format.h,
// docs/cli.md "The simple format"): plain text unchanged, everything that
// could split or break a line escaped, and nothing lost.
#include <gtest/gtest.h>

#include <string>

#include "simple_format.h"

namespace etcd_cli {
namespace {

using namespace std::string_literals;

// The decoding docs/cli.md gives (bash's printf '%b', for the escapes the
// encoder writes).
std::string decode(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] != '\\') {
      out += field[i];
      continue;
    }
    const char e = field.at(++i);
    if (e == '\\') out += '\\';
    if (e == 'n') out += '\n';
    if (e == 't') out += '\t';
    if (e == 'r') out += '\r';
    if (e == 'x') {
      out += static_cast<char>(std::stoi(field.substr(i + 1, 2), nullptr, 16));
      i += 2;
    }
  }
  return out;
}

TEST(CliSimpleFormat, PlainTextIsPrintedAsItIs) {
  for (const std::string s : {"/config/db", "10.0.0.7:5432", "resize:42", "a-b_c.d/e", "{\"k\":1}", ""}) {
    EXPECT_EQ(simple_field(s), s);
  }
  EXPECT_EQ(simple_field("grüße/日本/🙂"), "grüße/日本/🙂");  // valid UTF-8
}

TEST(CliSimpleFormat, WhatWouldSplitALineIsEscaped) {
  EXPECT_EQ(simple_field("a b"), "a\\x20b");
  EXPECT_EQ(simple_field("k=v"), "k\\x3dv");
  EXPECT_EQ(simple_field("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(simple_field("back\\slash"), "back\\\\slash");
  EXPECT_EQ(simple_field("\\n"), "\\\\n");  // a literal backslash-n stays two bytes
  EXPECT_EQ(simple_field("nul\0bel\a del\x7f"s), "nul\\x00bel\\x07\\x20del\\x7f");
}

TEST(CliSimpleFormat, BytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(simple_field("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(simple_field("\xc3"), "\\xc3");                  // truncated sequence
  EXPECT_EQ(simple_field("\xc0\xaf"), "\\xc0\\xaf");         // overlong '/'
  EXPECT_EQ(simple_field("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(simple_field("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(simple_field("\xc2\x85"), "\\xc2\\x85");         // C1 control NEL
  EXPECT_EQ(simple_field("\xc2\xa0"), "\xc2\xa0");           // U+00A0 is printable
}

TEST(CliSimpleFormat, EveryByteStringRoundTrips) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (const std::string& s : {all, "a b=c\n"s, "\xe6\x97\xa5\xff "s, std::string(3, '\0')}) {
    const std::string field = simple_field(s);
    EXPECT_EQ(field.find_first_of(" \t\n\r="), std::string::npos) << field;
    EXPECT_EQ(decode(field), s);
  }
}

TEST(CliSimpleFormat, ALineIsTheWordAndTheFieldsSeparatedBySingleSpaces) {
  EXPECT_EQ(simple_line("PUT", {"/a b", "x=1"}), "PUT /a\\x20b x\\x3d1");
  EXPECT_EQ(simple_line("PUT", {"/k", ""}), "PUT /k ");  // an empty value is an empty last field
  EXPECT_EQ(simple_line("", {"api", "", "h:1"}), "api  h:1");
  EXPECT_EQ(simple_line("REMOVED", {"/k"}), "REMOVED /k");
}

}  // namespace
}  // namespace etcd_cli
