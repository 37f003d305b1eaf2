// The lowered graph of a jllm-synth preset without writing its weights: the preset's tensor
// table (frontends/gguf/synth_plan.h) laid out as a GGUF would hold it, through the Qwen3 graph
// builder and the default passes. Shapes and types are all lowering needs.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/gguf/qwen3_graph.h"
#include "frontends/gguf/synth_plan.h"
#include "ir/status.h"
#include "passes/pipeline.h"

namespace jllm::cuda::testing {

// `type`: jllm-synth's --type (q4_k_m, the presets' mix, unless named).
inline absl::StatusOr<ir::Graph> PresetGraph(const std::string& preset, const std::string& type = "q4_k_m") {
  ASSIGN_OR_RETURN(gguf::SynthConfig c, gguf::SynthPreset(preset));
  ASSIGN_OR_RETURN(gguf::SynthWeights weights, gguf::ParseSynthWeights(type));
  ASSIGN_OR_RETURN(gguf::SynthPlan plan, gguf::PlanSynthModel(c, weights));
  std::vector<gguf::TensorInfo> tensors;
  uint64_t offset = 0;
  for (const gguf::SynthTensor& t : plan.tensors) {
    gguf::TensorInfo info;
    info.name = t.name;
    info.n_dims = static_cast<uint32_t>(t.ne.size());
    for (size_t i = 0; i < t.ne.size(); ++i) info.ne[i] = t.ne[i];
    info.type = t.type;
    info.offset = offset;
    info.nbytes = t.nbytes();
    offset += (info.nbytes + 31) / 32 * 32;
    tensors.push_back(info);
  }
  ir::ModelConfig mc;
  mc.n_embd = c.n_embd;
  mc.n_layer = c.n_layer;
  mc.n_head = c.n_head;
  mc.n_head_kv = c.n_head_kv;
  mc.head_dim = c.head_dim;
  mc.n_ff = c.n_ff;
  mc.n_vocab = c.n_vocab;
  mc.context_length = c.context_length;
  mc.rope_base = c.rope_freq_base;
  mc.rms_eps = c.rms_eps;
  mc.tied_embeddings = c.tied_embeddings;
  ASSIGN_OR_RETURN(ir::Graph g, gguf::BuildQwen3Graph(mc, tensors, preset));
  RETURN_IF_ERROR(passes::RunPipeline(g, passes::DefaultPipelineConfig()).status());
  return g;
}

}  // namespace jllm::cuda::testing
