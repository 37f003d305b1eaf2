// yaml-cpp glue shared by PassOptions and the pipeline config reader (internal to passes/).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "absl/status/statusor.h"
#include "passes/pass.h"

namespace jllm::passes {

// Adds every entry of the YAML map `map` except `skip_key` to `options`: scalars as scalars,
// maps of scalars as maps. Anything else (sequences, nested maps, repeated keys) is an error
// naming the option.
absl::StatusOr<PassOptions> OptionsFromYamlMap(const YAML::Node& map, PassOptions options,
                                               std::string_view skip_key = "");

// `s` as a YAML flow scalar: bare when that reads back as the same string, else double-quoted.
std::string YamlScalar(const std::string& s);

// "line 3, column 5" of a node, for messages.
std::string YamlWhere(const YAML::Node& node);

}  // namespace jllm::passes
