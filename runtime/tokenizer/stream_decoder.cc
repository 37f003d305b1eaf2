#include "runtime/tokenizer/stream_decoder.h"

#include "absl/strings/str_cat.h"
#include "runtime/tokenizer/utf8.h"

namespace jllm::runtime {

absl::StatusOr<std::string> StreamDecoder::Push(int32_t id) {
  if (!tokenizer_.IsValidId(id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("token id ", id, " is outside the vocabulary of ", tokenizer_.n_vocab()));
  }
  if (options_.skip_control && tokenizer_.TokenTypeOf(id) == gguf::TokenType::kControl) return std::string();
  pending_ += tokenizer_.TokenBytes(id);
  const size_t hold = IncompleteUtf8TailLength(pending_);
  std::string out;
  AppendValidUtf8(std::string_view(pending_).substr(0, pending_.size() - hold), &out);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StreamDecoder::Finish() {
  std::string out = ToValidUtf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace jllm::runtime
