// parse_client_json: what nlohmann's parser reads, minus what no API server
// sends (keys repeated in an object, nesting past Go's 10000 levels), each
// refused naming where.
#include "gpusizer/json/json_access.h"

#include <string>

#include <gtest/gtest.h>

namespace gpusizer::json_access_test {
namespace {

using nlohmann::json;

std::string error_of(std::string_view text, std::size_t max_depth = kMaxJsonDepth) {
  auto parsed = parse_client_json(text, max_depth);
  return parsed ? "parsed" : parsed.error();
}

TEST(ParseClientJson, ReadsWhatNlohmannReads) {
  const std::string text =
      R"({"s":"\u20ac x","i":-4,"u":18446744073709551615,"f":1.5e3,"t":true,"n":null,"a":[[],{},[1,{"k":"v"}]],"o":{}})";
  auto parsed = parse_client_json(text);
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_EQ(parsed.value(), json::parse(text));
  EXPECT_EQ(parse_client_json("7").value(), json(7));
}

TEST(ParseClientJson, DepthUpToTheLimitIsRead) {
  EXPECT_EQ(error_of("[[[]]]", 3), "parsed");
  EXPECT_EQ(error_of(R"({"a":{"b":[1]}})", 3), "parsed");
  EXPECT_EQ(error_of(std::string(10000, '[') + std::string(10000, ']')), "parsed");
}

TEST(ParseClientJson, DeeperIsRefusedNamingWhere) {
  EXPECT_EQ(error_of("[[[[]]]]", 3), "nests JSON deeper than 3 levels at [0][0][0]");
  EXPECT_EQ(error_of(R"({"a":[1,2,{"b":{}}]})", 3), "nests JSON deeper than 3 levels at a[2].b");
  EXPECT_EQ(error_of("[]", 0), "nests JSON deeper than 0 levels at the top level");
  EXPECT_EQ(error_of(std::string(10001, '[') + std::string(10001, ']')),
            "nests JSON deeper than 10000 levels at [0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]...");
}

TEST(ParseClientJson, RepeatedKeysAreRefusedNamingTheObject) {
  EXPECT_EQ(error_of(R"({"a":1,"a":1})"), "repeats key \"a\" in the top level");
  EXPECT_EQ(error_of(R"({"a":[{"b":1},{"b":1,"c":{"d":0,"d":1}}]})"), "repeats key \"d\" in a[1].c");
  // The same key in different objects is fine.
  EXPECT_EQ(error_of(R"({"a":{"k":1},"b":{"k":1}})"), "parsed");
}

TEST(ParseClientJson, SyntaxErrorsSayWhereNotWhat) {
  const std::string error = error_of(R"({"env":[{"value":"hunter2-secret)");
  EXPECT_EQ(error.rfind("is not valid JSON: [json.exception.parse_error.101] parse error at line 1, column ", 0), 0u)
      << error;
  EXPECT_EQ(error.find("hunter2"), std::string::npos) << error;
  EXPECT_NE(error_of("{\"a\":\"\xff\"}").find("ill-formed UTF-8"), std::string::npos);
  EXPECT_EQ(error_of("[1e999]"),
            "is not valid JSON: [json.exception.out_of_range.406] number overflow parsing \"1e999\"");
  EXPECT_NE(error_of("{} {}").find("expected end of input"), std::string::npos);
}

TEST(ParseClientJson, ANumberPastADoubleIsQuotedShort) {
  // A million digits: the parser's message quoted all of them.
  const std::string error = error_of("{\"n\":" + std::string(1 << 20, '9') + "}");
  EXPECT_EQ(error, "is not valid JSON: [json.exception.out_of_range.406] number overflow parsing \"" +
                       std::string(64, '9') + "\"... (1048576 bytes)");
}

TEST(ParseClientJson, LongKeysAreQuotedShort) {
  const std::string key(1 << 20, 'k');
  const std::string error = error_of("{\"" + key + "\":{\"a\":1,\"a\":2}}");
  EXPECT_EQ(error, "repeats key \"a\" in " + std::string(61, 'k') + "...");
  EXPECT_LT(error_of("{\"" + key + "\":1,\"" + key + "\":2}").size(), 120u);
}

TEST(ParseErrorQuoting, CutsTheQuotedTextOrLeavesItOut) {
  std::string message;
  try {
    const json parsed = json::parse("{\"a\": \"" + std::string(100'000, 'x'));
    ADD_FAILURE() << "an unclosed string parsed as " << parsed.dump();
  } catch (const json::parse_error& error) {
    message = error.what();
  }
  ASSERT_NE(message.find("; last read: '\"xxx"), std::string::npos) << message.substr(0, 200);
  const std::string cut = parse_error_quoting(message, 10);
  EXPECT_EQ(cut.substr(cut.find("; last read:")), "; last read: '\"xxxxxx...'") << cut;
  const std::string left_out = parse_error_quoting(message, 0);
  EXPECT_EQ(left_out.find("last read"), std::string::npos) << left_out;
  EXPECT_EQ(left_out.find("xxx"), std::string::npos) << left_out;
  // A quote followed by more text keeps the text.
  EXPECT_EQ(parse_error_quoting("bad; last read: 'abcdef'; expected x", 4), "bad; last read: 'a...'; expected x");
  EXPECT_EQ(parse_error_quoting("bad; last read: 'abcdef'; expected x", 0), "bad; expected x");
}

}  // namespace
}  // namespace gpusizer::json_access_test
