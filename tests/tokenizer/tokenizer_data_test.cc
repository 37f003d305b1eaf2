// TokenizerData through GGUF metadata (write, read back, validation) and the import of Hugging
// Face tokenizer folders, on small hand-made inputs.
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/gguf_writer.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/temp_files.h"

namespace jllm::gguf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using ::jllm::testing::TempPath;

absl::StatusOr<TokenizerData> ReadBack(GgufWriter& writer, const std::string& name) {
  const std::string path = TempPath(name);
  absl::Status written = writer.Write(path);
  if (!written.ok()) return written;
  auto file = GgufFile::Open(path);
  std::filesystem::remove(path);  // the file stays mapped until `file` goes
  if (!file.ok()) return file.status();
  return ReadTokenizerData(**file);
}

TEST(TokenizerDataTest, ByteLevelVocabularyRoundTripsThroughGguf) {
  TokenizerData d = ByteLevelTokenizerData();
  d.merges = {"a b", "\xC4\xA0 t"};
  d.chat_template = "{{ '<|im_start|>' }}";
  GgufWriter writer;
  WriteTokenizerData(d, writer);
  auto back = ReadBack(writer, "tok_roundtrip.gguf");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->model, "gpt2");
  EXPECT_EQ(back->pre, "qwen2");
  EXPECT_EQ(back->tokens, d.tokens);
  EXPECT_EQ(back->token_types, d.token_types);
  EXPECT_EQ(back->merges, d.merges);
  EXPECT_EQ(back->bos_id, d.bos_id);
  EXPECT_EQ(back->eos_id, d.eos_id);
  EXPECT_EQ(back->pad_id, d.pad_id);
  EXPECT_EQ(back->add_bos, d.add_bos);
  EXPECT_EQ(back->chat_template, d.chat_template);
}

TEST(TokenizerDataTest, ByteLevelVocabularyLayout) {
  const TokenizerData d = ByteLevelTokenizerData();
  ASSERT_EQ(d.tokens.size(), d.token_types.size());
  ASSERT_GE(d.tokens.size(), 259u);
  EXPECT_EQ(d.tokens['A'], "A");
  EXPECT_EQ(d.tokens[' '], "\xC4\xA0");   // U+0120
  EXPECT_EQ(d.tokens['\n'], "\xC4\x8A");  // U+010A
  ASSERT_TRUE(d.eos_id.has_value());
  EXPECT_EQ(d.tokens[*d.eos_id], "<|im_end|>");
  EXPECT_EQ(d.token_types[*d.eos_id], TokenType::kControl);
}

TEST(TokenizerDataTest, ReadRefusesInconsistentMetadata) {
  {
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "gpt2");
    w.SetStringArray("tokenizer.ggml.tokens", {"a", "b"});
    w.SetInt32Array("tokenizer.ggml.token_type", {1});
    auto r = ReadBack(w, "tok_bad_types.gguf");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("tokenizer.ggml.token_type"));
  }
  {
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "gpt2");
    w.SetStringArray("tokenizer.ggml.tokens", {"a", "b"});
    w.SetInt32Array("tokenizer.ggml.token_type", {1, 9});
    auto r = ReadBack(w, "tok_bad_type_value.gguf");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("token 1 has type 9"));
  }
  {
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "gpt2");
    w.SetStringArray("tokenizer.ggml.tokens", {"a", "b"});
    w.SetUint32("tokenizer.ggml.eos_token_id", 2);
    auto r = ReadBack(w, "tok_bad_eos.gguf");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("tokenizer.ggml.eos_token_id"));
  }
  {
    GgufWriter w;  // ids must be UINT32, as llama.cpp requires
    w.SetString("tokenizer.ggml.model", "gpt2");
    w.SetStringArray("tokenizer.ggml.tokens", {"a", "b"});
    w.SetInt32("tokenizer.ggml.bos_token_id", 1);
    EXPECT_FALSE(ReadBack(w, "tok_bos_int32.gguf").ok());
  }
  {
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "gpt2");
    auto r = ReadBack(w, "tok_no_tokens.gguf");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("tokenizer.ggml.tokens"));
  }
  {
    GgufWriter w;  // optional keys absent: defaults, and pre reads as llama.cpp's "default"
    w.SetString("tokenizer.ggml.model", "gpt2");
    w.SetStringArray("tokenizer.ggml.tokens", {"a", "b"});
    auto r = ReadBack(w, "tok_minimal.gguf");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->pre, "default");
    EXPECT_THAT(r->token_types, ElementsAre(TokenType::kNormal, TokenType::kNormal));
    EXPECT_FALSE(r->bos_id.has_value());
    EXPECT_TRUE(r->merges.empty());
  }
}

