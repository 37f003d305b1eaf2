#include "passes/fuse_swiglu.h"

#include "absl/strings/str_cat.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunFuseSwiGlu(ir::Graph& g, const PassOptions&) {
  const std::vector<int> producer = g.ProducerIndex();
  const std::vector<int> uses = g.UseCounts();
  std::vector<bool> erase(g.nodes.size(), false);
  int fused = 0, ungrouped = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& swiglu = g.nodes[i];
    if (swiglu.op != ir::OpKind::kSwiGlu) continue;
    const ir::ValueId gate = swiglu.inputs[0], up = swiglu.inputs[1];
    const int p = producer[gate];
    if (p < 0 || g.nodes[p].op != ir::OpKind::kMatMulGroup) {
      ++ungrouped;
      continue;
    }
    ir::Node& group = g.nodes[p];
    auto& attrs = group.attrs_as<ir::MatMulAttrs>();
    const bool exact = group.outputs.size() == 2 && group.outputs[0] == gate &&
                       group.outputs[1] == up && uses[gate] == 1 && uses[up] == 1;
    if (!exact || attrs.swiglu) {
      ++ungrouped;
      continue;
    }
    attrs.swiglu = true;
    group.outputs = {swiglu.outputs[0]};
    erase[i] = true;
    ++fused;
  }
  if (fused == 0) {
    return PassResult{false, absl::StrCat("no swiglu to fold (", ungrouped,
                                          " not fed by a gate/up group)")};
  }
  g.EraseNodes(erase);
  g.Compact();
  return PassResult{true, absl::StrCat("folded ", fused, " swiglus into gate/up groups")};
}

}  // namespace jllm::passes
