// Decodes tokens one at a time as a model generates them. A character whose UTF-8 bytes are
// spread over several tokens (emoji, CJK) is held back until it is complete, so every string
// returned is valid UTF-8; bytes that can never become a character come out as U+FFFD.
// All pieces concatenated equal Tokenizer::Decode of all the ids.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/tokenizer/tokenizer.h"

namespace jllm::runtime {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, DecodeOptions options = {})
      : tokenizer_(tokenizer), options_(options) {}

  // The text that `id` completes (possibly empty).
  absl::StatusOr<std::string> Push(int32_t id);
  // What is still held, as U+FFFD, at the end of the stream; the decoder is then empty.
  std::string Finish();

 private:
  const Tokenizer& tokenizer_;
  DecodeOptions options_;
  std::string pending_;  // the start of a UTF-8 sequence still missing bytes (at most 3 bytes)
};

}  // namespace jllm::runtime
