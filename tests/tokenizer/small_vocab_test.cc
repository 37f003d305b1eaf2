// The tokenizer on a tiny hand-made byte-level vocabulary, where every expected id can be worked
// out by hand: BPE merge order, added-token matching, decoding, streaming, refusals.
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/tokenizer/stream_decoder.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/utf8.h"

namespace jllm::runtime {
namespace {

using gguf::TokenizerData;
using gguf::TokenType;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

const std::string kFffd = "\xEF\xBF\xBD";

// GPT-2's bytes_to_unicode, written as its reference does it: the printable bytes keep their
// code point, the rest are appended in order and take 256, 257, ...
std::string GptSpelling(int byte) {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
  std::vector<int> cs = bs;
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
      bs.push_back(b);
      cs.push_back(256 + n++);
    }
  }
  const int cp = cs[std::find(bs.begin(), bs.end(), byte) - bs.begin()];
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// ids 0..255: the bytes; then merged tokens; then added tokens.
enum : int32_t {
  kHe = 256, kLl, kHell, kHello, kSpaceW, kBc, kAb, kAa,
  kImStart, kImEnd, kThink, kTool, kToolCall,
};

TokenizerData SmallVocab() {
  TokenizerData d;
  d.model = "gpt2";
  d.pre = "qwen2";
  for (int b = 0; b < 256; ++b) {
    d.tokens.push_back(GptSpelling(b));
    d.token_types.push_back(TokenType::kNormal);
  }
  for (const char* t : {"he", "ll", "hell", "hello", "\xC4\xA0w", "bc", "ab", "aa"}) {
    d.tokens.push_back(t);
    d.token_types.push_back(TokenType::kNormal);
  }
  d.tokens.insert(d.tokens.end(), {"<|im_start|>", "<|im_end|>", "<think>", "<tool>", "<tool_call>"});
  d.token_types.insert(d.token_types.end(), {TokenType::kControl, TokenType::kControl, TokenType::kUserDefined,
                                             TokenType::kUserDefined, TokenType::kUserDefined});
  // Rank order matters: "b c" outranks "a b".
  d.merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "b c", "a b", "a a"};
  d.eos_id = kImEnd;
  return d;
}

std::unique_ptr<Tokenizer> Make(const TokenizerData& d) {
  auto t = Tokenizer::Create(d);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

std::vector<int32_t> Enc(const Tokenizer& t, std::string_view text, bool parse_special = true) {
  auto ids = t.Encode(text, {.parse_special = parse_special});
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

std::vector<int32_t> Bytes(std::string_view s) {
  std::vector<int32_t> ids;
  for (char c : s) ids.push_back(static_cast<uint8_t>(c));
  return ids;
}

TEST(SmallVocabTest, BpeMergesByRankLeftmostFirst) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(Enc(*t, "hello"), ElementsAre(kHello));
  EXPECT_THAT(Enc(*t, "hell"), ElementsAre(kHell));
  EXPECT_THAT(Enc(*t, "helo"), ElementsAre(kHe, 'l', 'o'));
  EXPECT_THAT(Enc(*t, "abc"), ElementsAre('a', kBc));  // "b c" ranks before "a b"
  EXPECT_THAT(Enc(*t, "ab"), ElementsAre(kAb));
  EXPECT_THAT(Enc(*t, "aaa"), ElementsAre(kAa, 'a'));  // tie: the leftmost pair merges first
  EXPECT_THAT(Enc(*t, "aaaaa"), ElementsAre(kAa, kAa, 'a'));
  EXPECT_THAT(Enc(*t, "hello world"), ElementsAre(kHello, kSpaceW, 'o', 'r', 'l', 'd'));
  EXPECT_THAT(Enc(*t, ""), ElementsAre());
  // Twice, so the second answer comes from the word cache.
  EXPECT_THAT(Enc(*t, "hello hello"), ElementsAre(kHello, ' ', kHello));
  EXPECT_THAT(Enc(*t, "hello hello"), ElementsAre(kHello, ' ', kHello));
}

TEST(SmallVocabTest, LongWordsMergeCorrectly) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  // 20001 'a's: pairs from the left, one 'a' left over.
  std::vector<int32_t> expected(10000, kAa);
  expected.push_back('a');
  EXPECT_THAT(Enc(*t, std::string(20001, 'a')), ElementsAreArray(expected));
}

