#include <yaml-cpp/yaml.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"
#include "passes/pass.h"
#include "passes/yaml_util.h"

namespace jllm::passes {

absl::StatusOr<PassOptions> PassOptions::FromYaml(std::string_view yaml, std::string pass_name) {
  const PassOptions empty(std::move(pass_name));
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (root.IsNull()) return empty;
    if (!root.IsMap()) return empty.Error("", "options must be a YAML map");
    return OptionsFromYamlMap(root, empty);
  } catch (const YAML::Exception& e) {
    return empty.Error("", absl::StrCat("bad YAML: ", e.what()));
  }
}

std::vector<std::string> PassOptions::Keys() const {
  std::vector<std::string> keys;
  for (const auto& [k, v] : entries_) keys.push_back(k);
  return keys;
}

absl::Status PassOptions::Error(std::string_view key, std::string_view msg) const {
  if (key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("pass '", pass_, "': ", Sv(msg)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("pass '", pass_, "': option '", Sv(key), "': ", Sv(msg)));
}

absl::StatusOr<std::string> PassOptions::String(std::string_view key, std::string fallback) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return fallback;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return Error(key, "expected a single value, found a map");
}

absl::StatusOr<int64_t> PassOptions::Int(std::string_view key, int64_t fallback) const {
  if (!Has(key)) return fallback;
  auto s = String(key, "");
  if (!s.ok()) return s.status();
  int64_t v = 0;
  if (!absl::SimpleAtoi(*s, &v)) return Error(key, absl::StrCat("'", *s, "' is not an integer"));
  return v;
}

absl::StatusOr<double> PassOptions::Double(std::string_view key, double fallback) const {
  if (!Has(key)) return fallback;
  auto s = String(key, "");
  if (!s.ok()) return s.status();
  double v = 0;
  if (!absl::SimpleAtod(*s, &v)) return Error(key, absl::StrCat("'", *s, "' is not a number"));
  return v;
}

absl::StatusOr<PassOptions::Map> PassOptions::GetMap(std::string_view key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return Map{};
  if (const auto* m = std::get_if<Map>(&it->second)) return *m;
  return Error(key, "expected a map ({key: value, ...}), found a single value");
}

std::string PassOptions::ToYaml() const {
  std::vector<std::string> parts;
  for (const auto& [k, v] : entries_) {
    if (const auto* s = std::get_if<std::string>(&v)) {
      parts.push_back(absl::StrCat(k, ": ", YamlScalar(*s)));
    } else {
      std::vector<std::string> inner;
      for (const auto& [mk, mv] : std::get<Map>(v)) {
        inner.push_back(absl::StrCat(YamlScalar(mk), ": ", YamlScalar(mv)));
      }
      parts.push_back(absl::StrCat(k, ": {", absl::StrJoin(inner, ", "), "}"));
    }
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

}  // namespace jllm::passes
