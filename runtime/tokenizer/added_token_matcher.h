// Finds added tokens (control and user-defined, e.g. "<|im_start|>", "<think>") written in the
// text, as Hugging Face does before normalizing: the leftmost match wins, the longest token on a
// tie, and a match is never split. The text between matches goes on to NFC, the pre-tokenizer
// and BPE.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jllm::runtime {

class AddedTokenMatcher {
 public:
  struct Token {
    std::string text;
    int32_t id;
    bool control;  // skipped when special tokens are not parsed
  };
  explicit AddedTokenMatcher(std::vector<Token> tokens);

  // A piece of the input: plain text (id < 0) or one added token.
  struct Fragment {
    std::string_view text;
    int32_t id;
  };
  // With parse_special = false, control tokens are plain text; user-defined ones still match.
  std::vector<Fragment> Split(std::string_view text, bool parse_special) const;

 private:
  // Candidates by first byte, longest first, so the first hit at a position is the longest.
  std::array<std::vector<int32_t>, 256> by_first_byte_;
  std::vector<Token> tokens_;
};

}  // namespace jllm::runtime
