// The JSON type the server speaks: nlohmann's ordered_json, so that objects keep the order of
// their keys (tool declarations are rendered into the prompt in the order the client sent, and
// responses list fields in OpenAI's order).
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace jllm::server {

using Json = nlohmann::ordered_json;

// Compact JSON text; invalid UTF-8 (which our own strings never hold) becomes U+FFFD instead of
// throwing.
inline std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace jllm::server
