#include "tests/cuda/op_variants.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace jllm::testing {
namespace {

enum class Cases { kGemv, kGemvGroups, kPrefill };

bool Selected(const OpCase& c, Cases which) {
  const bool one_token = absl::StrContains(c.name, "_T1_") || absl::EndsWith(c.name, "_T1");
  const bool gemv = absl::StartsWith(c.name, "logits") || (absl::StartsWith(c.name, "matmul") && one_token);
  switch (which) {
    case Cases::kGemv: return gemv;
    case Cases::kGemvGroups: return gemv && absl::StartsWith(c.name, "matmul_group");
    case Cases::kPrefill: return c.max_nmse_tf32 > 0;
  }
  return false;
}

}  // namespace

std::vector<VariantCase> CudaVariantCases() {
  // The defaults (one row per item, two steps ahead in registers, whole items dealt round-robin,
  // f32 FMAs in the prefill GEMM) run in AllOps. Here: the GEMV configuration measured fastest
  // on the H200 (a ring of three shared-memory slots per warp — bulk copies on sm_90 and in the
  // emulation —, two rows per item, equal step ranges per warp); for the groups, two slots with
  // three rows per item and every matrix split in two along K (a slot holds several rows, a
  // warp's stream crosses splits and members), the ring filled by 16-byte cp.async (the path
  // before sm_90), and equal step ranges with registers; the prefill GEMM on the tensor cores.
  const std::vector<std::pair<OpVariant, Cases>> variants = {
      {{"ring3_r2_spread",
        {{"JLLM_GEMV_RING", "3"}, {"JLLM_GEMV_R", "2"}, {"JLLM_GEMV_MINB", "2"}, {"JLLM_GEMV_SPREAD", "1"}}},
       Cases::kGemv},
      {{"ring2_r3_split2", {{"JLLM_GEMV_RING", "2"}, {"JLLM_GEMV_R", "3"}, {"JLLM_GEMV_KSPLIT", "2"}}},
       Cases::kGemvGroups},
      {{"cpasync_ring3", {{"JLLM_GEMV_RING", "3"}, {"JLLM_GEMV_BULK", "0"}}}, Cases::kGemvGroups},
      {{"registers_spread", {{"JLLM_GEMV_SPREAD", "1"}}}, Cases::kGemvGroups},
      {{"gemm_mma_tf32", {{"JLLM_GEMM_MMA", "1"}}}, Cases::kPrefill},
  };
  std::vector<VariantCase> out;
  for (const auto& [variant, which] : variants) {
    for (OpCase& c : AllOpCases()) {
      if (Selected(c, which)) out.push_back({variant, std::move(c)});
    }
  }
  return out;
}

std::string VariantCaseName(const VariantCase& c) { return absl::StrCat(c.variant.name, "__", OpCaseName(c.op)); }

ScopedEnv::ScopedEnv(const std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& [name, value] : env) {
    setenv(name.c_str(), value.c_str(), 1);
    names_.push_back(name);
  }
}

ScopedEnv::~ScopedEnv() {
  for (const std::string& name : names_) unsetenv(name.c_str());
}

}  // namespace jllm::testing
