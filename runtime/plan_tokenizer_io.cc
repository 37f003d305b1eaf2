#include "runtime/plan_tokenizer_io.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "ir/status.h"

namespace jllm::runtime {
namespace {

constexpr uint32_t kMaxTokenBytes = 1u << 16;
constexpr uint32_t kMaxMergeBytes = 2 * kMaxTokenBytes + 1;
constexpr uint32_t kMaxTemplateBytes = 1u << 20;
constexpr uint32_t kMaxNameBytes = 256;  // tokenizer model and pre-tokenizer names

void WriteOptionalId(const std::optional<uint32_t>& id, ir::ByteWriter& w) {
  w.U8(id.has_value() ? 1 : 0);
  w.U32(id.value_or(0));
}

absl::StatusOr<bool> ReadFlag(ir::ByteReader& r, absl::string_view what) {
  ASSIGN_OR_RETURN(uint8_t v, r.U8(what));
  if (v > 1) return r.Error(absl::StrCat(what, ": flag byte is ", v, ", not 0 or 1"));
  return v == 1;
}

absl::StatusOr<std::optional<uint32_t>> ReadOptionalId(ir::ByteReader& r, absl::string_view what,
                                                       size_t n_tokens) {
  ASSIGN_OR_RETURN(bool present, ReadFlag(r, what));
  ASSIGN_OR_RETURN(uint32_t id, r.U32(what));
  if (!present) return std::optional<uint32_t>();
  if (id >= n_tokens) {
    return r.Error(absl::StrCat(what, " ", id, " is not below the vocabulary size ", n_tokens));
  }
  return std::optional<uint32_t>(id);
}

}  // namespace

void WriteTokenizerData(const gguf::TokenizerData& data, ir::ByteWriter& w) {
  w.Str(data.model);
  w.Str(data.pre);
  w.U32(static_cast<uint32_t>(data.tokens.size()));
  for (const auto& t : data.tokens) w.Str(t);
  w.U32(static_cast<uint32_t>(data.token_types.size()));
  for (auto t : data.token_types) w.U32(static_cast<uint32_t>(t));
  w.U32(static_cast<uint32_t>(data.merges.size()));
  for (const auto& m : data.merges) w.Str(m);
  WriteOptionalId(data.bos_id, w);
  WriteOptionalId(data.eos_id, w);
  WriteOptionalId(data.pad_id, w);
  w.U8(data.add_bos ? 1 : 0);
  w.Str(data.chat_template);
}

absl::StatusOr<gguf::TokenizerData> ReadTokenizerData(ir::ByteReader& r) {
  gguf::TokenizerData d;
  ASSIGN_OR_RETURN(d.model, r.Str("tokenizer model", kMaxNameBytes));
  ASSIGN_OR_RETURN(d.pre, r.Str("tokenizer pre", kMaxNameBytes));
  ASSIGN_OR_RETURN(uint32_t n_tokens, r.Count("token count", 4));
  d.tokens.reserve(n_tokens);
  for (uint32_t i = 0; i < n_tokens; ++i) {
    ASSIGN_OR_RETURN(std::string t, r.Str("token text", kMaxTokenBytes));
    d.tokens.push_back(std::move(t));
  }
  ASSIGN_OR_RETURN(uint32_t n_types, r.Count("token type count", 4));
  if (n_types != n_tokens) {
    return r.Error(absl::StrCat(n_types, " token types for ", n_tokens, " tokens"));
  }
  d.token_types.reserve(n_types);
  for (uint32_t i = 0; i < n_types; ++i) {
    ASSIGN_OR_RETURN(uint32_t t, r.U32("token type"));
    if (t < 1 || t > 6) {
      return r.Error(absl::StrCat("token ", i, " has type ", t, ", not one of 1..6"));
    }
    d.token_types.push_back(static_cast<gguf::TokenType>(t));
  }
  ASSIGN_OR_RETURN(uint32_t n_merges, r.Count("merge count", 4));
  d.merges.reserve(n_merges);
  for (uint32_t i = 0; i < n_merges; ++i) {
    ASSIGN_OR_RETURN(std::string m, r.Str("merge", kMaxMergeBytes));
    d.merges.push_back(std::move(m));
  }
  ASSIGN_OR_RETURN(d.bos_id, ReadOptionalId(r, "bos id", n_tokens));
  ASSIGN_OR_RETURN(d.eos_id, ReadOptionalId(r, "eos id", n_tokens));
  ASSIGN_OR_RETURN(d.pad_id, ReadOptionalId(r, "pad id", n_tokens));
  ASSIGN_OR_RETURN(d.add_bos, ReadFlag(r, "add_bos flag"));
  ASSIGN_OR_RETURN(d.chat_template, r.Str("chat template", kMaxTemplateBytes));
  return d;
}

absl::Status CheckTokenizerFitsPlan(const gguf::TokenizerData& data) {
  const auto too_long = [](absl::string_view what, size_t have, uint32_t limit) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", have,
                                                   " bytes, over the plan format's limit of ",
                                                   limit, " bytes"));
  };
  if (data.model.size() > kMaxNameBytes) {
    return too_long("tokenizer.ggml.model", data.model.size(), kMaxNameBytes);
  }
  if (data.pre.size() > kMaxNameBytes) {
    return too_long("tokenizer.ggml.pre", data.pre.size(), kMaxNameBytes);
  }
  for (size_t i = 0; i < data.tokens.size(); ++i) {
    if (data.tokens[i].size() > kMaxTokenBytes) {
      return too_long(absl::StrCat("tokenizer.ggml.tokens[", i, "]"), data.tokens[i].size(),
                      kMaxTokenBytes);
    }
  }
  for (size_t i = 0; i < data.merges.size(); ++i) {
    if (data.merges[i].size() > kMaxMergeBytes) {
      return too_long(absl::StrCat("tokenizer.ggml.merges[", i, "]"), data.merges[i].size(),
                      kMaxMergeBytes);
    }
  }
  if (data.chat_template.size() > kMaxTemplateBytes) {
    return too_long("tokenizer.chat_template", data.chat_template.size(), kMaxTemplateBytes);
  }
  return absl::OkStatus();
}

}  // namespace jllm::runtime
