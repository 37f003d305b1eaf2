// Human-readable renderings of GGUF metadata values and tensor shapes (jllm-inspect and dumps).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "frontends/gguf/gguf_file.h"

namespace jllm::gguf {

// A string in double quotes with C escapes; longer than `max_chars` bytes it is cut and the
// full length appended, e.g. "{%- if tools %}..." (4123 bytes).
std::string QuoteString(std::string_view s, size_t max_chars = 60);

// "UINT32" or "[STRING]".
std::string ValueTypeLabel(const Value& v);

// A scalar's value, or for arrays "N items: [a, b, c, ...]" showing at most `max_items`.
std::string FormatValue(const Value& v, size_t max_items = 8);

// "[1024, 151936]": the first n_dims entries of ne (at least one).
std::string ShapeString(const TensorInfo& t);

}  // namespace jllm::gguf
