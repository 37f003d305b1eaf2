#include "passes/fuse_rmsnorm_matmul.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace jllm::passes {
namespace {

// `n` reads `v` only as its projection input and has no prologue yet.
bool TakesAsPrologue(const ir::Node& n, ir::ValueId v) {
  if (n.op != ir::OpKind::kMatMul && n.op != ir::OpKind::kMatMulGroup) return false;
  if (n.attrs_as<ir::MatMulAttrs>().norm_eps.has_value()) return false;
  return n.inputs[0] == v && std::count(n.inputs.begin(), n.inputs.end(), v) == 1;
}

}  // namespace

absl::StatusOr<PassResult> RunFuseRmsNormMatMul(ir::Graph& g, const PassOptions&) {
  const std::vector<std::vector<int>> users = g.Users();
  std::vector<bool> erase(g.nodes.size(), false);
  int folded = 0, projections = 0, kept = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& norm = g.nodes[i];
    if (norm.op != ir::OpKind::kRmsNorm) continue;
    const ir::ValueId h = norm.outputs[0];
    const std::vector<int>& readers = users[h];
    const bool is_output = std::find(g.outputs.begin(), g.outputs.end(), h) != g.outputs.end();
    bool all_projections = !readers.empty() && !is_output;
    for (int u : readers) all_projections = all_projections && TakesAsPrologue(g.nodes[u], h);
    if (!all_projections) {
      ++kept;
      continue;
    }
    for (int u : readers) {
      ir::Node& mm = g.nodes[u];
      mm.inputs[0] = norm.inputs[0];
      mm.weights.push_back(norm.weights[0]);
      mm.attrs_as<ir::MatMulAttrs>().norm_eps = norm.attrs_as<ir::RmsNormAttrs>().eps;
      ++projections;
    }
    erase[i] = true;
    ++folded;
  }
  if (folded == 0) return PassResult{false, absl::StrCat("no rms_norm to fold (", kept, " kept)")};
  g.EraseNodes(erase);
  g.Compact();
  return PassResult{true, absl::StrCat("folded ", folded, " rms_norms into ", projections,
                                       " projections; ", kept,
                                       " kept (they feed other ops)")};
}

}  // namespace jllm::passes
