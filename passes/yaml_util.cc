#include "passes/yaml_util.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace jllm::passes {

std::string YamlWhere(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return "";
  return absl::StrCat(" (line ", m.line + 1, ", column ", m.column + 1, ")");
}

absl::StatusOr<PassOptions> OptionsFromYamlMap(const YAML::Node& map, PassOptions options,
                                               std::string_view skip_key) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) return options.Error("", "option names must be plain words");
    const std::string key = entry.first.Scalar();
    if (!seen.insert(key).second) return options.Error(key, "given twice");
    if (key == skip_key) continue;
    const YAML::Node& value = entry.second;
    if (value.IsScalar()) {
      options.Set(key, value.Scalar());
    } else if (value.IsMap()) {
      PassOptions::Map entries;
      std::set<std::string> inner_seen;
      for (const auto& inner : value) {
        if (!inner.first.IsScalar() || !inner.second.IsScalar()) {
          return options.Error(key, "map entries must be single values");
        }
        if (!inner_seen.insert(inner.first.Scalar()).second) {
          return options.Error(key, absl::StrCat("entry '", inner.first.Scalar(), "' given twice"));
        }
        entries.emplace_back(inner.first.Scalar(), inner.second.Scalar());
      }
      options.SetMap(key, std::move(entries));
    } else {
      return options.Error(key, absl::StrCat("expected a value or a map", YamlWhere(value)));
    }
  }
  return options;
}

std::string YamlScalar(const std::string& s) {
  bool bare = !s.empty() && s != "null" && s != "~";
  for (char c : s) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.' || c == '-';
    bare = bare && word;
  }
  if (bare && s[0] == '-') bare = s.size() > 1 && s[1] >= '0' && s[1] <= '9';
  if (bare) return s;
  // YAML double-quoted escapes: \" \\ and \xNN for control bytes; other bytes stay as they are.
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace jllm::passes
