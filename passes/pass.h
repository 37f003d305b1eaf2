// What every pass shares: its options, its result, and its registry entry.
//
// A pass is a function `absl::StatusOr<PassResult> Run(ir::Graph&, const PassOptions&)` that
// rewrites the graph in place and leaves it valid (ir::Verify passes; the pipeline checks).
// It is registered under a stable kebab-case name in passes/registry.cc, whose order is the
// pipeline order. The YAML file (passes/pipeline.h) only switches passes on/off and sets options.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace jllm::passes {

// The options of one pass: scalars ("dtype: int8") or maps of scalars ("layers: {0: int8}"),
// kept as text and converted by the typed getters, whose errors name the pass and the option.
class PassOptions {
 public:
  using Map = std::vector<std::pair<std::string, std::string>>;

  explicit PassOptions(std::string pass_name = "") : pass_(std::move(pass_name)) {}
  // A YAML map of options, block or flow style ("{dtype: auto, memory_budget_mib: 6144, context_length: 4096}").
  static absl::StatusOr<PassOptions> FromYaml(std::string_view yaml, std::string pass_name);

  void Set(std::string key, std::string scalar) { entries_[std::move(key)] = std::move(scalar); }
  void SetMap(std::string key, Map entries) { entries_[std::move(key)] = std::move(entries); }

  const std::string& pass_name() const { return pass_; }
  bool Has(std::string_view key) const { return entries_.find(std::string(key)) != entries_.end(); }
  std::vector<std::string> Keys() const;  // sorted

  // The value of `key`, or `fallback` when absent. A map where a scalar is expected, or text
  // that is not a number, is an InvalidArgument error.
  absl::StatusOr<std::string> String(std::string_view key, std::string fallback) const;
  absl::StatusOr<int64_t> Int(std::string_view key, int64_t fallback) const;
  absl::StatusOr<double> Double(std::string_view key, double fallback) const;
  absl::StatusOr<Map> GetMap(std::string_view key) const;  // empty when absent

  // "pass 'kv-dtype': option 'dtype': <msg>".
  absl::Status Error(std::string_view key, std::string_view msg) const;
  // Flow-style YAML of the options in key order ("{dtype: f16}"); "{}" when there are none.
  std::string ToYaml() const;

  bool operator==(const PassOptions&) const = default;

 private:
  std::string pass_;
  std::map<std::string, std::variant<std::string, Map>, std::less<>> entries_;
};

struct PassResult {
  bool changed = false;
  std::string report;  // one short line: what the pass did ("grouped 28 q/k/v triples")
};

using PassFn = absl::StatusOr<PassResult> (*)(ir::Graph&, const PassOptions&);
using CheckOptionsFn = absl::Status (*)(const PassOptions&);

struct OptionInfo {
  std::string_view name;
  std::string_view help;
};

struct PassInfo {
  std::string_view name;         // stable kebab-case, the YAML key
  std::string_view description;  // one line, for --help and error messages
  std::vector<OptionInfo> options;
  PassFn run;
  CheckOptionsFn check_options = nullptr;  // validates option values before any graph exists
};

}  // namespace jllm::passes
