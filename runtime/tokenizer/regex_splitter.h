// A compiled PCRE2 pattern (UTF + Unicode properties + JIT) that splits text the way Hugging
// Face's Split pre-tokenizer with behavior "Isolated" does: every match is a piece, and so is
// every stretch of text between matches.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

struct pcre2_real_code_8;  // pcre2.h stays out of the header

namespace jllm::runtime {

class RegexSplitter {
 public:
  static absl::StatusOr<std::unique_ptr<RegexSplitter>> Create(std::string pattern);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Calls `emit` with each piece, in order. `text` must be valid UTF-8 (not re-checked, for
  // speed). Safe to call from several threads.
  absl::Status Split(std::string_view text, absl::FunctionRef<void(std::string_view)> emit) const;
  bool uses_jit() const { return jit_; }

 private:
  RegexSplitter() = default;
  std::string pattern_;
  pcre2_real_code_8* code_ = nullptr;
  bool jit_ = false;
};

}  // namespace jllm::runtime
