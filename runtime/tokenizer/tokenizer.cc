#include "runtime/tokenizer/tokenizer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/status.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/utf8.h"

namespace jllm::runtime {

using gguf::TokenType;

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(const gguf::TokenizerData& data) {
  if (data.model != "gpt2") {
    return absl::UnimplementedError(absl::StrCat("tokenizer.ggml.model '", data.model,
                                                 "' is not supported (supported: gpt2, byte-level BPE)"));
  }
  if (data.tokens.empty()) return absl::InvalidArgumentError("tokenizer.ggml.tokens is empty");
  if (data.token_types.size() != data.tokens.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer.ggml.token_type has ", data.token_types.size(), " entries for ",
                     data.tokens.size(), " tokens"));
  }
  if (data.tokens.size() > (size_t{1} << 30)) {
    return absl::InvalidArgumentError("tokenizer.ggml.tokens: vocabulary too large");
  }
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  ASSIGN_OR_RETURN(tok->pre_, MakePreTokenizer(data.pre));
  ASSIGN_OR_RETURN(tok->bpe_, BpeModel::Create(data));

  const int32_t n = static_cast<int32_t>(data.tokens.size());
  const auto check_id = [n](const char* key, std::optional<uint32_t> id) -> absl::StatusOr<std::optional<int32_t>> {
    if (!id) return std::optional<int32_t>();
    if (*id >= static_cast<uint32_t>(n)) {
      return absl::InvalidArgumentError(absl::StrCat(key, " = ", *id, " is outside the vocabulary of ", n));
    }
    return std::optional<int32_t>(static_cast<int32_t>(*id));
  };
  ASSIGN_OR_RETURN(tok->bos_id_, check_id("tokenizer.ggml.bos_token_id", data.bos_id));
  ASSIGN_OR_RETURN(tok->eos_id_, check_id("tokenizer.ggml.eos_token_id", data.eos_id));
  ASSIGN_OR_RETURN(tok->pad_id_, check_id("tokenizer.ggml.padding_token_id", data.pad_id));
  if (data.add_bos && !tok->bos_id_) {
    return absl::InvalidArgumentError("tokenizer.ggml.add_bos_token is true but there is no bos_token_id");
  }
  tok->add_bos_ = data.add_bos;

  tok->tokens_ = data.tokens;
  tok->types_ = data.token_types;
  tok->bytes_.resize(n);
  std::vector<AddedTokenMatcher::Token> added;
  for (int32_t id = 0; id < n; ++id) {
    const std::string& text = data.tokens[id];
    switch (data.token_types[id]) {
      case TokenType::kNormal:
      case TokenType::kByte: {
        // Hugging Face's byte-level decoder passes through a token that is not all stand-ins.
        std::optional<std::string> bytes = ByteLevelDecode(text);
        tok->bytes_[id] = bytes ? std::move(*bytes) : text;
        break;
      }
      case TokenType::kControl:
      case TokenType::kUserDefined:
      case TokenType::kUnknown:
        tok->bytes_[id] = text;
        tok->added_ids_.try_emplace(text, id);
        added.push_back({text, id, data.token_types[id] == TokenType::kControl});
        break;
      case TokenType::kUnused:
        break;  // never produced by encoding; decodes to nothing
    }
  }
  tok->added_ = std::make_unique<AddedTokenMatcher>(std::move(added));

  if (tok->eos_id_) tok->end_of_generation_.push_back(*tok->eos_id_);
  for (const char* name : {"<|im_end|>", "<|endoftext|>"}) {
    std::optional<int32_t> id = tok->FindAddedToken(name);
    if (id && tok->types_[*id] == TokenType::kControl) tok->end_of_generation_.push_back(*id);
  }
  return tok;
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text,
                                                       const EncodeOptions& options) const {
  std::string sanitized;
  if (!IsValidUtf8(text)) {
    sanitized = ToValidUtf8(text);
    text = sanitized;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  if (options.add_bos && add_bos_) ids.push_back(*bos_id_);
  for (const AddedTokenMatcher::Fragment& f : added_->Split(text, options.parse_special)) {
    if (f.id >= 0) {
      ids.push_back(f.id);
    } else {
      RETURN_IF_ERROR(EncodePlain(f.text, &ids));
    }
  }
  return ids;
}

absl::Status Tokenizer::EncodePlain(std::string_view text, std::vector<int32_t>* ids) const {
  std::string normalized;
  ASSIGN_OR_RETURN(const bool changed, NormalizeNfcIfNeeded(text, &normalized));
  return pre_->Split(changed ? std::string_view(normalized) : text,
                     [this, ids](std::string_view word) { bpe_->EncodeWord(word, ids); });
}

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int32_t> ids,
                                              const DecodeOptions& options) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (!IsValidId(id)) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is outside the vocabulary of ", n_vocab()));
    }
    if (options.skip_control && types_[id] == TokenType::kControl) continue;
    bytes += bytes_[id];
  }
  if (IsValidUtf8(bytes)) return bytes;
  return ToValidUtf8(bytes);
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  return std::find(end_of_generation_.begin(), end_of_generation_.end(), id) != end_of_generation_.end();
}

std::optional<int32_t> Tokenizer::FindAddedToken(std::string_view text) const {
  auto it = added_ids_.find(text);
  if (it == added_ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace jllm::runtime
