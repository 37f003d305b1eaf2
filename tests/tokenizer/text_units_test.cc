// UTF-8 handling, NFC, the byte-level alphabet and the qwen2 pre-tokenizer split, against
// expectations worked out by hand from the Unicode rules and the regex.
#include <cstdlib>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/pre_tokenizer.h"
#include "runtime/tokenizer/utf8.h"
#include "utf8proc.h"

namespace jllm::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Test, InvalidSequencesBecomeOneReplacementPerMaximalSubpart) {
  EXPECT_EQ(ToValidUtf8("plain ascii"), "plain ascii");
  EXPECT_EQ(ToValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_EQ(ToValidUtf8("a\xFF" "b"), "a" + kFffd + "b");
  EXPECT_EQ(ToValidUtf8("\xE2\x82"), kFffd);                  // € cut short: one subpart
  EXPECT_EQ(ToValidUtf8("\xE2\x82("), kFffd + "(");
  EXPECT_EQ(ToValidUtf8("\xF0\x9F\x98"), kFffd);              // emoji cut short
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // a UTF-16 surrogate
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), kFffd + kFffd);          // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  EXPECT_EQ(ToValidUtf8("\x80\x80"), kFffd + kFffd);          // stray continuation bytes
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));               // U+10FFFF itself
  EXPECT_FALSE(IsValidUtf8("\xED\xBF\xBF"));
}

TEST(Utf8Test, IncompleteTailIsWhatAStreamMustHoldBack) {
  EXPECT_EQ(IncompleteUtf8TailLength(""), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("abc"), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("a\xF0\x9F"), 2u);
  EXPECT_EQ(IncompleteUtf8TailLength("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8TailLength("a\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("\xC3"), 1u);
  EXPECT_EQ(IncompleteUtf8TailLength("\xE2("), 0u);   // cannot be completed any more
  EXPECT_EQ(IncompleteUtf8TailLength("\xE0\x80"), 0u);  // E0 needs A0..BF next: already invalid
  EXPECT_EQ(IncompleteUtf8TailLength("\x80"), 0u);
}

TEST(Utf8Test, NfcComposesAndMapsSingletons) {
  EXPECT_EQ(*NormalizeNfc("e\xCC\x81"), "\xC3\xA9");               // e + U+0301 -> é
  EXPECT_EQ(*NormalizeNfc("\xE2\x84\xAB"), "\xC3\x85");            // U+212B ANGSTROM SIGN -> Å
  EXPECT_EQ(*NormalizeNfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // jamo -> U+AC00
  EXPECT_EQ(*NormalizeNfc("caf\xC3\xA9 \xE6\x97\xA5"), "caf\xC3\xA9 \xE6\x97\xA5");
  EXPECT_EQ(*NormalizeNfc(""), "");
}

// The quick check that skips utf8proc for stable stretches must not change the answer: compare
// with utf8proc on the whole string, over random mixes of characters that compose, reorder,
// decompose or stand alone.
TEST(Utf8Test, SegmentedNfcEqualsWholeStringNfc) {
  const uint32_t pool[] = {
      'a', 'e', 'A', ' ', 'n', 0xE9, 0xC5, 0x300, 0x301, 0x308, 0x323, 0x327, 0x345, 0x344,  // Latin + marks
      0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01,                                                 // Hangul
      0xB47, 0xB3E, 0xB56, 0xDD9, 0xDCF, 0xDCA, 0xBC6, 0xBBE, 0x1025, 0x102E, 0x3099, 0x304B,  // ccc=0 seconds, kana
      0x212B, 0x2126, 0x958, 0xF900, 0x1E9B, 0xFB01, 0xB2, 0x4E2D, 0x1F600, 0x5B4, 0x5D0};
  std::mt19937 rng(7);
  for (int round = 0; round < 3000; ++round) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) AppendUtf8(pool[rng() % (sizeof(pool) / sizeof(pool[0]))], &s);
    utf8proc_uint8_t* whole = nullptr;
    const auto len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                  static_cast<utf8proc_ssize_t>(s.size()), &whole,
                                  static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    ASSERT_GE(len, 0);
    const std::string expected(reinterpret_cast<const char*>(whole), static_cast<size_t>(len));
    std::free(whole);
    auto got = NormalizeNfc(s);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, expected) << "input bytes: " << ::testing::PrintToString(s);
  }
}

