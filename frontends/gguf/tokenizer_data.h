// The tokenizer as a GGUF file stores it (FORMATS.md §6): vocabulary, token types, merges,
// special ids and the chat template. Imported from Hugging Face files by jllm-synth, written
// into GGUF metadata, and read back by the runtime's tokenizer. No encoding logic here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/gguf_writer.h"

namespace jllm::gguf {

enum class TokenType : int32_t {
  kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

struct TokenizerData {
  std::string model = "gpt2";  // tokenizer.ggml.model
  std::string pre = "qwen2";   // tokenizer.ggml.pre
  std::vector<std::string> tokens;
  std::vector<TokenType> token_types;  // same length as tokens
  std::vector<std::string> merges;     // "A B", rank = index
  std::optional<uint32_t> bos_id, eos_id, pad_id;
  bool add_bos = false;
  std::string chat_template;  // empty if none
};

// Reads tokenizer.ggml.* and tokenizer.chat_template from a GGUF file, validating lengths and ids.
absl::StatusOr<TokenizerData> ReadTokenizerData(const GgufFile& file);

// Writes the same keys into a GGUF being built.
void WriteTokenizerData(const TokenizerData& data, GgufWriter& writer);

// Imports a Hugging Face tokenizer folder (tokenizer.json + tokenizer_config.json) as the GGUF
// converter would; `n_vocab` pads the vocabulary with "[PAD<id>]" UNUSED tokens (Qwen3: 151936).
absl::StatusOr<TokenizerData> ImportHfTokenizer(const std::string& dir, int64_t n_vocab);
// The files of `dir` that ImportHfTokenizer may read (whether or not they exist), so that a
// writer can refuse to write over one of them.
std::vector<std::string> HfTokenizerFiles(const std::string& dir);

// A small byte-level vocabulary (256 byte tokens + a few ChatML control tokens, no merges) for
// synthetic models made without a tokenizer folder.
TokenizerData ByteLevelTokenizerData();

}  // namespace jllm::gguf
