// How messages, logs, labels and /status show text they read: printable()
// and in_quotes() (util/strings.h).
#include "gpusizer/util/strings.h"

#include <gtest/gtest.h>

namespace gpusizer::strings_test {
namespace {

const std::string kRlo = "\xe2\x80\xae";  // U+202E RIGHT-TO-LEFT OVERRIDE

TEST(HtmlEscape, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(html_escape(R"(<a href="x" title='y'>&amp;</a>)"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  EXPECT_EQ(html_escape("plain text, ünïcödé"), "plain text, ünïcödé");
}

TEST(Printable, EscapesControlAndBidiCharactersAndKeepsTheRest) {
  EXPECT_EQ(printable(std::string("a\0b", 3), 64), "a\\u0000b");
  EXPECT_EQ(printable("line\nforged\r\t", 64), "line\\u000aforged\\u000d\\u0009");
  EXPECT_EQ(printable("evil" + kRlo + "cod.exe", 64), "evil\\u202ecod.exe");
  // Every bidirectional formatting character, the separators, DEL and C1.
  for (const std::string& hidden :
       {std::string("\xd8\x9c"), std::string("\xe2\x80\x8e"), std::string("\xe2\x80\x8f"), std::string("\xe2\x80\xaa"),
        std::string("\xe2\x81\xa6"), std::string("\xe2\x81\xa9"), std::string("\xe2\x80\xa8"),
        std::string("\xe2\x80\xa9"), std::string("\x7f"), std::string("\xc2\x85")}) {
    const std::string shown = printable(hidden, 64);
    EXPECT_EQ(shown.rfind("\\u", 0), 0u) << shown;
    EXPECT_EQ(shown.size(), 6u) << shown;
  }
  EXPECT_EQ(printable("ünïcödé, 日本, \"quoted\" and back\\slash", 64), "ünïcödé, 日本, \"quoted\" and back\\slash");
}

TEST(Printable, WritesBytesThatAreNotUtf8AsHex) {
  EXPECT_EQ(printable("a\xff"
                      "b",
                      64),
            "a\\xffb");
  EXPECT_EQ(printable("cut \xe2\x80", 64), "cut \\xe2\\x80");
  EXPECT_EQ(printable("\xed\xa0\x80", 64), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("\xc0\xaf", 64), "\\xc0\\xaf");           // overlong '/'
}

TEST(Printable, CutsLongTextWithinTheBoundNeverInsideACharacterOrAnEscape) {
  const std::string megabyte(1 << 20, 'a');
  EXPECT_EQ(printable(megabyte, 16), std::string(13, 'a') + "...");
  EXPECT_EQ(printable(std::string(16, 'a'), 16), std::string(16, 'a'));
  // A cut where plain text meets an escape: neither is split.
  EXPECT_EQ(printable("abc\ndef", 11), "abc...");
  EXPECT_EQ(printable("abc\ndef", 12), "abc\\u000adef");
  EXPECT_EQ(in_quotes("ab\"cd", 3), "\"ab\"... (5 bytes)");
  EXPECT_EQ(in_quotes("ab\"cd", 4), "\"ab\\\"\"... (5 bytes)");
  // 11 bytes before the "..." end inside the fourth character (3 bytes
  // each): it stops before it.
  EXPECT_EQ(printable("日本日本日本", 14), "日本日...");
  // An escape is six bytes: whole or not at all.
  EXPECT_EQ(printable("ab" + kRlo + kRlo, 12), "ab\\u202e...");
}

TEST(Printable, ShowingShownTextChangesNothing) {
  const std::string shown = printable("a\nb" + kRlo + "\xff", 64);
  EXPECT_EQ(printable(shown, 64), shown);
}

TEST(InQuotes, QuotesShortTextWhole) {
  EXPECT_EQ(in_quotes("trainer"), "\"trainer\"");
  EXPECT_EQ(in_quotes(""), "\"\"");
  EXPECT_EQ(in_quotes("say \"hi\" \\ bye"), R"("say \"hi\" \\ bye")");
  EXPECT_EQ(in_quotes("a\n" + kRlo), R"("a\u000a\u202e")");
  EXPECT_EQ(in_quotes(std::string(kQuotedBytes, 'x')), "\"" + std::string(kQuotedBytes, 'x') + "\"");
}

TEST(InQuotes, QuotesAPrefixAndTheLengthOfLongText) {
  const std::string number(1 << 20, '1');
  const std::string quoted = in_quotes(number);
  EXPECT_EQ(quoted, "\"" + std::string(kQuotedBytes, '1') + "\"... (1048576 bytes)");
  EXPECT_EQ(in_quotes(std::string(kQuotedBytes + 1, 'x'), 4), "\"xxxx\"... (65 bytes)");
  EXPECT_EQ(in_quotes(number, std::string::npos).size(), number.size() + 2);
}

TEST(FieldPath, ShowsEachStepShortAndEscaped) {
  EXPECT_EQ(field_path({"spec", "containers", "0", "resources"}), "spec.containers[0].resources");
  const std::string long_key(1 << 20, 'k');
  const std::string path = field_path({"limits", long_key, "x\n"});
  EXPECT_EQ(path, "limits." + std::string(kQuotedBytes - 3, 'k') + "....x\\u000a");
  // A run of digits too long to be an index is a key like any other.
  EXPECT_EQ(field_path({"a", std::string(100, '9')}), "a." + std::string(kQuotedBytes - 3, '9') + "...");
}

TEST(PartError, QuotesThePartShort) {
  EXPECT_EQ(part_error("zero=4", "must be 0, 1, 2 or 3").message(), "part \"zero=4\": must be 0, 1, 2 or 3");
  const std::string long_part = "params=" + std::string(100000, '7');
  EXPECT_LT(part_error(long_part, "too big").message().size(), 120u);
}

}  // namespace
}  // namespace gpusizer::strings_test
