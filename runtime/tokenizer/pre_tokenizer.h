// Pre-tokenizers: split normalized text into the words that BPE encodes one at a time.
// Each GGUF `tokenizer.ggml.pre` name is one factory function in pre_tokenizer.cc.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace jllm::runtime {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Calls `emit` with the words of valid UTF-8 `text` in order; concatenated, they are `text`.
  virtual absl::Status Split(std::string_view text, absl::FunctionRef<void(std::string_view)> emit) const = 0;
};

// The pre-tokenizer that `tokenizer.ggml.pre` names, or an error listing the supported names.
absl::StatusOr<std::unique_ptr<PreTokenizer>> MakePreTokenizer(std::string_view pre);

// "qwen2, ..." for messages.
std::string SupportedPreTokenizers();

}  // namespace jllm::runtime
