// Helpers shared by the passes that rewrite projections (group-qkv, group-gate-up).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace jllm::passes {

// A single matmul without a residual epilogue: a candidate for grouping.
bool IsGroupableMatMul(const ir::Node& n);
// Both read the same activation and carry the same RMSNorm prologue (or none).
bool SameProjectionInput(const ir::Node& a, const ir::Node& b);

// Replaces each group (indices of groupable matmuls with the same input, in member order) by
// one matmul_group at the place of its earliest member: members' weights and outputs in group
// order, the shared prologue kept. Groups must not share nodes.
void ReplaceWithGroups(ir::Graph& g, const std::vector<std::vector<int>>& groups);

// "q4_K+q4_K+q4_K x26, q4_K+q4_K+q6_K x10": the member type mixes of the groups, counted.
// Call it before ReplaceWithGroups, which renumbers the nodes.
std::string DescribeTypeMixes(const ir::Graph& g, const std::vector<std::vector<int>>& groups);

}  // namespace jllm::passes
