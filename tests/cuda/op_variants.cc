#include "tests/cuda/op_variants.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace jllm::testing {
namespace {

bool Selected(const OpCase& c, VariantCases which) {
  const bool one_token = absl::StrContains(c.name, "_T1_") || absl::EndsWith(c.name, "_T1");
  const bool gemv = absl::StartsWith(c.name, "logits") || (absl::StartsWith(c.name, "matmul") && one_token);
  switch (which) {
    case VariantCases::kGemv: return gemv;
    case VariantCases::kGemvGroups: return gemv && absl::StartsWith(c.name, "matmul_group");
    case VariantCases::kGemvNorm: return gemv && absl::StrContains(c.name, "norm");
    case VariantCases::kGemvPairs:  // (the group qkv_norm is q4_K, q4_K, q6_K)
      return gemv && (absl::StrContains(c.name, "q4_K") || absl::StrContains(c.name, "q4k") ||
                      absl::StrContains(c.name, "q6_K") || absl::StrContains(c.name, "qkv_norm"));
    case VariantCases::kPrefill: return c.max_nmse_tf32 > 0;
    case VariantCases::kAttention:
      return absl::StartsWith(c.name, "attention") ||
             (absl::StrContains(c.name, "_attention_") && !absl::StartsWith(c.name, "qkv_head"));
    case VariantCases::kAttentionF16:
      return Selected(c, VariantCases::kAttention) && absl::EndsWith(c.name, "_f16");
    case VariantCases::kGemvHead: return absl::StartsWith(c.name, "qkv_head");
  }
  return false;
}

}  // namespace

std::vector<VariantCase> CudaVariantCases() {
  std::vector<VariantCase> out;
  for (const OpVariant& variant : CudaKernelVariants()) {
    for (OpCase& c : AllOpCases()) {
      if (Selected(c, variant.cases)) out.push_back({variant, std::move(c)});
    }
  }
  return out;
}

std::string VariantCaseName(const VariantCase& c) { return absl::StrCat(c.variant.name, "__", OpCaseName(c.op)); }

}  // namespace jllm::testing
