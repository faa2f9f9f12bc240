// Printable (text from outside made safe for a one-line message) and IsValidUtf8.
#include "cerar/format/printable.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace cerar {
namespace {

TEST(Printable, EscapesWhatCouldBreakALineOrDriveATerminal) {
  EXPECT_EQ(Printable("plain/path-1.json"), "plain/path-1.json");
  EXPECT_EQ(Printable("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(Printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(Printable(std::string("nul\0here", 8)), "nul\\x00here");
  EXPECT_EQ(Printable("del\x7f"), "del\\x7f");
  // C1 controls (CSI as U+009B), bidirectional overrides, line and paragraph separators.
  EXPECT_EQ(Printable("\xc2\x9b" "2J"), "\\u{009b}2J");
  EXPECT_EQ(Printable("abc\xe2\x80\xae" "cba"), "abc\\u{202e}cba");
  EXPECT_EQ(Printable("\xe2\x81\xa6x\xe2\x80\xa8"), "\\u{2066}x\\u{2028}");
  // Other non-ASCII text stays readable.
  EXPECT_EQ(Printable("κ_dec ≤ 10³ — ok"), "κ_dec ≤ 10³ — ok");
}

TEST(Printable, InvalidUtf8BytesAreShownAsHex) {
  EXPECT_EQ(Printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");            // overlong '/'
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(Printable("\xe2\x82"), "\\xe2\\x82");            // cut short
}

TEST(Printable, EscapingTwiceChangesNothing) {
  for (const std::string text : {"a\nb", "\x1b]0;title\x07", "\xc2\x9b\xff", "back\\slash"}) {
    EXPECT_EQ(Printable(Printable(text)), Printable(text)) << text;
  }
}

TEST(Printable, LongTextIsCutAtACharacterBoundary) {
  const std::string text = std::string(10, 'a') + "é" + std::string(100, 'b');
  const std::string cut = Printable(text, 11);  // the 2-byte 'é' starts at byte 10
  EXPECT_EQ(cut, std::string(10, 'a') + "é...(+100 bytes)");
  EXPECT_EQ(Printable(std::string(1000, 'x')).size(), 200 + std::string("...(+800 bytes)").size());
}

TEST(IsValidUtf8, AgreesWithTheJsonWriterOnRandomBytes) {
  // nlohmann's dump() refuses exactly the invalid UTF-8: a string IsValidUtf8 accepts must be
  // writable, one it refuses must not be.
  std::mt19937_64 rng(14);
  std::uniform_int_distribution<int> length(0, 6), byte(0, 255), pick(0, 3);
  const unsigned char interesting[] = {0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xed,
                                       0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x9f, 0x8f, 0x90};
  int valid = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    std::string s;
    for (int k = length(rng); k > 0; --k) {
      s += char(pick(rng) == 0 ? byte(rng) : interesting[byte(rng) % sizeof interesting]);
    }
    bool writable = true;
    try {
      (void)nlohmann::json(s).dump();
    } catch (const nlohmann::json::exception&) {
      writable = false;
    }
    ASSERT_EQ(IsValidUtf8(s), writable) << nlohmann::json(s).dump(-1, ' ', true,
                                               nlohmann::json::error_handler_t::replace);
    valid += writable;
  }
  EXPECT_GT(valid, 1000);  // both outcomes were exercised
}

}  // namespace
}  // namespace cerar
