// Copyright 2026 The stoker Authors.
#include "base/json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoker {
namespace {

TEST(JsonTest, StringArrayRoundTripsThroughJsonQuote) {
  const std::vector<std::string> in = {"cat", "", "a \"quoted\" \\ name", "tab\there\nnl",
                                       std::string("ctl\x01", 4), "caf\xC3\xA9"};
  std::string text = "[";
  for (size_t i = 0; i < in.size(); ++i) text += (i ? ", " : "") + JsonQuote(in[i]);
  text += "]\n";
  std::vector<std::string> out;
  ASSERT_TRUE(ParseJsonStringArray(text, &out)) << text;
  EXPECT_EQ(out, in);
}

TEST(JsonTest, StringArrayEscapesAndRejections) {
  std::vector<std::string> out;
  ASSERT_TRUE(ParseJsonStringArray(" [ ] ", &out));
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(ParseJsonStringArray(R"(["\u00e9\/", "\ud83d\ude00"])", &out));
  EXPECT_EQ(out, (std::vector<std::string>{"\xC3\xA9/", "\xF0\x9F\x98\x80"}));
  for (const char* bad : {"", "[", "[\"a\"", "[\"a\",]", "[1]", "{\"a\": 1}", "[\"a\"] x",
                          "[\"\\x\"]", "[\"\\ud83d\"]", "[\"a\nb\"]"}) {
    EXPECT_FALSE(ParseJsonStringArray(bad, &out)) << bad;
  }
}

// Issue 32 item 25: names that are not UTF-8 go into JSON as Python writes
// os.fsdecode's str (surrogate escapes), and come back as the same bytes.
TEST(JsonTest, BytesThatAreNotUtf8RoundTripAsSurrogateEscapes) {
  const std::vector<std::string> in = {"caf\xe9", "\xff", "ok \xc3\xa9", "\xed\xa0\x80",
                                       "\xc0\xaf", "cut \xe2\x82", "\"\x80\""};
  std::string text = "[";
  for (size_t i = 0; i < in.size(); ++i) text += (i ? ", " : "") + JsonQuoteBytes(in[i]);
  text += "]";
  EXPECT_EQ(JsonQuoteBytes("caf\xe9"), "\"caf\\udce9\"");
  EXPECT_EQ(JsonQuoteBytes("ok \xc3\xa9"), "\"ok \xc3\xa9\"");  // valid UTF-8 as is
  EXPECT_EQ(JsonQuoteBytes("\xed\xa0\x80"), "\"\\udced\\udca0\\udc80\"");  // a surrogate
  std::vector<std::string> out;
  ASSERT_TRUE(ParseJsonStringArray(text, &out)) << text;
  EXPECT_EQ(out, in);
  EXPECT_FALSE(ParseJsonStringArray(R"(["\udc10"])", &out));  // not a byte's escape
  EXPECT_EQ(EscapeNonUtf8("caf\xe9 \xc3\xa9"), "caf\\xe9 \xc3\xa9");
  // The CLI's JsonQuote: always valid UTF-8 JSON; such bytes read back as \xNN text.
  EXPECT_EQ(JsonQuote("caf\xe9\n"), "\"caf\\\\xe9\\n\"");
  EXPECT_TRUE(ParseJsonStringArray("[" + JsonQuote("caf\xe9") + "]", &out));
  EXPECT_EQ(out, std::vector<std::string>{"caf\\xe9"});
  EXPECT_EQ(EscapeNonUtf8(EscapeNonUtf8("caf\xe9")), "caf\\xe9");
}

}  // namespace
}  // namespace stoker