TEST(SmallVocabTest, AddedTokensMatchFirstLongestAndWhole) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(Enc(*t, "<|im_start|>hello<|im_end|>"), ElementsAre(kImStart, kHello, kImEnd));
  EXPECT_THAT(Enc(*t, "<tool_call>"), ElementsAre(kToolCall));
  EXPECT_THAT(Enc(*t, "<tool>_call>"), ElementsAre(kTool, '_', 'c', 'a', kLl, '>'));
  EXPECT_THAT(Enc(*t, "a<think>b"), ElementsAre('a', kThink, 'b'));
  EXPECT_THAT(Enc(*t, "<|im_<|im_end|>"), ElementsAre('<', '|', 'i', 'm', '_', kImEnd));
}

TEST(SmallVocabTest, WithoutParseSpecialControlTokensArePlainText) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  std::vector<int32_t> expected = Bytes("<|im_start|>");
  expected.push_back(kHello);
  for (int32_t id : Bytes("<|im_end|>")) expected.push_back(id);
  EXPECT_THAT(Enc(*t, "<|im_start|>hello<|im_end|>", false), ElementsAreArray(expected));
  // User-defined tokens are still matched.
  EXPECT_THAT(Enc(*t, "a<think>b", false), ElementsAre('a', kThink, 'b'));
}

TEST(SmallVocabTest, InputIsNfcNormalizedAndInvalidUtf8IsReplaced) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  EXPECT_THAT(Enc(*t, "e\xCC\x81"), ElementsAre(0xC3, 0xA9));          // é, composed
  EXPECT_THAT(Enc(*t, "a\xFF" "b"), ElementsAre('a', 0xEF, 0xBF, 0xBD, 'b'));  // U+FFFD
}

TEST(SmallVocabTest, AddBosOnlyWhenTheVocabularyAsksForIt) {
  TokenizerData d = SmallVocab();
  d.bos_id = kImStart;
  auto without = Make(d);
  ASSERT_NE(without, nullptr);
  auto ids = without->Encode("ab", {.add_bos = true});
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(kAb));
  d.add_bos = true;
  auto with = Make(d);
  ASSERT_NE(with, nullptr);
  ids = with->Encode("ab", {.add_bos = true});
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(kImStart, kAb));
}

TEST(SmallVocabTest, DecodeShowsOrHidesControlTokens) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(*t->Decode({kHello, kSpaceW, 'o'}), "hello wo");
  EXPECT_EQ(*t->Decode({kImStart, kHello, kThink, kImEnd}), "<|im_start|>hello<think><|im_end|>");
  EXPECT_EQ(*t->Decode({kImStart, kHello, kThink, kImEnd}, {.skip_control = true}), "hello<think>");
  EXPECT_EQ(*t->Decode({0xF0, 0x9F}), kFffd);  // a cut-short emoji
  EXPECT_FALSE(t->Decode({kToolCall + 1}).ok());
  EXPECT_FALSE(t->Decode({-1}).ok());
  EXPECT_TRUE(t->IsEndOfGeneration(kImEnd));
  EXPECT_FALSE(t->IsEndOfGeneration(kImStart));
  EXPECT_EQ(t->FindAddedToken("<think>"), kThink);
  EXPECT_FALSE(t->FindAddedToken("hello").has_value());
}

