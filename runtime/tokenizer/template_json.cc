#include "runtime/tokenizer/template_json.h"

namespace jllm::runtime {
namespace {

void Append(const nlohmann::ordered_json& v, std::string* out) {
  if (v.is_object()) {
    *out += '{';
    bool first = true;
    for (const auto& [key, item] : v.items()) {
      if (!first) *out += ", ";
      first = false;
      *out += nlohmann::ordered_json(key).dump();
      *out += ": ";
      Append(item, out);
    }
    *out += '}';
  } else if (v.is_array()) {
    *out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) *out += ", ";
      Append(v[i], out);
    }
    *out += ']';
  } else {
    // Scalars: nlohmann escapes strings as json.dumps does (\", \\, \n, \t, ..., other control
    // characters as lowercase \u00xx) and leaves other UTF-8 alone.
    *out += v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
}

}  // namespace

std::string TemplateJson(const nlohmann::ordered_json& value) {
  std::string out;
  Append(value, &out);
  return out;
}

}  // namespace jllm::runtime
