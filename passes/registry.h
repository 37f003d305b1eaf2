// The passes jllm has, in pipeline order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"

namespace jllm::passes {

// Every registered pass, in the fixed order the pipeline runs them:
//   group-qkv, group-gate-up, fuse-rmsnorm-matmul, fuse-residual-add, fuse-swiglu,
//   fuse-qknorm-rope, kv-dtype.
const std::vector<PassInfo>& AllPasses();
const PassInfo* FindPass(std::string_view name);  // nullptr if unknown
std::string ValidPassNames();                     // "group-qkv, group-gate-up, ..."

}  // namespace jllm::passes
