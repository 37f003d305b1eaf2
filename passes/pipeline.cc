#include "passes/pipeline.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fileio/read_file.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "passes/registry.h"
#include "passes/yaml_util.h"

namespace jllm::passes {
namespace {

// A pass file is a few lines of YAML; anything this large is not one (and /dev/zero ends).
constexpr uint64_t kMaxPassesFileBytes = uint64_t{1} << 20;

absl::Status ConfigError(std::string_view source, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", msg));
}

std::string ValidOptionNames(const PassInfo& info) {
  if (info.options.empty()) return "this pass has no options besides 'enabled'";
  std::vector<std::string> names = {"enabled"};
  for (const OptionInfo& o : info.options) names.emplace_back(o.name);
  return absl::StrCat("valid: ", absl::StrJoin(names, ", "));
}

// One entry of the `passes:` map.
absl::Status ParseSetting(const PassInfo& info, const YAML::Node& value, PassSetting& setting) {
  const std::string name(info.name);
  if (value.IsScalar()) {
    bool enabled = false;
    if (!YAML::convert<bool>::decode(value, enabled)) {
      return absl::InvalidArgumentError(absl::StrCat("pass '", name, "': expected true, false or a "
                                                     "map of options, found '", value.Scalar(),
                                                     "'", YamlWhere(value)));
    }
    setting.enabled = enabled;
    return absl::OkStatus();
  }
  if (!value.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pass '", name, "': expected true, false or a map of options", YamlWhere(value)));
  }
  if (const YAML::Node enabled = value["enabled"]) {
    if (!enabled.IsScalar() || !YAML::convert<bool>::decode(enabled, setting.enabled)) {
      return absl::InvalidArgumentError(
          absl::StrCat("pass '", name, "': 'enabled' must be true or false", YamlWhere(enabled)));
    }
  }
  ASSIGN_OR_RETURN(setting.options, OptionsFromYamlMap(value, PassOptions(name), "enabled"));
  for (const std::string& key : setting.options.Keys()) {
    bool known = false;
    for (const OptionInfo& o : info.options) known = known || o.name == key;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("pass '", name, "': unknown option '", key,
                                                     "' (", ValidOptionNames(info), ")"));
    }
  }
  if (info.check_options != nullptr) RETURN_IF_ERROR(info.check_options(setting.options));
  return absl::OkStatus();
}

}  // namespace

PipelineConfig DefaultPipelineConfig() {
  PipelineConfig config;
  for (const PassInfo& info : AllPasses()) {
    config.passes[std::string(info.name)] = PassSetting{true, PassOptions(std::string(info.name))};
  }
  return config;
}

absl::StatusOr<PipelineConfig> ParsePipelineConfig(std::string_view yaml, std::string_view source) {
  PipelineConfig config = DefaultPipelineConfig();
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (root.IsNull()) return config;
    if (!root.IsMap()) return ConfigError(source, "expected a map with the key 'passes'");
    for (const auto& top : root) {
      if (!top.first.IsScalar() || top.first.Scalar() != "passes") {
        return ConfigError(source, absl::StrCat("unknown key '", top.first.Scalar(),
                                                "' (valid: passes)", YamlWhere(top.first)));
      }
    }
    const YAML::Node passes = root["passes"];
    if (passes.IsNull()) return config;
    if (!passes.IsMap()) {
      return ConfigError(source, absl::StrCat("'passes' must be a map of pass names",
                                              YamlWhere(passes)));
    }
    std::set<std::string> seen;
    for (const auto& entry : passes) {
      const std::string name = entry.first.Scalar();
      const PassInfo* info = FindPass(name);
      if (info == nullptr) {
        return ConfigError(source, absl::StrCat("unknown pass '", name, "'", YamlWhere(entry.first),
                                                " (valid: ", ValidPassNames(), ")"));
      }
      if (!seen.insert(name).second) {
        return ConfigError(source, absl::StrCat("pass '", name, "' is listed twice"));
      }
      PassSetting& setting = config.passes[name];
      if (auto st = ParseSetting(*info, entry.second, setting); !st.ok()) {
        return ConfigError(source, st.message());
      }
    }
  } catch (const YAML::Exception& e) {
    return ConfigError(source, absl::StrCat("bad YAML: ", e.what()));
  }
  return config;
}

absl::StatusOr<PipelineConfig> LoadPipelineConfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, fileio::ReadFile(path, "passes file", kMaxPassesFileBytes));
  return ParsePipelineConfig(text, path);
}

std::string PipelineConfigToYaml(const PipelineConfig& config) {
  std::string out = "passes:\n";
  for (const PassInfo& info : AllPasses()) {
    auto it = config.passes.find(info.name);
    if (it == config.passes.end()) continue;
    const PassSetting& s = it->second;
    const std::string options = s.options.ToYaml();
    if (options == "{}") {
      absl::StrAppend(&out, "  ", Sv(info.name), ": ", s.enabled ? "true" : "false", "\n");
    } else {
      // "{dtype: f16}" becomes "{enabled: true, dtype: f16}".
      absl::StrAppend(&out, "  ", Sv(info.name), ": {enabled: ", s.enabled ? "true" : "false",
                      ", ", options.substr(1), "\n");
    }
  }
  return out;
}

absl::StatusOr<std::vector<PassRun>> RunPipeline(ir::Graph& graph, const PipelineConfig& config,
                                                 const PipelineOptions& options) {
  const bool dump_all = options.dump_ir_after == "all";
  if (!options.dump_ir_after.empty() && !dump_all && FindPass(options.dump_ir_after) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--dump-ir-after: unknown pass '",
                                                   options.dump_ir_after,
                                                   "' (valid: all, ", ValidPassNames(), ")"));
  }
  for (const auto& [name, setting] : config.passes) {
    if (FindPass(name) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("pipeline config: unknown pass '", name, "' (valid: ", ValidPassNames(), ")"));
    }
  }
  if (options.verify_each) {
    if (auto st = ir::Verify(graph); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the graph is invalid before any pass: ", st.message()));
    }
  }
  std::vector<PassRun> runs;
  for (const PassInfo& info : AllPasses()) {
    const std::string name(info.name);
    auto it = config.passes.find(name);
    const PassSetting setting =
        it != config.passes.end() ? it->second : PassSetting{true, PassOptions(name)};
    PassRun run{name, setting.enabled, false, "disabled"};
    if (setting.enabled) {
      auto result = info.run(graph, setting.options);
      if (!result.ok()) {
        return absl::Status(result.status().code(),
                            absl::StrCat("pass '", name, "' failed: ", result.status().message()));
      }
      run.changed = result->changed;
      run.report = std::move(result->report);
      if (options.verify_each) {
        if (auto st = ir::Verify(graph); !st.ok()) {
          return absl::InternalError(
              absl::StrCat("pass '", name, "' left an invalid graph: ", st.message()));
        }
      }
    }
    if ((dump_all || options.dump_ir_after == name) && options.dump) {
      options.dump(name, ir::Print(graph));
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace jllm::passes
