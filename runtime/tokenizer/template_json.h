// JSON as chat templates write it with their `tojson` filter (Hugging Face transformers:
// Python's json.dumps with ensure_ascii=False): ", " between items, ": " after keys, keys in
// the order given, non-ASCII characters as they are. Qwen3 learned tool declarations and tool
// calls in this spelling, so prompts must use it byte for byte.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace jllm::runtime {

std::string TemplateJson(const nlohmann::ordered_json& value);

}  // namespace jllm::runtime