// Canonical ordering of a long run of marks: all U+0323 (class 220) move before all U+0301
// (class 230); the first U+0323 composes with 'a' to U+1EA1, and nothing composes with that.
TEST(Utf8Test, LongRunsOfCombiningMarksAreOrderedAndComposed) {
  std::string input = "a", expected = "\xE1\xBA\xA1";
  for (int i = 0; i < 50000; ++i) input += "\xCC\x81\xCC\xA3";
  for (int i = 0; i < 49999; ++i) expected += "\xCC\xA3";
  for (int i = 0; i < 50000; ++i) expected += "\xCC\x81";
  auto got = NormalizeNfc(input);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == expected);  // not EXPECT_EQ: a mismatch would print 300 kB
}

TEST(ByteLevelTest, StandInsFollowTheGpt2Alphabet) {
  EXPECT_EQ(ByteLevelCodepoint('A'), 0x41u);
  EXPECT_EQ(ByteLevelCodepoint('!'), 0x21u);
  EXPECT_EQ(ByteLevelCodepoint(0x00), 0x100u);
  EXPECT_EQ(ByteLevelCodepoint('\n'), 0x10Au);
  EXPECT_EQ(ByteLevelCodepoint(' '), 0x120u);
  EXPECT_EQ(ByteLevelCodepoint(0x7F), 0x121u);
  EXPECT_EQ(ByteLevelCodepoint(0xA0), 0x142u);
  EXPECT_EQ(ByteLevelCodepoint(0xA1), 0xA1u);
  EXPECT_EQ(ByteLevelCodepoint(0xAD), 0x143u);
  EXPECT_EQ(ByteLevelCodepoint(0xFF), 0xFFu);
  std::set<uint32_t> distinct;
  for (int b = 0; b < 256; ++b) distinct.insert(ByteLevelCodepoint(static_cast<uint8_t>(b)));
  EXPECT_EQ(distinct.size(), 256u);
  EXPECT_EQ(ByteLevelSpelling(' '), "\xC4\xA0");  // "Ġ"
}

TEST(ByteLevelTest, DecodeInvertsTheSpelling) {
  using Bytes = std::optional<std::string>;
  EXPECT_EQ(ByteLevelDecode("\xC4\xA0hello"), Bytes(" hello"));
  EXPECT_EQ(ByteLevelDecode("\xC4\x8A"), Bytes("\n"));
  EXPECT_EQ(ByteLevelDecode("<|im_end|>"), Bytes("<|im_end|>"));  // printable ASCII stands for itself
  EXPECT_EQ(ByteLevelDecode("\xC3\xA6\xC4\xB9\xC2\xA5"), Bytes("\xE6\x97\xA5"));  // "æĹ¥" -> 日
  EXPECT_EQ(ByteLevelDecode("\xC4\xA4"), Bytes("\x82"));  // U+0124 = U+0121 + (0x82 - 0x7F)
  EXPECT_EQ(ByteLevelDecode("\xE6\x97\xA5"), std::nullopt);  // 日 is no stand-in
  EXPECT_EQ(ByteLevelDecode("\xC2\x97"), std::nullopt);       // U+0097: byte 0x97 is spelled U+0139
  EXPECT_EQ(ByteLevelDecode("\xC5\x84"), std::nullopt);       // U+0144: just past the stand-ins
}

std::vector<std::string> Qwen2Split(const std::string& text) {
  auto pre = MakePreTokenizer("qwen2");
  EXPECT_TRUE(pre.ok()) << pre.status();
  std::vector<std::string> words;
  EXPECT_TRUE((*pre)->Split(text, [&words](std::string_view w) { words.emplace_back(w); }).ok());
  return words;
}

