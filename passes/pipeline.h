// The pass pipeline: a YAML-configured, fixed-order run of the registered passes, with
// ir::Verify after every pass and an optional IR dump after a named one.
//
//   passes:
//     group-qkv: true
//     fuse-swiglu: false
//     kv-dtype: {enabled: true, dtype: auto, memory_budget_mib: 6144, context_length: 4096}
//
// A pass the file does not mention keeps its default (on, default options). An unknown pass or
// option is an error that names it and lists the valid ones.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace jllm::passes {

struct PassSetting {
  bool enabled = true;
  PassOptions options;
  bool operator==(const PassSetting&) const = default;
};

// One setting per registered pass, keyed by name.
struct PipelineConfig {
  std::map<std::string, PassSetting, std::less<>> passes;
  bool operator==(const PipelineConfig&) const = default;
};

// Everything on, every option at its default (KV cache f16).
PipelineConfig DefaultPipelineConfig();
// `source` names the file in messages. Option values are checked here, before any graph exists.
absl::StatusOr<PipelineConfig> ParsePipelineConfig(std::string_view yaml, std::string_view source);
absl::StatusOr<PipelineConfig> LoadPipelineConfig(const std::string& path);
// YAML that ParsePipelineConfig reads back to an equal config (for the plan file), one pass a
// line in pipeline order.
std::string PipelineConfigToYaml(const PipelineConfig& config);

struct PipelineOptions {
  bool verify_each = true;   // ir::Verify before the first pass and after every pass
  // "--dump-ir-after NAME": call `dump` with the pass name and ir::Print(graph) after NAME ran
  // (or was skipped); "all" dumps after every pass; "" dumps nothing. An unknown name is an
  // error listing the passes.
  std::string dump_ir_after;
  std::function<void(std::string_view pass, const std::string& ir_text)> dump;
};

// What one pass did, for the tool's summary.
struct PassRun {
  std::string name;
  bool enabled = false;
  bool changed = false;
  std::string report;
};

// Runs the enabled passes in pipeline order. Errors name the pass (a pass's own failure, or a
// graph it left invalid).
absl::StatusOr<std::vector<PassRun>> RunPipeline(ir::Graph& graph, const PipelineConfig& config,
                                                 const PipelineOptions& options = {});

}  // namespace jllm::passes
