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

}  // namespace
}  // namespace stoker