// Each expectation follows the regex alternatives in order, by hand.
TEST(Qwen2PreTokenizerTest, SplitsLikeTheReferenceRegex) {
  EXPECT_THAT(Qwen2Split("Hello world"), ElementsAre("Hello", " world"));
  EXPECT_THAT(Qwen2Split("I'M FINE"), ElementsAre("I", "'M", " FINE"));
  EXPECT_THAT(Qwen2Split("don't"), ElementsAre("don", "'t"));
  EXPECT_THAT(Qwen2Split("'ll've"), ElementsAre("'ll", "'ve"));
  EXPECT_THAT(Qwen2Split("12345"), ElementsAre("1", "2", "3", "4", "5"));
  EXPECT_THAT(Qwen2Split("ab12cd 42"), ElementsAre("ab", "1", "2", "cd", " ", "4", "2"));
  EXPECT_THAT(Qwen2Split("a   b"), ElementsAre("a", "  ", " b"));
  EXPECT_THAT(Qwen2Split("a  "), ElementsAre("a", "  "));
  EXPECT_THAT(Qwen2Split("x\r\ny"), ElementsAre("x", "\r\n", "y"));
  EXPECT_THAT(Qwen2Split("a \n b"), ElementsAre("a", " \n", " b"));
  EXPECT_THAT(Qwen2Split("!!!\n\nabc"), ElementsAre("!!!\n\n", "abc"));
  EXPECT_THAT(Qwen2Split("  (x)"), ElementsAre(" ", " (", "x", ")"));
  EXPECT_THAT(Qwen2Split("$hello"), ElementsAre("$hello"));
  // Other scripts' digits and numerals are \p{N}: one per piece.
  EXPECT_THAT(Qwen2Split("\xD9\xA3" "4\xE2\x85\xAB"), ElementsAre("\xD9\xA3", "4", "\xE2\x85\xAB"));
  EXPECT_THAT(Qwen2Split(""), ElementsAre());
}

// Oniguruma's \s (which Hugging Face uses) is the Unicode White_Space property: NEL (U+0085) is
// whitespace, U+180E and U+FEFF are not. PCRE2's own \s would count U+180E as well.
TEST(Qwen2PreTokenizerTest, WhitespaceIsTheUnicodeWhiteSpaceProperty) {
  EXPECT_THAT(Qwen2Split("!\xC2\x85!"), ElementsAre("!", "\xC2\x85", "!"));
  EXPECT_THAT(Qwen2Split("!\xEF\xBB\xBF!"), ElementsAre("!\xEF\xBB\xBF!"));
  EXPECT_THAT(Qwen2Split("a\xE1\xA0\x8E!"), ElementsAre("a", "\xE1\xA0\x8E!"));
  EXPECT_THAT(Qwen2Split("a\xE3\x80\x80\xE3\x80\x80" "b"), ElementsAre("a", "\xE3\x80\x80", "\xE3\x80\x80" "b"));
}

TEST(Qwen2PreTokenizerTest, LongRunsSplitWithoutBlowingUp) {
  const std::string spaces(200000, ' ');
  EXPECT_THAT(Qwen2Split(spaces + "x"), ElementsAre(std::string(199999, ' '), " x"));
  const std::string letters(200000, 'a');
  EXPECT_THAT(Qwen2Split(letters), ElementsAre(letters));
}

TEST(PreTokenizerTest, UnknownNamesAreRefusedNamingTheSupportedOnes) {
  auto pre = MakePreTokenizer("llama3");
  ASSERT_FALSE(pre.ok());
  EXPECT_THAT(std::string(pre.status().message()), HasSubstr("llama3"));
  EXPECT_THAT(std::string(pre.status().message()), HasSubstr("qwen2"));
}

}  // namespace
}  // namespace jllm::runtime
