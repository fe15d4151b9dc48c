// JsonReader and JsonView: the fast reader of review bodies must accept and
// refuse exactly what parse_client_json does, with the same messages, and
// the views must read as the nlohmann values did (absent for wrong types).
// to_json_text must write what nlohmann's dump writes.
#include "gpusizer/json/json_view.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/json/json_text.h"

namespace gpusizer::json_view_test {
namespace {

using nlohmann::json;

std::string outcome(std::string_view text, std::size_t max_depth = kMaxJsonDepth) {
  JsonReader reader(max_depth);
  auto parsed = reader.parse(text);
  return parsed ? "parsed " + parsed.value().text() : parsed.error();
}

std::string slow_outcome(std::string_view text, std::size_t max_depth = kMaxJsonDepth) {
  auto parsed = parse_client_json(text, max_depth);
  return parsed ? "parsed" : parsed.error();
}

TEST(JsonReader, RefusesWhatParseClientJsonRefusesWithItsMessage) {
  for (const std::string& text :
       {std::string(R"({"a":1,"a":2})"), std::string(R"({"o":{"k":[{"memory":"1","cpu":2,"memory":"3"}]}})"),
        std::string("{\"a\":"), std::string("[1,]"), std::string("\"\xff\""), std::string("[\"\\ud800\"]"),
        std::string(10001, '[') + std::string(10001, ']'), std::string("")}) {
    const std::string expected = slow_outcome(text);
    ASSERT_NE(expected, "parsed") << text.substr(0, 40);
    EXPECT_EQ(outcome(text), expected) << text.substr(0, 40);
  }
  // Keys of one length and first byte are told apart to their last byte;
  // an empty key repeats as any other; keys that differ only in length or
  // first byte do not repeat.
  EXPECT_EQ(outcome(R"({"cpu":1,"cpv":2,"cpu":3})"), slow_outcome(R"({"cpu":1,"cpv":2,"cpu":3})"));
  EXPECT_EQ(outcome(R"({"":1,"a":2,"":3})"), slow_outcome(R"({"":1,"a":2,"":3})"));
  EXPECT_EQ(outcome(R"({"":1,"a":2,"ab":3,"b":4,"ba":5})"), "parsed {\"\":1,\"a\":2,\"ab\":3,\"b\":4,\"ba\":5}");
  // A key repeated in a large object (the sorted check) is found too.
  std::string wide = "{";
  for (int i = 0; i < 40; ++i) wide += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  wide += "\"k7\":0}";
  EXPECT_EQ(outcome(wide), "repeats key \"k7\" in the top level");
}

TEST(JsonReader, DepthLimitIsTheSameAsParseClientJson) {
  EXPECT_EQ(outcome("[[[]]]", 3), "parsed [[[]]]");
  EXPECT_EQ(outcome("[[[[]]]]", 3), "nests JSON deeper than 3 levels at [0][0][0]");
  EXPECT_EQ(outcome(std::string(10000, '[') + std::string(10000, ']')).substr(0, 10), "parsed [[[");
}

TEST(JsonReader, ReadsNumbersSimdjsonRefusesAsNlohmannDoes) {
  // Integers past 64 bits are doubles to nlohmann (and to Go's API server).
  EXPECT_EQ(outcome(R"({"big":123456789012345678901234567890})"), "parsed {\"big\":1.2345678901234568e+29}");
  EXPECT_EQ(outcome("18446744073709551615"), "parsed 18446744073709551615");
}

TEST(JsonReader, ReusedReaderReadsEachDocument) {
  JsonReader reader;
  for (const std::string text : {R"({"a":[1,2,3]})", R"({"b":"x"})", "[true]"}) {
    auto parsed = reader.parse(text);
    ASSERT_TRUE(parsed) << parsed.error();
    EXPECT_EQ(json::parse(parsed.value().text()), json::parse(text));
  }
}

// A body read in place (its buffer has kJsonPadding to spare) reads as the
// same text copied: the bytes past its end are never part of it, whatever
// they are.
TEST(JsonReader, ATextReadInPlaceEndsAtItsLengthWhateverFollowsIt) {
  const auto in_place = [](std::string_view text, std::string_view after) {
    std::string buffer(text);
    buffer += after;
    buffer.resize(text.size() + kJsonPadding, '"');
    JsonReader reader;
    auto parsed = reader.parse(std::string_view(buffer).substr(0, text.size()), buffer.size());
    return parsed ? "parsed " + parsed.value().text() : parsed.error();
  };
  for (const auto& [text, after] :
       std::vector<std::pair<std::string, std::string>>{{R"({"a":1})", R"(,"a":2})"},
                                                        {R"({"a":)", "1}"},
                                                        {R"(["x)", R"("])"},
                                                        {"[1,2]", std::string(kJsonPadding, '\\')},
                                                        {"", "{}"}}) {
    EXPECT_EQ(in_place(text, after), outcome(text)) << text;
  }
}

TEST(JsonReader, GivesBackTheBuffersOfALargeDocument) {
  // A server thread keeps its reader: one 8 MB body must not pin tens of
  // megabytes for the thread's life.
  JsonReader reader;
  const std::size_t ordinary = reader.capacity();
  const std::string large = "[\"" + std::string(4 << 20, 'x') + "\"]";
  ASSERT_TRUE(reader.parse(large));
  EXPECT_GE(reader.capacity(), large.size());
  reader.release_large_buffers();
  EXPECT_EQ(reader.capacity(), ordinary);
  auto again = reader.parse(R"({"a":1})");  // still reads after giving back
  ASSERT_TRUE(again);
  EXPECT_EQ(again.value()["a"].text(), "1");
  // An ordinary review keeps its buffers: nothing to allocate next time.
  reader.release_large_buffers();
  EXPECT_EQ(reader.capacity(), ordinary);
}

TEST(JsonView, WrongTypesAndMissingMembersReadAsAbsent) {
  JsonReader reader;
  const JsonView doc = reader.parse(R"({"s":"text","n":4,"a":[1,{"k":"v"}],"o":{"x":null},"t":true})").value();
  EXPECT_EQ(doc["s"].string(), "text");
  EXPECT_EQ(doc["n"].string(), "");  // not a string
  EXPECT_TRUE(doc["missing"].is_absent());
  EXPECT_TRUE(doc["s"]["deeper"].is_absent());  // not an object
  EXPECT_TRUE(doc["o"]["x"].is_null());
  EXPECT_FALSE(doc["o"]["x"].is_absent());
  EXPECT_TRUE(doc["t"].is_true());
  EXPECT_FALSE(doc["s"].is_true());
  EXPECT_EQ(doc["a"].elements().size(), 2u);
  EXPECT_TRUE(doc["o"].elements().empty());
  EXPECT_EQ(doc["a"].child("1")["k"].string(), "v");
  EXPECT_TRUE(doc["a"].child("2").is_absent());
  EXPECT_TRUE(doc["a"].child("x").is_absent());
  EXPECT_EQ(at_path(doc, {"a", "1", "k"}).string(), "v");
  EXPECT_TRUE(at_path(doc, {"a", "9", "k"}).is_absent());
  EXPECT_EQ(doc["n"].text(), "4");
  EXPECT_EQ(doc["o"].type_name(), "object");
  EXPECT_EQ(doc["missing"].type_name(), "null");
}

// One reader reads a document at many paths, as at_path does, through
// arrays whose elements it keeps (issue 25: each of a workflow's thousands
// of templates is looked for in the old object).
TEST(PathReader, ReadsEveryPathAsAtPathDoes) {
  JsonReader reader;
  std::string text = R"({"spec":{"templates":[)";
  for (int i = 0; i < 300; ++i) text += (i ? "," : "") + std::string(R"({"name":"t)") + std::to_string(i) + R"("})";
  text += R"(],"a~b/c":{"k":[1,2]}}})";
  const JsonView doc = reader.parse(text).value();
  PathReader paths(doc);
  EXPECT_EQ(paths.root().text(), doc.text());
  for (int i = 299; i >= 0; i -= 7) {
    const std::vector<std::string> path = {"spec", "templates", std::to_string(i), "name"};
    EXPECT_EQ(paths.at(path).string(), "t" + std::to_string(i));
    EXPECT_EQ(paths.at(path).string(), at_path(doc, path).string());
  }
  EXPECT_TRUE(paths.at({"spec", "templates", "300"}).is_absent());
  EXPECT_TRUE(paths.at({"spec", "templates", "x"}).is_absent());
  EXPECT_EQ(paths.at({"spec", "a~b/c", "k", "1"}).text(), "2");  // escaped in the pointers it keeps
  EXPECT_TRUE(PathReader(JsonView()).at({"spec"}).is_absent());
}

TEST(JsonView, EqualityIgnoresMemberOrderOnly) {
  JsonReader left_reader;
  JsonReader right_reader;
  auto equal = [&](const std::string& a, const std::string& b) {
    return left_reader.parse(a).value() == right_reader.parse(b).value();
  };
  EXPECT_TRUE(equal(R"({"a":1,"b":[1,{"c":"d"}]})", R"({"b":[1,{"c":"d"}],"a":1})"));
  EXPECT_FALSE(equal(R"({"a":1})", R"({"a":2})"));
  EXPECT_FALSE(equal(R"({"a":1})", R"({"a":1,"b":1})"));
  EXPECT_FALSE(equal(R"([1,2])", R"([2,1])"));
  EXPECT_FALSE(equal(R"({"a":"1"})", R"({"a":1})"));
  EXPECT_TRUE(equal("null", "null"));
}

TEST(JsonReader, ViewOfAnNlohmannDocument) {
  JsonReader reader;
  const json document = {{"spec", {{"containers", json::array({{{"name", "t"}}})}}}};
  const JsonView view = reader.view_of(document);
  EXPECT_EQ(view["spec"]["containers"].child("0")["name"].string(), "t");
}

TEST(ToJsonText, WritesWhatNlohmannDumpWrites) {
  const json value = {{"s", "quote \" backslash \\ newline \n tab \t bell \x07 del \x7f euro \u20ac"},
                      {"n", -4},
                      {"u", 18446744073709551615u},
                      {"f", 1.5},
                      {"b", false},
                      {"z", nullptr},
                      {"a", json::array({1, "x", json::object(), json::array()})},
                      {"bad utf-8", std::string("\xff\xfe ok \xc3")}};
  EXPECT_EQ(to_json_text(value), value.dump(-1, ' ', false, json::error_handler_t::replace));
  EXPECT_EQ(to_json_text(json("")), "\"\"");
}

}  // namespace
}  // namespace gpusizer::json_view_test
