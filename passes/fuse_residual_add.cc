#include "passes/fuse_residual_add.h"

#include "absl/strings/str_cat.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunFuseResidualAdd(ir::Graph& g, const PassOptions&) {
  const std::vector<int> producer = g.ProducerIndex();
  const std::vector<int> uses = g.UseCounts();
  std::vector<bool> erase(g.nodes.size(), false);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& add = g.nodes[i];
    if (add.op != ir::OpKind::kAdd) continue;
    // Try the second operand as the projection first (add(x, W·h) is how Qwen3 is built).
    for (int side : {1, 0}) {
      const ir::ValueId y = add.inputs[side];
      const ir::ValueId r = add.inputs[1 - side];
      const int m = producer[y];
      if (m < 0 || uses[y] != 1 || y == r) continue;
      ir::Node& mm = g.nodes[m];
      if (mm.op != ir::OpKind::kMatMul || mm.attrs_as<ir::MatMulAttrs>().residual) continue;
      if (producer[r] >= m) continue;  // the residual must exist when the matmul runs
      mm.inputs.push_back(r);
      mm.attrs_as<ir::MatMulAttrs>().residual = true;
      mm.outputs[0] = add.outputs[0];
      erase[i] = true;
      ++fused;
      break;
    }
  }
  if (fused == 0) return PassResult{false, "no residual add to fold"};
  g.EraseNodes(erase);
  g.Compact();
  return PassResult{true, absl::StrCat("folded ", fused, " residual adds into projections")};
}

}  // namespace jllm::passes