// A tiny Hugging Face folder: vocabulary a, b, ab, Ġ; merges as "A B" strings; three added tokens.
std::string WriteHfFolder(const std::string& name, const std::string& merges_json,
                          const std::string& regex_json) {
  const std::filesystem::path dir = TempPath(name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json")
      << R"({"normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
              {"type": "Split", "pattern": {"Regex": )" << regex_json << R"(}, "behavior": "Isolated"},
              {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
            "added_tokens": [
              {"id": 4, "content": "<|endoftext|>", "special": true},
              {"id": 5, "content": "<think>", "special": false},
              {"id": 6, "content": "<|fim_pad|>", "special": false}],
            "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3},
                      "merges": )" << merges_json << "}}";
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"add_bos_token": false, "eos_token": "<|endoftext|>", "pad_token": {"content": "<|endoftext|>"},
            "chat_template": "{{ '<|im_start|>' }}"})";
  return dir.string();
}

const char* kQwen2RegexJson =
    R"("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")";

TEST(ImportHfTokenizerTest, FollowsTheGgufConverter) {
  const std::string dir = WriteHfFolder("hf_strings", R"(["a b"])", kQwen2RegexJson);
  auto d = ImportHfTokenizer(dir, 9);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->model, "gpt2");
  EXPECT_EQ(d->pre, "qwen2");
  EXPECT_THAT(d->tokens, ElementsAre("a", "b", "ab", "\xC4\xA0", "<|endoftext|>", "<think>",
                                     "<|fim_pad|>", "[PAD7]", "[PAD8]"));
  EXPECT_THAT(d->token_types,
              ElementsAre(TokenType::kNormal, TokenType::kNormal, TokenType::kNormal, TokenType::kNormal,
                          TokenType::kControl,       // HF special
                          TokenType::kUserDefined,   // not special, does not look special
                          TokenType::kControl,       // not special, but looks like <|...|>
                          TokenType::kUnused, TokenType::kUnused));
  EXPECT_THAT(d->merges, ElementsAre("a b"));
  EXPECT_EQ(d->eos_id, 4u);
  EXPECT_EQ(d->pad_id, 4u);
  EXPECT_EQ(d->bos_id, 4u);  // no config.json: <|endoftext|>, as Qwen's config.json says
  EXPECT_FALSE(d->add_bos);
  EXPECT_EQ(d->chat_template, "{{ '<|im_start|>' }}");
}

TEST(ImportHfTokenizerTest, MergesMayBePairs) {
  const std::string dir = WriteHfFolder("hf_pairs", R"([["a", "b"]])", kQwen2RegexJson);
  auto d = ImportHfTokenizer(dir, 0);  // 0: no padding
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(d->merges, ElementsAre("a b"));
  EXPECT_EQ(d->tokens.size(), 7u);
}

TEST(ImportHfTokenizerTest, RefusesWhatItCannotRepresent) {
  auto unknown_regex = ImportHfTokenizer(WriteHfFolder("hf_regex", R"(["a b"])", R"("\\w+")"), 9);
  ASSERT_FALSE(unknown_regex.ok());
  EXPECT_THAT(std::string(unknown_regex.status().message()), HasSubstr("qwen2"));

  auto too_small = ImportHfTokenizer(WriteHfFolder("hf_small", R"(["a b"])", kQwen2RegexJson), 5);
  ASSERT_FALSE(too_small.ok());
  EXPECT_THAT(std::string(too_small.status().message()), HasSubstr("n_vocab"));

  auto bad_merge = ImportHfTokenizer(WriteHfFolder("hf_badmerge", R"([42])", kQwen2RegexJson), 9);
  EXPECT_FALSE(bad_merge.ok());

  auto missing = ImportHfTokenizer(::testing::TempDir() + "/no_such_folder", 9);
  EXPECT_FALSE(missing.ok());

  const std::filesystem::path broken = TempPath("hf_broken");
  std::filesystem::create_directories(broken);
  std::ofstream(broken / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": [1, 2]}})";
  auto wrong_shape = ImportHfTokenizer(broken.string(), 9);
  EXPECT_FALSE(wrong_shape.ok());
  for (const char* name : {"hf_regex", "hf_small", "hf_badmerge", "hf_broken"}) std::filesystem::remove_all(TempPath(name));
}

}  // namespace
}  // namespace jllm::gguf
