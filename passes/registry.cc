#include "passes/registry.h"

#include "absl/strings/str_join.h"
#include "passes/fuse_qknorm_rope.h"
#include "passes/fuse_residual_add.h"
#include "passes/fuse_rmsnorm_matmul.h"
#include "passes/fuse_swiglu.h"
#include "passes/group_gate_up.h"
#include "passes/group_qkv.h"
#include "passes/kv_dtype.h"

namespace jllm::passes {

// The order is the pipeline order: grouping first (so the norm prologue and the swiglu
// epilogue land on the groups), then the fusions, then the KV storage choice.
const std::vector<PassInfo>& AllPasses() {
  static const std::vector<PassInfo> kPasses = {
      {"group-qkv", "one grouped matmul for the q, k and v projections of each layer", {},
       RunGroupQkv},
      {"group-gate-up", "one grouped matmul for the ffn gate and up projections", {},
       RunGroupGateUp},
      {"fuse-rmsnorm-matmul", "rms_norm folded into the prologue of the projections it feeds", {},
       RunFuseRmsNormMatMul},
      {"fuse-residual-add", "residual add folded into the epilogue of the projection before it",
       {}, RunFuseResidualAdd},
      {"fuse-swiglu", "silu(gate)*up folded into the epilogue of the gate/up group", {},
       RunFuseSwiGlu},
      {"fuse-qknorm-rope", "per-head q/k norm, rope and kv append in one node", {},
       RunFuseQkNormRope},
      {"kv-dtype",
       "KV cache element type per layer: f16, int8 or auto (from context and memory budget)",
       {{"dtype", "f16 | int8 | auto (default f16)"},
        {"memory_budget_mib", "KV cache budget in MiB, required with auto"},
        {"context_length", "tokens the cache must hold, for auto (default: the model's)"},
        {"layers", "per-layer overrides {LAYER: f16|int8}"}},
       RunKvDType, CheckKvDTypeOptions},
  };
  return kPasses;
}

const PassInfo* FindPass(std::string_view name) {
  for (const PassInfo& p : AllPasses()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string ValidPassNames() {
  std::vector<std::string> names;
  for (const PassInfo& p : AllPasses()) names.emplace_back(p.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace jllm::passes
