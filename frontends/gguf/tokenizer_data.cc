// TokenizerData <-> GGUF metadata (FORMATS.md §6), and the small synthetic byte-level vocabulary.
#include "frontends/gguf/tokenizer_data.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "ir/status.h"

namespace jllm::gguf {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kTokenTypeKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kBosKey = "tokenizer.ggml.bos_token_id";
constexpr std::string_view kEosKey = "tokenizer.ggml.eos_token_id";
constexpr std::string_view kPadKey = "tokenizer.ggml.padding_token_id";
constexpr std::string_view kAddBosKey = "tokenizer.ggml.add_bos_token";
constexpr std::string_view kChatTemplateKey = "tokenizer.chat_template";

// Token ids are int32 everywhere downstream.
constexpr size_t kMaxTokens = size_t{1} << 30;

absl::Status Invalid(const GgufFile& file, std::string_view key, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file.path(), ": ", std::string(key), ": ", std::string(what)));
}

// An optional special-token id: absent is fine, present must be a UINT32 inside the vocabulary.
absl::StatusOr<std::optional<uint32_t>> ReadTokenId(const GgufFile& file, std::string_view key,
                                                    size_t n_tokens) {
  if (file.Find(key) == nullptr) return std::optional<uint32_t>();
  ASSIGN_OR_RETURN(uint32_t id, file.GetUint32(key));
  if (id >= n_tokens) {
    return Invalid(file, key,
                   absl::StrCat("token id ", id, " is outside the vocabulary of ", n_tokens, " tokens"));
  }
  return std::optional<uint32_t>(id);
}

}  // namespace

absl::StatusOr<TokenizerData> ReadTokenizerData(const GgufFile& file) {
  TokenizerData data;
  ASSIGN_OR_RETURN(data.model, file.GetString(kModelKey));
  // llama.cpp treats a missing pre-tokenizer as "default"; the tokenizer then names what it supports.
  if (file.Find(kPreKey) != nullptr) {
    ASSIGN_OR_RETURN(data.pre, file.GetString(kPreKey));
  } else {
    data.pre = "default";
  }

  ASSIGN_OR_RETURN(const std::vector<std::string>* tokens, file.GetStringArray(kTokensKey));
  if (tokens->empty()) return Invalid(file, kTokensKey, "the vocabulary is empty");
  if (tokens->size() > kMaxTokens) {
    return Invalid(file, kTokensKey, absl::StrCat(tokens->size(), " tokens is more than supported"));
  }
  data.tokens = *tokens;
  const size_t n = data.tokens.size();

  if (file.Find(kTokenTypeKey) != nullptr) {
    ASSIGN_OR_RETURN(const std::vector<int64_t>* types, file.GetIntArray(kTokenTypeKey));
    if (types->size() != n) {
      return Invalid(file, kTokenTypeKey,
                     absl::StrCat("has ", types->size(), " entries but there are ", n, " tokens"));
    }
    data.token_types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = (*types)[i];
      if (t < static_cast<int64_t>(TokenType::kNormal) || t > static_cast<int64_t>(TokenType::kByte)) {
        return Invalid(file, kTokenTypeKey,
                       absl::StrCat("token ", i, " has type ", t, "; valid types are 1..6"));
      }
      data.token_types.push_back(static_cast<TokenType>(t));
    }
  } else {
    data.token_types.assign(n, TokenType::kNormal);
  }

  if (file.Find(kMergesKey) != nullptr) {
    ASSIGN_OR_RETURN(const std::vector<std::string>* merges, file.GetStringArray(kMergesKey));
    data.merges = *merges;
  }

  ASSIGN_OR_RETURN(data.bos_id, ReadTokenId(file, kBosKey, n));
  ASSIGN_OR_RETURN(data.eos_id, ReadTokenId(file, kEosKey, n));
  ASSIGN_OR_RETURN(data.pad_id, ReadTokenId(file, kPadKey, n));
  if (file.Find(kAddBosKey) != nullptr) {
    ASSIGN_OR_RETURN(data.add_bos, file.GetBool(kAddBosKey));
  }
  if (file.Find(kChatTemplateKey) != nullptr) {
    ASSIGN_OR_RETURN(data.chat_template, file.GetString(kChatTemplateKey));
  }
  return data;
}

void WriteTokenizerData(const TokenizerData& data, GgufWriter& writer) {
  writer.SetString(std::string(kModelKey), data.model);
  writer.SetString(std::string(kPreKey), data.pre);
  writer.SetStringArray(std::string(kTokensKey), data.tokens);
  std::vector<int32_t> types;
  types.reserve(data.token_types.size());
  for (TokenType t : data.token_types) types.push_back(static_cast<int32_t>(t));
  writer.SetInt32Array(std::string(kTokenTypeKey), std::move(types));
  if (!data.merges.empty()) writer.SetStringArray(std::string(kMergesKey), data.merges);
  if (data.bos_id) writer.SetUint32(std::string(kBosKey), *data.bos_id);
  if (data.eos_id) writer.SetUint32(std::string(kEosKey), *data.eos_id);
  if (data.pad_id) writer.SetUint32(std::string(kPadKey), *data.pad_id);
  writer.SetBool(std::string(kAddBosKey), data.add_bos);
  if (!data.chat_template.empty()) {
    writer.SetString(std::string(kChatTemplateKey), data.chat_template);
  }
}

TokenizerData ByteLevelTokenizerData() {
  TokenizerData data;
  data.model = "gpt2";
  data.pre = "qwen2";
  // Byte b is spelled as the GPT-2 byte-level character for b (FORMATS.md §6, step 3), so the
  // byte-level BPE tokenizer encodes any text with these 256 tokens and no merges.
  int next_remapped = 0x100;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(next_remapped++);
    std::string s;
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else {  // every code point here is below U+0800: two UTF-8 bytes
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    data.tokens.push_back(std::move(s));
    data.token_types.push_back(TokenType::kNormal);
  }
  const auto add = [&data](std::string text, TokenType type) {
    data.tokens.push_back(std::move(text));
    data.token_types.push_back(type);
    return static_cast<uint32_t>(data.tokens.size() - 1);
  };
  const uint32_t endoftext = add("<|endoftext|>", TokenType::kControl);
  add("<|im_start|>", TokenType::kControl);
  const uint32_t im_end = add("<|im_end|>", TokenType::kControl);
  add("<think>", TokenType::kUserDefined);
  add("</think>", TokenType::kUserDefined);
  data.bos_id = endoftext;
  data.eos_id = im_end;
  data.pad_id = endoftext;
  data.add_bos = false;
  return data;
}

}  // namespace jllm::gguf
