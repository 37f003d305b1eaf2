// Lowering decisions that no kernel result shows: which decode launches prefetch which weights,
// and what becomes of a tuning variable the kernels cannot take.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/device_layout.h"
#include "backends/cuda/lowering/lowering.h"
#include "gtest/gtest.h"
#include "tests/cuda/kernel_variants.h"
#include "tests/cuda/preset_graph.h"

namespace jllm::cuda {
namespace {

// The 4b preset's decode launches in step order.
std::vector<const Launch*> DecodeLaunches(const LoweredGraph& lg) {
  std::vector<const Launch*> out;
  for (const NodeLowering& nl : lg.nodes) {
    for (const Launch& l : nl.decode) out.push_back(&l);
  }
  return out;
}

TEST(Lowering, WithoutPrefetchNoLaunchPrefetches) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_FALSE(Prefetching());
  auto lg = LowerGraph(*g);
  ASSERT_TRUE(lg.ok()) << lg.status();
  for (const Launch* l : DecodeLaunches(*lg)) {
    EXPECT_FALSE(l->prefetch[0].present());
    EXPECT_FALSE(l->prefetch[1].present());
  }
}

// In every layer: head_ops prefetches the attention output projection, attention the gate and up
// matrices — the weights of the GEMV after each that no earlier launch took — with their sizes.
TEST(Lowering, HeadOpsAndAttentionPrefetchTheNextGemvsWeights) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_PREFETCH", "1"}});
  ASSERT_TRUE(Prefetching());
  auto lg = LowerGraph(*g);
  ASSERT_TRUE(lg.ok()) << lg.status();
  const std::vector<const Launch*> launches = DecodeLaunches(*lg);
  auto name = [&](const Operand& w) { return g->weights[w.id].name; };
  int head_ops = 0, attention = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = *launches[i];
    if (l.kind != LaunchKind::kHeadOps && l.kind != LaunchKind::kAttentionDecode) {
      EXPECT_FALSE(l.prefetch[0].present()) << "launch " << i;
      continue;
    }
    // The GEMVs after it: the first is attn-out, the second gate+up.
    std::vector<const Launch*> gemvs;
    for (size_t j = i + 1; j < launches.size() && gemvs.size() < 2; ++j) {
      if (launches[j]->kind == LaunchKind::kGemv) gemvs.push_back(launches[j]);
    }
    ASSERT_EQ(gemvs.size(), 2u) << "launch " << i;
    const Launch& target = *gemvs[l.kind == LaunchKind::kHeadOps ? 0 : 1];
    for (int k = 0; k < 2; ++k) {
      const Operand& want = target.ops[slot::kGemvW0 + k];
      ASSERT_EQ(l.prefetch[k].present(), want.present()) << "launch " << i << " range " << k;
      if (!want.present()) continue;
      EXPECT_EQ(l.prefetch[k].kind, Operand::Kind::kWeight);
      EXPECT_EQ(l.prefetch[k].id, want.id) << name(l.prefetch[k]) << " vs " << name(want);
      const ir::WeightRef& w = g->weights[want.id];
      EXPECT_EQ(l.prefetch_bytes[k], w.dim(1) * layout::RowStride(static_cast<int>(w.type), w.dim(0)));
    }
    if (l.kind == LaunchKind::kHeadOps) {
      ++head_ops;
      EXPECT_NE(name(l.prefetch[0]).find("attn_output"), std::string::npos) << name(l.prefetch[0]);
      EXPECT_FALSE(l.prefetch[1].present());
    } else {
      ++attention;
      EXPECT_NE(name(l.prefetch[0]).find("ffn_gate"), std::string::npos) << name(l.prefetch[0]);
      ASSERT_TRUE(l.prefetch[1].present());
      EXPECT_NE(name(l.prefetch[1]).find("ffn_up"), std::string::npos) << name(l.prefetch[1]);
    }
  }
  EXPECT_EQ(head_ops, 36);  // the 4b preset's layers
  EXPECT_EQ(attention, 36);
}

// A tuning variable set to a value the kernels cannot take is ignored with a warning that names
// it, and the default is lowered instead (here: a ring of 1 slot, a depth that is no number, a
// spread of 2): every GEMV gets the ring, depth and spread of a lowering without the variables.
TEST(Lowering, UnusableTuningValuesAreIgnoredWithAWarning) {
  auto g = testing::PresetGraph("0.6b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto switches = [](const LoweredGraph& lg) {
    std::vector<std::string> out;
    for (const KernelSpec& s : lg.specs) {
      if (s.kernel != "gemv") continue;
      for (const auto& [name, value] : s.DefineList()) {
        if (name == "JLLM_RING" || name == "JLLM_DEPTH" || name == "JLLM_SPREAD") out.push_back(name + "=" + value);
      }
    }
    return out;
  };
  auto plain = LowerGraph(*g);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const std::vector<std::string> defaults = switches(*plain);
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{
      {"JLLM_GEMV_RING", "1"}, {"JLLM_GEMV_DEPTH", "deep"}, {"JLLM_GEMV_SPREAD", "2"}});
  ::testing::internal::CaptureStderr();
  auto lg = LowerGraph(*g);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(lg.ok()) << lg.status();
  EXPECT_NE(err.find("JLLM_GEMV_RING=1 is not"), std::string::npos) << err;
  EXPECT_NE(err.find("JLLM_GEMV_DEPTH=deep is not"), std::string::npos) << err;
  EXPECT_NE(err.find("JLLM_GEMV_SPREAD=2 is not"), std::string::npos) << err;
  const std::vector<std::string> got = switches(*lg);
  const auto gemvs = std::count_if(lg->specs.begin(), lg->specs.end(),
                                   [](const KernelSpec& s) { return s.kernel == "gemv"; });
  EXPECT_EQ(got.size(), 3 * static_cast<size_t>(gemvs));
  EXPECT_FALSE(got.empty());
  EXPECT_EQ(got, defaults);
}

}  // namespace
}  // namespace jllm::cuda
