// The model's tokenizer, built from the vocabulary a GGUF file carries (FORMATS.md §6).
// Encoding matches Hugging Face `tokenizers` on the same tokenizer.json: added tokens first,
// then NFC, the pre-tokenizer regex, byte-level mapping and BPE by merge rank.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "frontends/gguf/tokenizer_data.h"
#include "runtime/tokenizer/added_token_matcher.h"
#include "runtime/tokenizer/bpe_model.h"
#include "runtime/tokenizer/pre_tokenizer.h"
#include "runtime/tokenizer/string_key.h"

namespace jllm::runtime {

struct EncodeOptions {
  // Control tokens written in the text ("<|im_start|>") become their ids; when false they are
  // encoded as plain text. User-defined added tokens ("<think>") are matched either way.
  bool parse_special = true;
  // Prepend BOS when the vocabulary asks for it (tokenizer.ggml.add_bos_token; false for Qwen3).
  bool add_bos = false;
};

struct DecodeOptions {
  bool skip_control = false;  // drop control tokens ("<|im_end|>") instead of printing them
};

class Tokenizer {
 public:
  // Refuses vocabularies it cannot encode exactly: model other than "gpt2", an unknown
  // pre-tokenizer, a byte-level vocabulary with holes, merges naming unknown tokens.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Create(const gguf::TokenizerData& data);

  // Invalid UTF-8 in `text` is read as U+FFFD, one per maximal ill-formed subpart.
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              const EncodeOptions& options = {}) const;

  // Text of `ids`; bytes that do not form valid UTF-8 come out as U+FFFD.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     const DecodeOptions& options = {}) const;

  int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
  bool IsValidId(int32_t id) const { return id >= 0 && id < n_vocab(); }
  // The vocabulary entry as stored (byte-level spelling for ordinary tokens). Valid ids only.
  const std::string& TokenText(int32_t id) const { return tokens_[id]; }
  // The bytes a token stands for when decoded (possibly part of a UTF-8 sequence; empty for
  // unused slots). Valid ids only.
  const std::string& TokenBytes(int32_t id) const { return bytes_[id]; }
  gguf::TokenType TokenTypeOf(int32_t id) const { return types_[id]; }
  bool IsControl(int32_t id) const { return IsValidId(id) && types_[id] == gguf::TokenType::kControl; }
  // End of generation: EOS, and the control tokens "<|im_end|>" and "<|endoftext|>".
  bool IsEndOfGeneration(int32_t id) const;

  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  std::optional<int32_t> pad_id() const { return pad_id_; }
  std::optional<int32_t> FindAddedToken(std::string_view text) const;

  // For benchmarks: switch off the per-word BPE cache.
  void set_bpe_cache_enabled(bool enabled) { bpe_->set_cache_enabled(enabled); }

 private:
  Tokenizer() = default;
  absl::Status EncodePlain(std::string_view text, std::vector<int32_t>* ids) const;

  std::vector<std::string> tokens_;
  std::vector<std::string> bytes_;
  std::vector<gguf::TokenType> types_;
  std::optional<int32_t> bos_id_, eos_id_, pad_id_;
  bool add_bos_ = false;
  std::vector<int32_t> end_of_generation_;
  absl::flat_hash_map<std::string, int32_t, StringKeyHash, StringKeyEq> added_ids_;  // control, user-defined, unknown
  std::unique_ptr<AddedTokenMatcher> added_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unique_ptr<BpeModel> bpe_;
};

}  // namespace jllm::runtime