TEST(StreamDecoderTest, HoldsAnEmojiUntilItsLastByteArrives) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  StreamDecoder stream(*t);
  const std::vector<int32_t> emoji = Bytes("\xF0\x9F\x98\x80");
  EXPECT_EQ(*stream.Push(emoji[0]), "");
  EXPECT_EQ(*stream.Push(emoji[1]), "");
  EXPECT_EQ(*stream.Push(emoji[2]), "");
  EXPECT_EQ(*stream.Push(emoji[3]), "\xF0\x9F\x98\x80");
  EXPECT_EQ(*stream.Push(kHello), "hello");
  EXPECT_EQ(stream.Finish(), "");
}

TEST(StreamDecoderTest, BytesThatCannotCompleteBecomeReplacementCharacters) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  StreamDecoder stream(*t);
  EXPECT_EQ(*stream.Push('a'), "a");
  EXPECT_EQ(*stream.Push(0xF0), "");
  EXPECT_EQ(*stream.Push(0x9F), "");
  EXPECT_EQ(*stream.Push('b'), kFffd + "b");
  EXPECT_EQ(*stream.Push(0xE2), "");
  EXPECT_EQ(stream.Finish(), kFffd);
  EXPECT_FALSE(stream.Push(-5).ok());
}

TEST(StreamDecoderTest, CanHideControlTokens) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  StreamDecoder stream(*t, {.skip_control = true});
  EXPECT_EQ(*stream.Push(kImStart), "");
  EXPECT_EQ(*stream.Push('a'), "a");
  EXPECT_EQ(*stream.Push(kThink), "<think>");
  EXPECT_EQ(*stream.Push(kImEnd), "");
}

TEST(StreamDecoderTest, PiecesAreValidAndAddUpToTheWholeDecode) {
  auto t = Make(SmallVocab());
  ASSERT_NE(t, nullptr);
  std::mt19937 rng(1234);
  for (int round = 0; round < 200; ++round) {
    std::vector<int32_t> ids;
    const int n = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) {
      // Mostly bytes of multi-byte sequences, sometimes whole tokens.
      const uint32_t r = rng() % 10;
      ids.push_back(r < 7 ? static_cast<int32_t>(0x80 + rng() % 0x78) : static_cast<int32_t>(rng() % (kToolCall + 1)));
    }
    StreamDecoder stream(*t);
    std::string joined;
    for (int32_t id : ids) {
      auto piece = stream.Push(id);
      ASSERT_TRUE(piece.ok());
      EXPECT_TRUE(IsValidUtf8(*piece));
      joined += *piece;
    }
    joined += stream.Finish();
    EXPECT_EQ(joined, *t->Decode(ids));
  }
}

TEST(TokenizerRefusalTest, OnlyGpt2WithAKnownPreTokenizer) {
  TokenizerData d = SmallVocab();
  d.model = "llama";
  auto t = Tokenizer::Create(d);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("'llama'"));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("gpt2"));

  d = SmallVocab();
  d.pre = "llama-bpe";
  t = Tokenizer::Create(d);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("llama-bpe"));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("qwen2"));
}

TEST(TokenizerRefusalTest, VocabulariesItCannotEncodeWith) {
  TokenizerData d = SmallVocab();
  d.tokens['A'] = "A2";  // byte 0x41 now has no token
  auto t = Tokenizer::Create(d);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("0x41"));

  d = SmallVocab();
  d.merges.push_back("q zz");
  t = Tokenizer::Create(d);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("merges[8]"));

  d = SmallVocab();
  d.merges.push_back("q r");  // "qr" is not a token
  EXPECT_FALSE(Tokenizer::Create(d).ok());

  d = SmallVocab();
  d.merges.push_back("nospace");
  EXPECT_FALSE(Tokenizer::Create(d).ok());

  d = SmallVocab();
  d.token_types.pop_back();
  EXPECT_FALSE(Tokenizer::Create(d).ok());

  d = SmallVocab();
  d.bos_id = 100000;
  t = Tokenizer::Create(d);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("bos_token_id"));
}

}  // namespace
}  // namespace jllm::runtime
