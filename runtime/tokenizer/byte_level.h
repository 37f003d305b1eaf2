// GPT-2's byte-level alphabet (FORMATS.md §6, step 3): every byte has a printable stand-in
// character, so byte strings can be spelled as vocabulary entries.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jllm::runtime {

// The stand-in code point for byte `b`.
uint32_t ByteLevelCodepoint(uint8_t b);

// The UTF-8 spelling of byte `b`'s stand-in (one or two bytes).
const std::string& ByteLevelSpelling(uint8_t b);

// The bytes a vocabulary entry stands for, or nullopt if it contains a character that is not
// a byte stand-in (added tokens such as "<|im_end|>" are plain text and never need this).
std::optional<std::string> ByteLevelDecode(std::string_view token);

}  // namespace jllm::runtime
