// UTF-8 helpers for the tokenizer: validation with U+FFFD substitution, NFC, code point output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace jllm::runtime {

// Appends the UTF-8 encoding of `cp` (which must be a Unicode scalar value).
void AppendUtf8(uint32_t cp, std::string* out);

// Length of the well-formed UTF-8 sequence at the start of `s` (1..4), or 0 if `s` does not start
// with one. `*prefix_len` (if given) receives how many bytes form the longest prefix of a
// well-formed sequence: that is what one U+FFFD replaces, and equals s.size() when the sequence
// is merely cut short.
size_t WellFormedSequenceLength(std::string_view s, size_t* prefix_len = nullptr);

// Appends `s` to `out` with every ill-formed subsequence replaced by U+FFFD, one per maximal
// subpart (the Unicode "best practice" that Python's errors='replace' also follows).
void AppendValidUtf8(std::string_view s, std::string* out);
inline std::string ToValidUtf8(std::string_view s) {
  std::string out;
  AppendValidUtf8(s, &out);
  return out;
}
bool IsValidUtf8(std::string_view s);

// Bytes at the end of `s` that start a well-formed sequence but are cut short, i.e. what a
// streaming decoder must hold back until more bytes arrive (0..3).
size_t IncompleteUtf8TailLength(std::string_view s);

// Unicode Normalization Form C of valid UTF-8 `s` (utf8proc).
absl::StatusOr<std::string> NormalizeNfc(std::string_view s);
// The same without a copy when nothing can change: returns false and leaves `out` alone if `s`
// is its own NFC by a quick check, otherwise true with the normalization in `out`.
absl::StatusOr<bool> NormalizeNfcIfNeeded(std::string_view s, std::string* out);

}  // namespace jllm::runtime
