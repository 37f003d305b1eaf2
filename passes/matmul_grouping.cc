#include "passes/matmul_grouping.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"

namespace jllm::passes {

bool IsGroupableMatMul(const ir::Node& n) {
  return n.op == ir::OpKind::kMatMul && !n.attrs_as<ir::MatMulAttrs>().residual &&
         !n.inputs.empty() && n.outputs.size() == 1;
}

bool SameProjectionInput(const ir::Node& a, const ir::Node& b) {
  return a.inputs[0] == b.inputs[0] &&
         a.attrs_as<ir::MatMulAttrs>().norm_eps == b.attrs_as<ir::MatMulAttrs>().norm_eps &&
         ir::MatMulNormWeight(a) == ir::MatMulNormWeight(b);
}

void ReplaceWithGroups(ir::Graph& g, const std::vector<std::vector<int>>& groups) {
  std::vector<bool> erase(g.nodes.size(), false);
  std::vector<std::pair<int, ir::Node>> placed;
  for (const std::vector<int>& group : groups) {
    const ir::Node& first = g.nodes[group[0]];
    ir::Node merged;
    merged.op = ir::OpKind::kMatMulGroup;
    merged.inputs = {first.inputs[0]};
    merged.attrs = ir::MatMulAttrs{first.attrs_as<ir::MatMulAttrs>().norm_eps, false, false};
    for (int i : group) {
      merged.weights.push_back(ir::MatMulMembers(g.nodes[i])[0]);
      merged.outputs.push_back(g.nodes[i].outputs[0]);
      erase[i] = true;
    }
    if (auto norm = ir::MatMulNormWeight(first)) merged.weights.push_back(*norm);
    const int at = *std::min_element(group.begin(), group.end());
    erase[at] = false;
    placed.emplace_back(at, std::move(merged));
  }
  for (auto& [at, node] : placed) g.nodes[at] = std::move(node);
  g.EraseNodes(erase);
  g.Compact();
}

std::string DescribeTypeMixes(const ir::Graph& g, const std::vector<std::vector<int>>& groups) {
  std::map<std::string, int> mixes;
  for (const std::vector<int>& group : groups) {
    std::vector<std::string> types;
    for (int i : group) {
      types.emplace_back(GgmlTypeName(g.weights[ir::MatMulMembers(g.nodes[i])[0]].type));
    }
    ++mixes[absl::StrJoin(types, "+")];
  }
  std::vector<std::string> parts;
  for (const auto& [mix, count] : mixes) parts.push_back(absl::StrCat(mix, " x", count));
  return absl::StrJoin(parts, ", ");
}

}  // namespace jllm::passes
