#include "ir/fields.h"

#include <charconv>

#include "absl/strings/escaping.h"

namespace jllm::ir::fields {

std::string FormatFloat(float v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "nan";
  return std::string(buf, end);
}

static bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '-' || c == '+';
}

std::string FormatWord(absl::string_view s) {
  bool bare = !s.empty();
  for (char c : s) bare = bare && IsWordChar(c);
  if (bare) return std::string(s);
  return absl::StrCat("\"", absl::CEscape(s), "\"");
}

absl::Status ParseField(absl::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not an integer"));
  }
  return absl::OkStatus();
}

absl::Status ParseField(absl::string_view text, float* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a number"));
  }
  return absl::OkStatus();
}

absl::Status ParseField(absl::string_view text, std::string* out) {
  *out = std::string(text);
  return absl::OkStatus();
}

absl::Status ParseField(absl::string_view text, std::optional<float>* out) {
  float v = 0;
  if (auto st = ParseField(text, &v); !st.ok()) return st;
  *out = v;
  return absl::OkStatus();
}

}  // namespace jllm::ir::fields
