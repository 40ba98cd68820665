// What the tool prints of a job's words: escape codes and other control
// characters shown as text, never passed to the terminal.
#include "core/printable.hpp"

#include <gtest/gtest.h>

namespace autotune {
namespace {

TEST(Printable, ShowsControlCharactersAsText) {
  EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(printable("a\rb\bc\x7f"), "a\\x0db\\x08c\\x7f");
  EXPECT_EQ(printable(std::string("nul\0byte", 8)), "nul\\x00byte");
}

TEST(Printable, KeepsNewlinesTabsAndUtf8) {
  EXPECT_EQ(printable("line 1\n\tline 2"), "line 1\n\tline 2");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80 \xc2\xa0"), "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80 \xc2\xa0");
  EXPECT_EQ(printable(""), "");
}

TEST(Printable, ShowsC1ControlsEncodedOrRaw) {
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\x9b31m");  // U+009B, CSI
  EXPECT_EQ(printable("\x9b" "31m"), "\\x9b31m");      // a raw CSI byte
  EXPECT_EQ(printable("\xc2\x85"), "\\x85");
}

TEST(Printable, ShowsBytesThatAreNotUtf8) {
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("\xc3"), "\\xc3");              // cut short
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");     // overlong
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("\xe2\x86"), "\\xe2\\x86");
}

}  // namespace
}  // namespace autotune
