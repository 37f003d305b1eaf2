#include "passes/group_gate_up.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "passes/matmul_grouping.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunGroupGateUp(ir::Graph& g, const PassOptions&) {
  const std::vector<int> producer = g.ProducerIndex();
  std::vector<std::vector<int>> groups;
  std::set<int> taken;
  for (const ir::Node& swiglu : g.nodes) {
    if (swiglu.op != ir::OpKind::kSwiGlu) continue;
    const int gate = producer[swiglu.inputs[0]];
    const int up = producer[swiglu.inputs[1]];
    if (gate < 0 || up < 0 || gate == up || taken.count(gate) || taken.count(up)) continue;
    if (!IsGroupableMatMul(g.nodes[gate]) || !IsGroupableMatMul(g.nodes[up])) continue;
    if (!SameProjectionInput(g.nodes[gate], g.nodes[up])) continue;
    groups.push_back({gate, up});
    taken.insert({gate, up});
  }
  if (groups.empty()) return PassResult{false, "no gate/up projections to group"};
  const std::string mixes = DescribeTypeMixes(g, groups);
  ReplaceWithGroups(g, groups);
  return PassResult{true, absl::StrCat("grouped ", groups.size(), " gate/up pairs (", mixes, ")")};
}

}  // namespace jllm::passes
