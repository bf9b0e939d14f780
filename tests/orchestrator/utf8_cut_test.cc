// The one cut of a text to a byte cap (store/utf8_cut.h): a character straddling the cap is left
// out whole, a text that fits is kept as it is, and the mark is added only to a cut text.
#include "orchestrator/store/utf8_cut.h"

#include <gtest/gtest.h>

#include <string>

namespace baton {
namespace {

const std::string kE = "\xc3\xa9";              // é, 2 bytes
const std::string kEmoji = "\xf0\x9f\x98\x80";  // 😀, 4 bytes

TEST(Utf8Cut, AsciiIsCutAtTheCap) {
  EXPECT_EQ(CutUtf8("abcdef", 3), "abc");
  EXPECT_EQ(CutUtf8("abcdef", 3, CutKeep::kEnd), "def");
  EXPECT_EQ(CutUtf8("abcdef", 0), "");
}

TEST(Utf8Cut, ATextThatFitsIsKeptWithoutAMark) {
  const std::string text = "a" + kE;  // 3 bytes
  EXPECT_EQ(CutUtf8(text, 3, CutKeep::kStart, "…"), text);
  EXPECT_EQ(CutUtf8(text, 3, CutKeep::kEnd, "…"), text);
  EXPECT_EQ(CutUtf8(text, 100, CutKeep::kStart, "…"), text);
}

TEST(Utf8Cut, AnEmptyTextStaysEmpty) {
  EXPECT_EQ(CutUtf8("", 0), "");
  EXPECT_EQ(CutUtf8("", 0, CutKeep::kStart, "…"), "");
  EXPECT_EQ(CutUtf8("", 5, CutKeep::kEnd, "…"), "");
}

TEST(Utf8Cut, ACharacterAcrossTheCapIsLeftOutWhole) {
  const std::string text = "a" + kE + "b";  // a é b: 4 bytes, é at bytes 1-2
  EXPECT_EQ(CutUtf8(text, 2), "a");
  EXPECT_EQ(CutUtf8(text, 2, CutKeep::kEnd), "b");
  EXPECT_EQ(CutUtf8(text, 3), "a" + kE);
  EXPECT_EQ(CutUtf8(text, 3, CutKeep::kEnd), kE + "b");
  const std::string emoji = "x" + kEmoji + "y";  // 6 bytes
  for (size_t cap = 1; cap <= 4; ++cap) {
    EXPECT_EQ(CutUtf8(emoji, cap), "x") << cap;
    EXPECT_EQ(CutUtf8(emoji, cap, CutKeep::kEnd), "y") << cap;
  }
  EXPECT_EQ(CutUtf8(emoji, 5), "x" + kEmoji);
  EXPECT_EQ(CutUtf8(kEmoji + kEmoji, 3), "");
  EXPECT_EQ(CutUtf8(kEmoji + kEmoji, 3, CutKeep::kEnd), "");
}

TEST(Utf8Cut, TheMarkGoesOnTheSideOfTheCutAndIsNotCounted) {
  EXPECT_EQ(CutUtf8("abcdef", 3, CutKeep::kStart, "…"), "abc…");
  EXPECT_EQ(CutUtf8("abcdef", 3, CutKeep::kEnd, "…"), "…def");
  EXPECT_EQ(CutUtf8("a" + kE, 2, CutKeep::kStart, "\n(cut)"), "a\n(cut)");
  EXPECT_EQ(CutUtf8("abc", 0, CutKeep::kStart, "…"), "…");
}

}  // namespace
}  // namespace baton
