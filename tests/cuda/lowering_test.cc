// Lowering decisions that no kernel result shows: which decode launches prefetch which weights,
// and what becomes of a tuning variable the kernels cannot take.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cuda/device_layout.h"
#include "backends/cuda/exec/memory_plan.h"
#include "backends/cuda/kernels/launch_geometry.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/lowering/lowering.h"
#include "gmock/gmock.h"
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

// The value of a -D constant of a kernel spec ("" if it has none).
std::string Define(const KernelSpec& s, const std::string& name) {
  for (const auto& [n, v] : s.DefineList()) {
    if (n == name) return v;
  }
  return "";
}

// Lowered without a head-op fusion (JLLM_ATTN_FUSE_HEAD=0, JLLM_GEMV_HEAD off), 4b's 36 layers each launch head_ops of their
// own — 36 decode launches more than `fused` has — and no launch of kind `host` carries the
// operand `head_slot` that the fusion binds.
void ExpectHeadOpsLaunchedAlone(const ir::Graph& g, const LoweredGraph& fused, LaunchKind host, int head_slot) {
  ::jllm::testing::ScopedEnv apart(std::vector<std::pair<std::string, std::string>>{{"JLLM_ATTN_FUSE_HEAD", "0"}});
  auto separate = LowerGraph(g);
  ASSERT_TRUE(separate.ok()) << separate.status();
  int head_ops = 0;
  for (const Launch* l : DecodeLaunches(*separate)) {
    if (l->kind == LaunchKind::kHeadOps) ++head_ops;
    if (l->kind == host) {
      EXPECT_FALSE(l->ops[head_slot].present());
    }
  }
  EXPECT_EQ(head_ops, 36);
  EXPECT_EQ(DecodeLaunches(*separate).size(), DecodeLaunches(fused).size() + 36);
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
// (With the head ops in their own launch: JLLM_ATTN_FUSE_HEAD=0.)
TEST(Lowering, HeadOpsAndAttentionPrefetchTheNextGemvsWeights) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  ::jllm::testing::ScopedEnv env(
      std::vector<std::pair<std::string, std::string>>{{"JLLM_PREFETCH", "1"}, {"JLLM_ATTN_FUSE_HEAD", "0"}});
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

// JLLM_PREFETCH=2: attention alone prefetches, the attention output projection right after it
// (not gate and up), and attention_mma.cu is built to ask for it at the end of its stream.
TEST(Lowering, AttentionAlonePrefetchesItsSuccessorAfterItsStream) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_PREFETCH", "2"}});
  ASSERT_EQ(PrefetchMode(), 2);
  auto lg = LowerGraph(*g);
  ASSERT_TRUE(lg.ok()) << lg.status();
  const std::vector<const Launch*> launches = DecodeLaunches(*lg);
  int attention = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = *launches[i];
    if (l.kind != LaunchKind::kAttentionDecode) {
      EXPECT_FALSE(l.prefetch[0].present()) << "launch " << i;
      continue;
    }
    ++attention;
    EXPECT_TRUE(absl::StrContains(lg->specs[l.spec].defines, "JLLM_PREFETCH_LATE=1")) << lg->specs[l.spec].defines;
    ASSERT_LT(i + 1, launches.size());
    const Launch& next = *launches[i + 1];
    ASSERT_EQ(next.kind, LaunchKind::kGemv);
    const Operand& want = next.ops[slot::kGemvW0];
    ASSERT_TRUE(l.prefetch[0].present());
    EXPECT_EQ(l.prefetch[0].id, want.id);
    EXPECT_NE(g->weights[want.id].name.find("attn_output"), std::string::npos) << g->weights[want.id].name;
    const ir::WeightRef& w = g->weights[want.id];
    EXPECT_EQ(l.prefetch_bytes[0], w.dim(1) * layout::RowStride(static_cast<int>(w.type), w.dim(0)));
    EXPECT_FALSE(l.prefetch[1].present());
  }
  EXPECT_EQ(attention, 36);
  ::jllm::testing::ScopedEnv one(std::vector<std::pair<std::string, std::string>>{{"JLLM_PREFETCH", "1"}});
  auto early = LowerGraph(*g);
  ASSERT_TRUE(early.ok()) << early.status();
  for (const Launch* l : DecodeLaunches(*early)) {
    if (l->kind == LaunchKind::kAttentionDecode) {
      EXPECT_TRUE(absl::StrContains(early->specs[l->spec].defines, "JLLM_PREFETCH_LATE=0"));
    }
  }
}

// The sampler's grid: kSampleCtas CTAs (a greedy draw scans the row with all of them), or
// JLLM_SAMPLE_CTAS.
TEST(Lowering, SamplerGridIsSampleCtas) {
  auto g = testing::PresetGraph("0.6b");
  ASSERT_TRUE(g.ok()) << g.status();
  for (const auto& [env, want] : std::vector<std::pair<std::string, int64_t>>{{"", geometry::kSampleCtas}, {"1", 1}, {"5", 5}}) {
    ::jllm::testing::ScopedEnv e(std::vector<std::pair<std::string, std::string>>{{"JLLM_SAMPLE_CTAS", env}});
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    ASSERT_GE(lg->sample.spec, 0);
    EXPECT_EQ(lg->specs[lg->sample.spec].grid_x, want) << "JLLM_SAMPLE_CTAS=" << env;
  }
}

// JLLM_PREFETCH_FORM: the prefetching kernels (head_ops and attention under JLLM_PREFETCH=1) are
// built with the form asked for (kernel_args.h L2PrefetchForm); bulk, the default, adds no
// define, and no other kernel gets one; a misspelt form falls back to bulk.
TEST(Lowering, PrefetchFormReachesThePrefetchingKernelsOnly) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  const std::pair<const char*, int> forms[] = {{"", -1},
                                               {"bulk", -1},
                                               {"line", kL2PrefetchLine},
                                               {"evict-last", kL2PrefetchLineEvictLast},
                                               {"load256", kL2PrefetchLoad256},
                                               {"lines", -1}};
  for (const auto& [form, want] : forms) {
    SCOPED_TRACE(form);
    ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{
        {"JLLM_PREFETCH", "1"}, {"JLLM_PREFETCH_FORM", form}, {"JLLM_ATTN_FUSE_HEAD", "0"}});
    EXPECT_EQ(PrefetchForm(), want < 0 ? kL2PrefetchBulk : want);
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    int prefetching = 0;
    for (const Launch* l : DecodeLaunches(*lg)) {
      const std::string& defines = lg->specs[l->spec].defines;
      const bool has = absl::StrContains(defines, "JLLM_PREFETCH_FORM=");
      if (l->prefetch[0].present()) {
        ++prefetching;
        EXPECT_EQ(has, want >= 0) << defines;
        if (want >= 0) {
          EXPECT_TRUE(absl::StrContains(defines, absl::StrCat("JLLM_PREFETCH_FORM=", want))) << defines;
        }
      } else if (l->kind != LaunchKind::kHeadOps && l->kind != LaunchKind::kAttentionDecode) {
        EXPECT_FALSE(has) << lg->specs[l->spec].label;
      }
    }
    EXPECT_EQ(prefetching, 2 * 36);  // head_ops and attention, every layer
  }
}

// Decode attention takes over the layer's q/k norm + RoPE + KV append (JLLM_ATTN_FUSE_HEAD=1, with
// attention_decode.cu, JLLM_ATTN_KERNEL=1, and with attention_mma.cu, 3): the head
// op's node has no decode launch (its prefill launch stays), attention's reads that op's inputs
// and parameters, and the memory plan keeps those inputs alive until attention — no value
// attention writes may lie where it still reads. Without it the two launches stay.
class LoweringFusedHead : public ::testing::TestWithParam<const char*> {};

TEST_P(LoweringFusedHead, DecodeAttentionRunsTheHeadOpsOfItsLayer) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string kernel = GetParam();
  std::optional<::jllm::testing::ScopedEnv> fuse(
      std::in_place,
      std::vector<std::pair<std::string, std::string>>{{"JLLM_ATTN_FUSE_HEAD", "1"}, {"JLLM_ATTN_KERNEL", kernel}});
  auto lg = LowerGraph(*g);
  ASSERT_TRUE(lg.ok()) << lg.status();
  auto plan = PlanMemory(*g, *lg, 256, 16);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int fused = 0;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const ir::Node& n = g->nodes[i];
    if (n.op == ir::OpKind::kQkNormRopeKvAppend) {
      EXPECT_TRUE(lg->nodes[i].decode.empty()) << "node " << i;
      ASSERT_EQ(lg->nodes[i].prefill.size(), 1u);
      EXPECT_EQ(lg->nodes[i].prefill[0].kind, LaunchKind::kHeadOps);
      continue;
    }
    if (n.op != ir::OpKind::kAttention) continue;
    ASSERT_GT(i, 0u);
    const ir::Node& h = g->nodes[i - 1];
    ASSERT_EQ(h.op, ir::OpKind::kQkNormRopeKvAppend);
    const auto& ha = h.attrs_as<ir::QkNormRopeKvAppendAttrs>();
    ASSERT_EQ(lg->nodes[i].decode.size(), 1u);
    const Launch& l = lg->nodes[i].decode[0];
    EXPECT_EQ(l.ops[slot::kAttnXq].id, h.inputs[0]);
    EXPECT_EQ(l.ops[slot::kAttnXk].id, h.inputs[1]);
    EXPECT_EQ(l.ops[slot::kAttnXv].id, h.inputs[2]);
    EXPECT_EQ(l.ops[slot::kAttnQGamma].id, h.weights[0]);
    EXPECT_EQ(l.ops[slot::kAttnKGamma].id, h.weights[1]);
    EXPECT_EQ(l.p1, ha.eps);
    EXPECT_EQ(l.p2, ir::RopeThetaStep(ha.freq_base, ha.n_rot));
    EXPECT_EQ(l.p3, ha.freq_scale);
    EXPECT_EQ(lg->specs[l.spec].kernel, kernel == "1" ? "attention_decode" : "attention_mma");
    EXPECT_NE(lg->specs[l.spec].defines.find("JLLM_FUSED_HEAD=1"), std::string::npos);
    EXPECT_NE(lg->specs[l.spec].defines.find(absl::StrCat("JLLM_NROT=", ha.n_rot)), std::string::npos);
    // Attention's output does not overlap what it reads in the arena.
    auto range = [&](ir::ValueId v) {
      int64_t bytes = 4 * 16;
      for (int64_t d : g->type_of(v).shape.dims) bytes *= d == ir::kDimT ? 1 : d;
      return std::make_pair(plan->value_offset[v], plan->value_offset[v] + bytes);
    };
    const auto out = range(n.outputs[0]);
    for (int k = 0; k < 3; ++k) {
      const auto in = range(h.inputs[k]);
      EXPECT_TRUE(out.second <= in.first || in.second <= out.first) << "node " << i << " input " << k;
    }
    ++fused;
  }
  EXPECT_EQ(fused, 36);
  fuse.reset();
  ExpectHeadOpsLaunchedAlone(*g, *lg, LaunchKind::kAttentionDecode, slot::kAttnXq);
}

INSTANTIATE_TEST_SUITE_P(Kernels, LoweringFusedHead, ::testing::Values("1", "3"));

// attention_mma.cu takes the head ops only on its register tiles in fixed chunks and where q's
// RoPE pairs lie in one lane: with a ring or grabs asked for, or on attention_rows.cu, the head
// op keeps its decode launch.
TEST(Lowering, AttentionKeepsHeadOpsApartWhereItCannotRunThem) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"JLLM_ATTN_RING", "2"}, {"JLLM_ATTN_DYNAMIC", "1"}, {"JLLM_ATTN_KERNEL", "2"}}) {
    ::jllm::testing::ScopedEnv env(
        std::vector<std::pair<std::string, std::string>>{{"JLLM_ATTN_FUSE_HEAD", "1"}, {name, value}});
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    int head_ops = 0;
    for (const NodeLowering& nl : lg->nodes) {
      for (const Launch& l : nl.decode) {
        head_ops += l.kind == LaunchKind::kHeadOps;
        if (l.kind == LaunchKind::kAttentionDecode) {
          EXPECT_EQ(lg->specs[l.spec].defines.find("JLLM_FUSED_HEAD=1"), std::string::npos) << name;
        }
      }
    }
    EXPECT_EQ(head_ops, 36) << name;
  }
}

// JLLM_GEMV_HEAD=1: in every 4b layer the QKV GEMV takes the next node's q/k norm + RoPE + KV
// append (that node keeps only its prefill launch): its spec says so with the head's shape and
// the cache's type, its operands are the head op's gammas, position, rotated q and cache, its
// parameters the head op's, and its tickets (one a head) come after any K split's. The rotated q
// gets its bytes at the GEMV's node, apart from everything the GEMV reads and writes; without the
// switch (the default) head_ops stays a launch of its own.
TEST(Lowering, QkvGemvRunsTheHeadOpsInItsTail) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  std::optional<::jllm::testing::ScopedEnv> fuse(
      std::in_place, std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_HEAD", "1"}});
  auto lg = LowerGraph(*g);
  ASSERT_TRUE(lg.ok()) << lg.status();
  auto plan = PlanMemory(*g, *lg, 256, 16);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto range = [&](ir::ValueId v) {
    int64_t bytes = 4 * 16;
    for (int64_t d : g->type_of(v).shape.dims) bytes *= d == ir::kDimT ? 1 : d;
    return std::make_pair(plan->value_offset[v], plan->value_offset[v] + bytes);
  };
  auto apart = [&](ir::ValueId a, ir::ValueId b) {
    const auto x = range(a), y = range(b);
    return x.second <= y.first || y.second <= x.first;
  };
  int fused = 0;
  for (size_t i = 0; i + 1 < g->nodes.size(); ++i) {
    const ir::Node& n = g->nodes[i];
    const ir::Node& h = g->nodes[i + 1];
    if (h.op != ir::OpKind::kQkNormRopeKvAppend) continue;
    ASSERT_EQ(n.op, ir::OpKind::kMatMulGroup) << "node " << i;
    const auto& ha = h.attrs_as<ir::QkNormRopeKvAppendAttrs>();
    EXPECT_TRUE(lg->nodes[i + 1].decode.empty()) << "node " << i + 1;
    ASSERT_EQ(lg->nodes[i + 1].prefill.size(), 1u);
    EXPECT_EQ(lg->nodes[i + 1].prefill[0].kind, LaunchKind::kHeadOps);
    ASSERT_EQ(lg->nodes[i].decode.size(), 1u);
    const Launch& l = lg->nodes[i].decode[0];
    const KernelSpec& spec = lg->specs[l.spec];
    EXPECT_EQ(l.kind, LaunchKind::kGemv);
    EXPECT_TRUE(absl::EndsWith(spec.label, " +head_ops")) << spec.label;
    const std::vector<std::string> defines = absl::StrSplit(spec.defines, ' ');
    for (const std::string& d : {std::string("JLLM_HEAD=1"), absl::StrCat("JLLM_HEAD_D=", ha.head_dim),
                                 absl::StrCat("JLLM_NROT=", ha.n_rot),
                                 absl::StrCat("JLLM_KV=", static_cast<int>(g->kv_dtypes[ha.layer]))}) {
      EXPECT_THAT(defines, ::testing::Contains(d)) << spec.label;
    }
    EXPECT_EQ(l.ops[slot::kGemvHeadPos].id, h.inputs[3]);
    EXPECT_EQ(l.ops[slot::kGemvHeadQGamma].id, h.weights[0]);
    EXPECT_EQ(l.ops[slot::kGemvHeadKGamma].id, h.weights[1]);
    EXPECT_EQ(l.ops[slot::kGemvHeadYq].id, h.outputs[0]);
    EXPECT_EQ(l.ops[slot::kGemvHeadCache].kind, Operand::Kind::kKvCache);
    EXPECT_EQ(l.ops[slot::kGemvHeadCache].id, ha.layer);
    for (int m = 0; m < 3; ++m) EXPECT_EQ(l.ops[slot::kGemvY0 + m].id, h.inputs[m]);
    EXPECT_EQ(l.p1, ha.eps);
    EXPECT_EQ(l.p2, ir::RopeThetaStep(ha.freq_base, ha.n_rot));
    EXPECT_EQ(l.p3, ha.freq_scale);
    int64_t ksplit = 1;  // the K split's tickets (one per row group: the grid over the splits) come first
    for (absl::string_view d : defines) {
      if (absl::ConsumePrefix(&d, "JLLM_KSPLIT=")) ksplit = std::stoll(std::string(d));
    }
    EXPECT_EQ(l.workspace_counters, (ksplit > 1 ? spec.grid_x / ksplit : 0) + ha.n_head + ha.n_head_kv) << spec.label;
    // The rotated q lies apart from x and from the raw q, k, v the GEMV writes.
    EXPECT_TRUE(apart(h.outputs[0], n.inputs[0])) << "node " << i;
    for (int m = 0; m < 3; ++m) EXPECT_TRUE(apart(h.outputs[0], n.outputs[m])) << "node " << i << " y" << m;
    ++fused;
  }
  EXPECT_EQ(fused, 36);
  fuse.reset();
  ExpectHeadOpsLaunchedAlone(*g, *lg, LaunchKind::kGemv, slot::kGemvHeadCache);
}

// The decode attention kernel by JLLM_ATTN_KERNEL: 4b's 8 kv heads of G = 4 and head_dim 128 with
// an f16 cache take attention_mma.cu by default and with 3, attention_rows.cu with 2 and
// attention_decode.cu with 1.
TEST(Lowering, DecodeAttentionKernelBySwitch) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto kernels = [&] {
    auto lg = LowerGraph(*g);
    EXPECT_TRUE(lg.ok()) << lg.status();
    std::set<std::string> out;
    for (const Launch* l : DecodeLaunches(*lg)) {
      if (l->kind == LaunchKind::kAttentionDecode) out.insert(lg->specs[l->spec].kernel);
    }
    return out;
  };
  EXPECT_EQ(kernels(), std::set<std::string>{"attention_mma"});
  for (const auto& [value, kernel] : std::vector<std::pair<std::string, std::string>>{
           {"3", "attention_mma"}, {"2", "attention_rows"}, {"1", "attention_decode"}}) {
    ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_ATTN_KERNEL", value}});
    EXPECT_EQ(kernels(), std::set<std::string>{kernel}) << value;
  }
}

// JLLM_ATTN_RING: attention_mma.cu's per-warp ring of tiles (8 KiB each for head_dim 128), as deep
// as asked while the CTA's shared memory fits the target GPU's. 4b (G 4, head_dim 128, 16
// splits): the static 17,172 bytes (8,852 with 4 warps) and rings of 8 warps fit three tiles a
// warp in sm_90's 227 KiB, two in sm_80's 163, none in sm_86's 99; a ring of one tile is none.
TEST(Lowering, AttentionRingFitsTheSharedMemoryOfTheTarget) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto ring = [&](std::vector<std::pair<std::string, std::string>> vars, int64_t smem_per_block) {
    ::jllm::testing::ScopedEnv env(vars);
    auto lg = LowerGraph(*g, nullptr, LoweringTarget{smem_per_block});
    EXPECT_TRUE(lg.ok()) << lg.status();
    std::set<std::pair<std::string, int64_t>> out;  // (JLLM_RING define, dynamic shared memory)
    for (const Launch* l : DecodeLaunches(*lg)) {
      if (l->kind != LaunchKind::kAttentionDecode) continue;
      const KernelSpec& s = lg->specs[l->spec];
      for (absl::string_view d : absl::StrSplit(s.defines, ' ')) {
        if (absl::StartsWith(d, "JLLM_RING=")) out.insert({std::string(d), s.smem});
      }
    }
    return out;
  };
  using Rings = std::set<std::pair<std::string, int64_t>>;
  EXPECT_EQ(ring({{"JLLM_ATTN_RING", "2"}}, kSmemPerBlockSm90), (Rings{{"JLLM_RING=2", 2 * 8 * 8192}}));
  EXPECT_EQ(ring({{"JLLM_ATTN_RING", "8"}}, kSmemPerBlockSm90), (Rings{{"JLLM_RING=3", 3 * 8 * 8192}}));
  EXPECT_EQ(ring({{"JLLM_ATTN_RING", "8"}, {"JLLM_ATTN_NW", "4"}}, kSmemPerBlockSm90),
            (Rings{{"JLLM_RING=6", 6 * 4 * 8192}}));
  EXPECT_EQ(ring({{"JLLM_ATTN_RING", "3"}}, kSmemPerBlockSm80), (Rings{{"JLLM_RING=2", 2 * 8 * 8192}}));
  EXPECT_EQ(ring({{"JLLM_ATTN_RING", "3"}, {"JLLM_ATTN_NW", "4"}}, kSmemPerBlockSm80),
            (Rings{{"JLLM_RING=3", 3 * 4 * 8192}}));
  EXPECT_EQ(ring({{"JLLM_ATTN_RING", "3"}}, kSmemPerBlockSm86), (Rings{{"JLLM_RING=0", 0}}));
  EXPECT_EQ(ring({{"JLLM_ATTN_RING", "1"}}, kSmemPerBlockSm90), (Rings{{"JLLM_RING=0", 0}}));
  EXPECT_EQ(ring({{"JLLM_ATTN_RING", "0"}}, kSmemPerBlockSm90), (Rings{{"JLLM_RING=0", 0}}));
}

// The defines of `g`'s decode attention launches, lowered with `vars` for the H100's shared
// memory, that start with one of `prefixes`.
std::set<std::string> DecodeAttentionDefines(const ir::Graph& g, std::vector<std::pair<std::string, std::string>> vars,
                                             std::vector<std::string> prefixes) {
  ::jllm::testing::ScopedEnv env(vars);
  auto lg = LowerGraph(g, nullptr, LoweringTarget{kSmemPerBlockSm90});
  EXPECT_TRUE(lg.ok()) << lg.status();
  std::set<std::string> out;
  if (!lg.ok()) return out;
  for (const Launch* l : DecodeLaunches(*lg)) {
    if (l->kind != LaunchKind::kAttentionDecode) continue;
    for (absl::string_view d : absl::StrSplit(lg->specs[l->spec].defines, ' ')) {
      for (const std::string& p : prefixes) {
        if (absl::StartsWith(d, p)) out.insert(std::string(d));
      }
    }
  }
  return out;
}

// JLLM_ATTN_AHEAD: attention_mma.cu's L2 prefetch distance in tiles, 0 by default and with a ring
// (the ring's copies are in flight already).
TEST(Lowering, AttentionPrefetchAheadOnlyOnTheRegisterTiles) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto ahead = [&](std::vector<std::pair<std::string, std::string>> vars) {
    return DecodeAttentionDefines(*g, std::move(vars), {"JLLM_AHEAD="});
  };
  using Defines = std::set<std::string>;
  EXPECT_EQ(ahead({}), Defines{"JLLM_AHEAD=0"});
  EXPECT_EQ(ahead({{"JLLM_ATTN_AHEAD", "2"}}), Defines{"JLLM_AHEAD=2"});
  EXPECT_EQ(ahead({{"JLLM_ATTN_AHEAD", "2"}, {"JLLM_ATTN_RING", "2"}}), Defines{"JLLM_AHEAD=0"});
}

// JLLM_ATTN_SCORE_CHAINS: attention_mma.cu's S MMAs in one accumulator chain (1) or q's hi and lo
// halves apart (2, the default); a value outside 1..2 is ignored (the default).
TEST(Lowering, AttentionScoreChainsFromTheirSwitch) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto chains = [&](std::vector<std::pair<std::string, std::string>> vars) {
    return DecodeAttentionDefines(*g, std::move(vars), {"JLLM_SCORE_CHAINS="});
  };
  using Defines = std::set<std::string>;
  EXPECT_EQ(chains({}), Defines{"JLLM_SCORE_CHAINS=2"});
  EXPECT_EQ(chains({{"JLLM_ATTN_SCORE_CHAINS", "1"}}), Defines{"JLLM_SCORE_CHAINS=1"});
  EXPECT_EQ(chains({{"JLLM_ATTN_SCORE_CHAINS", "3"}}), Defines{"JLLM_SCORE_CHAINS=2"});
}

// JLLM_ATTN_DEPENDENTS: where attention_mma.cu lets the next kernel launch, 0 by default; 1 and 2
// only on the early register tiles (a ring or a late first tile lowers 0).
TEST(Lowering, AttentionDependentsOnlyOnTheEarlyRegisterTiles) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto dependents = [&](std::vector<std::pair<std::string, std::string>> vars) {
    return DecodeAttentionDefines(*g, std::move(vars), {"JLLM_DEPENDENTS="});
  };
  using Defines = std::set<std::string>;
  EXPECT_EQ(dependents({}), Defines{"JLLM_DEPENDENTS=0"});
  EXPECT_EQ(dependents({{"JLLM_ATTN_DEPENDENTS", "2"}}), Defines{"JLLM_DEPENDENTS=2"});
  EXPECT_EQ(dependents({{"JLLM_ATTN_DEPENDENTS", "1"}}), Defines{"JLLM_DEPENDENTS=1"});
  EXPECT_EQ(dependents({{"JLLM_ATTN_DEPENDENTS", "2"}, {"JLLM_ATTN_RING", "2"}}), Defines{"JLLM_DEPENDENTS=0"});
  EXPECT_EQ(dependents({{"JLLM_ATTN_DEPENDENTS", "2"}, {"JLLM_ATTN_EARLY", "0"}}), Defines{"JLLM_DEPENDENTS=0"});
  EXPECT_EQ(dependents({{"JLLM_ATTN_DEPENDENTS", "3"}}), Defines{"JLLM_DEPENDENTS=0"});
}

// JLLM_ATTN_DYNAMIC: attention_mma.cu's grabs of tiles, 0 by default, only on the register tiles,
// and it takes AHEAD's place (the prefetch follows fixed chunks); the decode launch counts a
// grab counter per kv head after the tickets either way.
TEST(Lowering, AttentionDynamicGrabsOnlyOnTheRegisterTiles) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  for (const char* dynamic : {"0", "2"}) {
    ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_ATTN_DYNAMIC", dynamic}});
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    for (const Launch* l : DecodeLaunches(*lg)) {
      if (l->kind == LaunchKind::kAttentionDecode) {
        EXPECT_EQ(l->workspace_counters, 2 * 8) << "4b: 8 kv heads";
      }
    }
  }
  auto lower = [&](std::vector<std::pair<std::string, std::string>> vars) {
    return DecodeAttentionDefines(*g, std::move(vars), {"JLLM_DYNAMIC=", "JLLM_AHEAD="});
  };
  using Defines = std::set<std::string>;
  EXPECT_EQ(lower({}), (Defines{"JLLM_DYNAMIC=0", "JLLM_AHEAD=0"}));
  EXPECT_EQ(lower({{"JLLM_ATTN_DYNAMIC", "2"}}), (Defines{"JLLM_DYNAMIC=2", "JLLM_AHEAD=0"}));
  EXPECT_EQ(lower({{"JLLM_ATTN_DYNAMIC", "2"}, {"JLLM_ATTN_AHEAD", "2"}}), (Defines{"JLLM_DYNAMIC=2", "JLLM_AHEAD=0"}));
  EXPECT_EQ(lower({{"JLLM_ATTN_DYNAMIC", "2"}, {"JLLM_ATTN_RING", "2"}}), (Defines{"JLLM_DYNAMIC=0", "JLLM_AHEAD=0"}));
}

// An architecture's shared memory per CTA (cudaDevAttrMaxSharedMemoryPerBlockOptin of its cards);
// one not known, or a name that is not one, gets the smallest.
TEST(LoweringTarget, SharedMemoryOfEachArchitecture) {
  EXPECT_EQ(TargetForArch("sm_80").smem_per_block, 166912);
  EXPECT_EQ(TargetForArch("sm_86").smem_per_block, 101376);
  EXPECT_EQ(TargetForArch("sm_87").smem_per_block, 166912);
  EXPECT_EQ(TargetForArch("sm_89").smem_per_block, 101376);
  EXPECT_EQ(TargetForArch("sm_90").smem_per_block, 232448);
  EXPECT_EQ(TargetForArch("sm_90a").smem_per_block, 232448);
  EXPECT_EQ(TargetForArch("sm_90, 132 SMs)").smem_per_block, 232448);  // as a DeviceIdentity names it
  EXPECT_EQ(TargetForArch("sm_120").smem_per_block, 101376);
  EXPECT_EQ(TargetForArch("sm_9").smem_per_block, 101376);
  EXPECT_EQ(TargetForArch("gfx90a").smem_per_block, 101376);
  EXPECT_EQ(LoweringTarget{}.smem_per_block, TargetForArch("sm_90").smem_per_block);
}

// The SMs the lowering fills: the GPU an architecture means here (the Orin Nano for sm_87), and a
// device identity's own count where it gives one.
TEST(LoweringTarget, SmsOfEachArchitectureAndDevice) {
  EXPECT_EQ(TargetForArch("sm_87").sms, 8);
  EXPECT_EQ(TargetForArch("sm_80").sms, 108);
  EXPECT_EQ(TargetForArch("sm_90").sms, 132);
  EXPECT_EQ(TargetForArch("sm_89").sms, 132);  // no one GPU: as before targets had SMs
  EXPECT_EQ(LoweringTarget{}.sms, 132);
  const LoweringTarget orin = TargetForDevice("Orin (sm_87, 8 SMs)");
  EXPECT_EQ(orin.sms, 8);
  EXPECT_EQ(orin.smem_per_block, 166912);
  const LoweringTarget h100 = TargetForDevice("NVIDIA H100 PCIe (sm_90, 114 SMs)");
  EXPECT_EQ(h100.sms, 114);
  EXPECT_EQ(h100.smem_per_block, 232448);
  EXPECT_EQ(TargetForDevice("NVIDIA GeForce RTX 4090 (sm_89, 128 SMs)").sms, 128);
  EXPECT_EQ(TargetForDevice("NVIDIA GeForce RTX 4090 (sm_89, 128 SMs)").smem_per_block, 101376);
  EXPECT_EQ(TargetForDevice("NVIDIA L4 (sm_89)").sms, 132);  // no count: the architecture's
  EXPECT_EQ(TargetForDevice("CPU emulation").sms, LoweringTarget{}.sms);
  EXPECT_EQ(TargetForDevice("CPU emulation").smem_per_block, LoweringTarget{}.smem_per_block);
}

// Every kernel of the reference presets fits the shared memory of the GPU it is lowered for, by
// the lowering's own accounting (Nvrtc.EveryKernelFitsTheSharedMemoryOfItsTarget checks the
// static part against ptxas): lowered for sm_90, 4b's gate+up GEMV takes 119 KiB, its logits GEMM
// 100 KiB — neither loads on an sm_86 or sm_89 card (99 KiB), whose lowering shrinks rings and
// token tiles instead; for sm_90 the target changes nothing.
TEST(Lowering, EveryKernelFitsTheSharedMemoryOfTheTarget) {
  for (const char* preset : {"0.6b", "4b", "14b"}) {
    auto g = testing::PresetGraph(preset);
    ASSERT_TRUE(g.ok()) << g.status();
    auto by_default = LowerGraph(*g);
    ASSERT_TRUE(by_default.ok()) << by_default.status();
    int64_t default_max = 0;
    for (const KernelSpec& s : by_default->specs) default_max = std::max(default_max, s.smem);
    EXPECT_GT(default_max + geometry::kStaticSmemReserve, kSmemPerBlockSm86) << preset << ": nothing to shrink";
    for (int64_t limit : {kSmemPerBlockSm86, kSmemPerBlockSm80, kSmemPerBlockSm90}) {
      auto lg = LowerGraph(*g, nullptr, LoweringTarget{limit});
      ASSERT_TRUE(lg.ok()) << preset << " " << limit << ": " << lg.status();
      for (const KernelSpec& s : lg->specs) {
        EXPECT_LE(s.smem + geometry::kStaticSmemReserve, limit) << preset << " " << s.label;
      }
      if (limit == kSmemPerBlockSm86 && std::string(preset) == "4b") {
        // What shrinks, and how far: the ring as deep as fits (not straight to registers), the
        // token tile before the row tile.
        std::set<std::string> labels;
        for (const KernelSpec& s : lg->specs) labels.insert(s.label);
        EXPECT_EQ(labels.count("gemv q4_K+q4_K 9728+9728x2560 +norm +swiglu x:i16 ring2 tma pairs"), 1u);
        EXPECT_EQ(labels.count("gemm q6_K 151936x2560 f16x2 bn64"), 1u);
      }
      if (limit == kSmemPerBlockSm90) {
        ASSERT_EQ(lg->specs.size(), by_default->specs.size());
        for (size_t i = 0; i < lg->specs.size(); ++i) EXPECT_EQ(lg->specs[i].ModuleKey(), by_default->specs[i].ModuleKey());
      }
    }
  }
}

// JLLM_GEMV_CHUNK: a ring slot of several unit steps takes CHUNK times the bytes, so the ring
// gives up slots first (to 2), then the chunk its steps, then the ring goes to registers (chunk 1).
// 4b's gate+up (16 warps, a step 2 x 4 rows x 288 bytes, 10,880 bytes of staged x): on the H200
// chunk 2 with a ring of 2 takes 2 x 16 x 4,616 + 10,880 = 158,592 bytes, chunk 3 with 2 slots
// (232,320) is over; on a 99 KiB card even chunk 2 with 2 slots is (158,592), so ring 2 chunk 1.
// With chunks of one step the ring is filled through tensor maps (the default), 128 bytes more.
TEST(Lowering, GemvRingSlotsOfSeveralStepsShrinkToTheTarget) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto gate_up = [&](const char* chunk, int64_t limit, const char* ring = "3") {
    ::jllm::testing::ScopedEnv env(
        std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_CHUNK", chunk}, {"JLLM_GEMV_RING", ring}});
    auto lg = LowerGraph(*g, nullptr, LoweringTarget{limit});
    std::pair<std::string, int64_t> out;
    EXPECT_TRUE(lg.ok()) << lg.status();
    if (!lg.ok()) return out;
    for (const KernelSpec& s : lg->specs) {
      if (absl::StartsWith(s.label, "gemv q4_K+q4_K 9728+9728x2560")) out = {s.label, s.smem};
      EXPECT_LE(s.smem + geometry::kStaticSmemReserve, limit) << s.label;
      std::map<std::string, std::string> defines;
      for (const auto& [name, value] : s.DefineList()) defines[name] = value;
      if (s.source == "gemv.cu" && defines["JLLM_RING"] == "0") {
        EXPECT_EQ(defines["JLLM_CHUNK"], "1") << s.label << ": registers take no chunks";
      }
    }
    return out;
  };
  const std::string kGateUp = "gemv q4_K+q4_K 9728+9728x2560 +norm +swiglu x:i16";
  EXPECT_EQ(gate_up("1", kSmemPerBlockSm90),
            std::make_pair(kGateUp + " ring3 tma pairs", int64_t{10880 + 3 * 16 * 2312 + 128}));
  EXPECT_EQ(gate_up("2", kSmemPerBlockSm90),
            std::make_pair(kGateUp + " ring2 chunk2 pairs", int64_t{10880 + 2 * 16 * 4616}));
  EXPECT_EQ(gate_up("4", kSmemPerBlockSm90),
            std::make_pair(kGateUp + " ring2 chunk2 pairs", int64_t{10880 + 2 * 16 * 4616}));
  EXPECT_EQ(gate_up("2", kSmemPerBlockSm86),
            std::make_pair(kGateUp + " ring2 tma pairs", int64_t{10880 + 2 * 16 * 2312 + 128}));
  EXPECT_EQ(gate_up("2", kSmemPerBlockSm90, "0"), std::make_pair(kGateUp + " pairs", int64_t{10880}));
}

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// The kernel spec of every decode GEMV launch of `g` lowered for `target` with `vars` set.
std::vector<KernelSpec> DecodeGemvSpecs(const ir::Graph& g, const EnvVars& vars, LoweringTarget target = {}) {
  ::jllm::testing::ScopedEnv env(vars);
  auto lg = LowerGraph(g, nullptr, target);
  EXPECT_TRUE(lg.ok()) << lg.status();
  std::vector<KernelSpec> specs;
  if (!lg.ok()) return specs;
  for (const Launch* l : DecodeLaunches(*lg)) {
    if (l->kind == LaunchKind::kGemv) specs.push_back(lg->specs[l->spec]);
  }
  EXPECT_FALSE(specs.empty());
  return specs;
}

// A text made of the defines of every decode GEMV of `g` lowered with `vars` set (a define the
// spec lacks reads "-"), one text per distinct combination.
std::set<std::string> DecodeGemvDefines(const ir::Graph& g, std::vector<std::pair<std::string, std::string>> vars,
                                        const std::vector<std::string>& names) {
  std::set<std::string> seen;
  for (const KernelSpec& spec : DecodeGemvSpecs(g, vars)) {
    std::map<std::string, std::string> defines;
    for (const auto& [name, value] : spec.DefineList()) defines[name] = value;
    std::vector<std::string> values;
    for (const std::string& n : names) values.push_back(defines.count(n) ? defines[n] : "-");
    seen.insert(absl::StrJoin(values, "/"));
  }
  return seen;
}

// JLLM_GEMV_EARLY_SLOTS: the ring chunks a warp issues before the grid wait — 2 unless set (or
// RING - 1 if that is fewer), at most RING - 1 when set higher; JLLM_GEMV_AHEAD: the chunks it
// keeps in flight once it streams — RING - 1 unless set (no define: the kernel's own default),
// fewer when asked, never more than RING - 1. Both absent with the steps in registers; the label
// names a lower AHEAD. (With every ring set alike, as here, the size rule's ring of 4 is moot.)
TEST(Lowering, GemvRingChunksBySwitch) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto chunks = [&](std::vector<std::pair<std::string, std::string>> vars) {  // "RING/EARLY/AHEAD"
    return DecodeGemvDefines(*g, vars, {"JLLM_RING", "JLLM_EARLY_SLOTS", "JLLM_AHEAD"});
  };
  EXPECT_EQ(chunks({{"JLLM_GEMV_RING", "3"}}), std::set<std::string>{"3/2/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_RING", "2"}}), std::set<std::string>{"2/1/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_RING", "5"}}), std::set<std::string>{"5/2/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_EARLY_SLOTS", "0"}, {"JLLM_GEMV_RING", "3"}}), std::set<std::string>{"3/0/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_EARLY_SLOTS", "1"}, {"JLLM_GEMV_RING", "5"}}), std::set<std::string>{"5/1/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_EARLY_SLOTS", "9"}, {"JLLM_GEMV_RING", "4"}}), std::set<std::string>{"4/3/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_EARLY_SLOTS", "1"}, {"JLLM_GEMV_RING", "0"}}), std::set<std::string>{"0/-/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_AHEAD", "2"}, {"JLLM_GEMV_RING", "5"}}), std::set<std::string>{"5/2/2"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_AHEAD", "1"}, {"JLLM_GEMV_RING", "3"}}), std::set<std::string>{"3/2/1"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_AHEAD", "9"}, {"JLLM_GEMV_RING", "4"}}), std::set<std::string>{"4/2/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_AHEAD", "1"}, {"JLLM_GEMV_RING", "0"}}), std::set<std::string>{"0/-/-"});
  EXPECT_EQ(chunks({{"JLLM_GEMV_AHEAD", "0"}}), chunks({}));  // below 1: ignored with a warning
  EXPECT_EQ(chunks({}), (std::set<std::string>{"3/2/-", "4/2/-"}));  // the size rule: 4b's logits

  ::jllm::testing::ScopedEnv env({{"JLLM_GEMV_AHEAD", "2"}, {"JLLM_GEMV_RING", "5"}});
  auto lg = LowerGraph(*g);
  ASSERT_TRUE(lg.ok()) << lg.status();
  int gemvs = 0, labelled = 0;
  for (const Launch* l : DecodeLaunches(*lg)) {
    if (l->kind != LaunchKind::kGemv) continue;
    ++gemvs;
    labelled += absl::StrContains(lg->specs[l->spec].label, " ring5 ahead2");
  }
  EXPECT_GT(gemvs, 0);
  EXPECT_EQ(labelled, gemvs);
}

// JLLM_GEMV_L2_EARLY: the ring chunks past the early ones a warp asks of L2 before its grid wait
// — a define (and " l2eN" in the label) only where the ring goes through tensor maps, none by
// default or without them (sm_90 without tensor copies, cp.async rings, registers).
TEST(Lowering, GemvL2EarlyChunksOnlyWithTensorMaps) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto seen = [&](const EnvVars& vars, LoweringTarget target = {}) {
    std::set<std::string> out;  // "TMA/L2_EARLY/labelled"
    for (const KernelSpec& s : DecodeGemvSpecs(*g, vars, target)) {
      const std::string l2 = Define(s, "JLLM_L2_EARLY");
      out.insert(absl::StrCat(Define(s, "JLLM_TMA"), "/", l2.empty() ? "-" : l2, "/",
                              absl::StrContains(s.label, " l2e") ? "l2e" : "-"));
    }
    return out;
  };
  EXPECT_EQ(seen({}), std::set<std::string>{"1/-/-"});
  EXPECT_EQ(seen({{"JLLM_GEMV_L2_EARLY", "2"}}), std::set<std::string>{"1/2/l2e"});
  EXPECT_EQ(seen({{"JLLM_GEMV_L2_EARLY", "2"}, {"JLLM_GEMV_TMA", "0"}}), std::set<std::string>{"0/-/-"});
  EXPECT_EQ(seen({{"JLLM_GEMV_L2_EARLY", "2"}, {"JLLM_GEMV_BULK", "0"}}), std::set<std::string>{"0/-/-"});
  EXPECT_EQ(seen({{"JLLM_GEMV_L2_EARLY", "2"}}, LoweringTarget{kSmemPerBlockSm90, 132, false}),
            std::set<std::string>{"0/-/-"});
  EXPECT_EQ(seen({{"JLLM_GEMV_L2_EARLY", "16"}}), seen({}));  // past 15: ignored with a warning
}

// A switch of the GEMVs whose rows keep their d values in a tail (q8_0, q6_K) — env var `env`,
// define `define`, label word `word` — on by default where a GEMV has a q8_0 member: a define (and
// the word) only on ring GEMVs with a tail member; none in 4b Q4_K_M by default; with the switch
// at 1 on its q6_K down, its mixed QKV and its logits, never on its q4_K-only groups nor with the
// registers. An all-q8_0 4b (tiny-coder's types) takes it on every GEMV by default, none with 0.
void ExpectOnlyWhereRowsHaveScaleTails(const std::string& env, const std::string& define, const std::string& word) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto seen = [&](const EnvVars& vars) {
    std::map<std::string, std::string> out;  // the label's types -> define/labelled
    for (const KernelSpec& s : DecodeGemvSpecs(*g, vars)) {
      const std::vector<std::string> words = absl::StrSplit(s.label, ' ');
      const std::string d = Define(s, define);
      out[words.size() > 1 ? words[1] : s.label] =
          absl::StrCat(d.empty() ? "-" : d, "/", absl::StrContains(s.label, " " + word) ? "on" : "-");
    }
    return out;
  };
  const std::map<std::string, std::string> off = {
      {"q4_K", "-/-"}, {"q6_K", "-/-"}, {"q4_K+q4_K", "-/-"}, {"q4_K+q4_K+q4_K", "-/-"}, {"q4_K+q4_K+q6_K", "-/-"}};
  EXPECT_EQ(seen({}), off);
  const std::map<std::string, std::string> on = {
      {"q4_K", "-/-"}, {"q6_K", "1/on"}, {"q4_K+q4_K", "-/-"}, {"q4_K+q4_K+q4_K", "-/-"}, {"q4_K+q4_K+q6_K", "1/on"}};
  EXPECT_EQ(seen({{env, "1"}}), on);
  EXPECT_EQ(seen({{env, "1"}, {"JLLM_GEMV_RING", "0"}}), off);

  auto q8 = testing::PresetGraph("4b", "q8_0");
  ASSERT_TRUE(q8.ok()) << q8.status();
  for (const EnvVars& vars : {EnvVars{}, EnvVars{{env, "0"}}}) {
    const std::vector<KernelSpec> specs = DecodeGemvSpecs(*q8, vars);
    int on_q8 = 0;
    for (const KernelSpec& s : specs) on_q8 += Define(s, define) == "1";
    EXPECT_EQ(on_q8, vars.empty() ? static_cast<int>(specs.size()) : 0) << (vars.empty() ? "default" : "switch 0");
  }
}

// JLLM_GEMV_TAIL_PREFETCH: the scale tails' lines asked into L1 as each ring chunk is issued.
TEST(Lowering, GemvTailPrefetchOnlyWhereRowsHaveScaleTails) {
  ExpectOnlyWhereRowsHaveScaleTails("JLLM_GEMV_TAIL_PREFETCH", "JLLM_TAIL_PREFETCH", "tailpf");
}

// JLLM_GEMV_D_AHEAD: the next step's d values loaded into registers during this step's dots.
TEST(Lowering, GemvDAheadOnlyWhereRowsHaveScaleTails) {
  ExpectOnlyWhereRowsHaveScaleTails("JLLM_GEMV_D_AHEAD", "JLLM_D_AHEAD", "d-ahead");
}

// JLLM_GEMV_X_PROBE=1, a timing probe (gemv.cu X_PROBE): only when asked, and then on every GEMV
// whose members all read int16 x by 1 or 2 lanes a run — all of 4b Q4_K_M's decode GEMVs — with
// the label saying so; none with 8-bit x, 4 lanes a run or a bf16 model (f32 x), nor on 0.
TEST(Lowering, GemvXProbeOnlyWhenAskedAndWhereXIsInt16Runs) {
  // "every", "none" or the counts: launches with the define / with the label's word / in all.
  auto probed = [](const std::string& type, const EnvVars& vars) -> std::string {
    auto g = testing::PresetGraph("4b", type);
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) return "no graph";
    const std::vector<KernelSpec> specs = DecodeGemvSpecs(*g, vars);
    int defined = 0, labelled = 0;
    for (const KernelSpec& s : specs) {
      defined += Define(s, "JLLM_X_PROBE") == "1";
      labelled += absl::StrContains(s.label, " x-probe");
    }
    const int all = static_cast<int>(specs.size());
    if (all > 0 && defined == all && labelled == all) return "every";
    if (defined == 0 && labelled == 0) return "none";
    return absl::StrCat(defined, "/", labelled, "/", all);
  };
  EXPECT_EQ(probed("q4_k_m", {}), "none");
  EXPECT_EQ(probed("q4_k_m", {{"JLLM_GEMV_X_PROBE", "0"}}), "none");
  EXPECT_EQ(probed("q4_k_m", {{"JLLM_GEMV_X_PROBE", "1"}}), "every");
  EXPECT_EQ(probed("q8_0", {{"JLLM_GEMV_X_PROBE", "1"}}), "every");
  EXPECT_EQ(probed("q4_k_m", {{"JLLM_GEMV_X_PROBE", "1"}, {"JLLM_GEMV_X", "i8"}}), "none");
  EXPECT_EQ(probed("q4_k_m", {{"JLLM_GEMV_X_PROBE", "1"}, {"JLLM_GEMV_X_LANES", "4"}}), "none");
  EXPECT_EQ(probed("bf16", {{"JLLM_GEMV_X_PROBE", "1"}}), "none");
}

// The size rule's deeper ring: GEMV groups of at least 40 MiB of weights stream through 4 slots
// a warp (2 of them issued before the grid wait, like the others' 3), the rest through 3. 14b:
// gate+up (2 x 17408 x 5120 q4_K, 95.6 MiB) and the downs (5120 x 17408, q4_K 47.8 MiB, q6_K 69.7)
// take 4; QKV (19 MiB), the attention output (14) and the logits (151936 x 5120 q6_K: wider than
// 4,096 columns) 3. 4b's biggest layer GEMV, gate+up (2 x 9728 x 2560 q4_K, 26.7 MiB), keeps 3;
// its logits (2,560 columns) take 4. Without the size rule, or with the threshold moved past
// every group, every ring is 3 again.
TEST(Lowering, DeepRingOnTheBiggestGemvs) {
  auto rings = [](const std::string& preset, const EnvVars& vars) {
    std::map<std::string, std::string> by_shape;  // label's shape -> "RING/EARLY"
    auto g = testing::PresetGraph(preset);
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) return by_shape;
    for (const KernelSpec& spec : DecodeGemvSpecs(*g, vars)) {
      const std::vector<std::string> words = absl::StrSplit(spec.label, ' ');
      EXPECT_GE(words.size(), 3u) << spec.label;
      if (words.size() < 3) continue;
      by_shape[absl::StrCat(words[1], " ", words[2])] =
          absl::StrCat(Define(spec, "JLLM_RING"), "/", Define(spec, "JLLM_EARLY_SLOTS"));
    }
    return by_shape;
  };
  const std::map<std::string, std::string> fourteen = {
      {"q4_K+q4_K+q4_K 5120+1024+1024x5120", "3/2"}, {"q4_K+q4_K+q6_K 5120+1024+1024x5120", "3/2"},
      {"q4_K 5120x5120", "3/2"},  {"q4_K+q4_K 17408+17408x5120", "4/2"},
      {"q4_K 5120x17408", "4/2"}, {"q6_K 5120x17408", "4/2"},
      {"q6_K 151936x5120", "3/2"}};
  EXPECT_EQ(rings("14b", {}), fourteen);
  const std::map<std::string, std::string> four = {
      {"q4_K+q4_K+q4_K 4096+1024+1024x2560", "3/2"}, {"q4_K+q4_K+q6_K 4096+1024+1024x2560", "3/2"},
      {"q4_K 2560x4096", "3/2"},  {"q4_K+q4_K 9728+9728x2560", "3/2"},
      {"q4_K 2560x9728", "3/2"},  {"q6_K 2560x9728", "3/2"},
      {"q6_K 151936x2560", "4/2"}};
  EXPECT_EQ(rings("4b", {}), four);
  for (const auto& off : EnvVars{{"JLLM_GEMV_BY_SIZE", "0"}, {"JLLM_GEMV_DEEP_RING_MIN_MIB", "100000"}}) {
    for (const auto& [shape, ring] : rings("14b", {off})) EXPECT_EQ(ring, "3/2") << off.first << ": " << shape;
  }
  // An asked-for ring is every GEMV's, deep or not.
  for (const auto& [shape, ring] : rings("14b", {{"JLLM_GEMV_RING", "3"}})) EXPECT_EQ(ring, "3/2") << shape;
}

// JLLM_GEMV_X_LANES: 2 lanes a run of 16 quantized columns on every decode GEMV by default,
// whatever K and the CTA's warps; the number asked for (1, 2 or 4) otherwise.
TEST(Lowering, GemvXLanesBySwitch) {
  auto g = testing::PresetGraph("0.6b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto lanes = [&](std::vector<std::pair<std::string, std::string>> vars) {  // "K/NW/XLANES"
    return DecodeGemvDefines(*g, vars, {"JLLM_K", "JLLM_NW", "JLLM_XLANES"});
  };
  // 0.6b: QKV, gate+up and the logits read K 1,024, attn-out 2,048, down 3,072.
  EXPECT_EQ(lanes({}), (std::set<std::string>{"1024/8/2", "1024/16/2", "2048/8/2", "3072/16/2"}));
  EXPECT_EQ(lanes({{"JLLM_GEMV_X_LANES", "1"}}),
            (std::set<std::string>{"1024/8/1", "1024/16/1", "2048/8/1", "3072/16/1"}));
  EXPECT_EQ(lanes({{"JLLM_GEMV_X_LANES", "4"}, {"JLLM_GEMV_NW", "4"}}),
            (std::set<std::string>{"1024/4/4", "2048/4/4", "3072/4/4"}));
  EXPECT_EQ(lanes({{"JLLM_GEMV_X_LANES", "3"}}), lanes({}));  // not a lane count: ignored with a warning
  EXPECT_EQ(lanes({{"JLLM_GEMV_X_LANES", "0"}}), lanes({}));
}

// JLLM_LOGITS_NORM (on by default): the decode step's logits GEMV runs the final RMSNorm as its
// prologue — x the residual stream the norm reads, gamma and eps the norm's — and the step has no
// rms_norm launch; prefill keeps it (its GEMM and last-row GEMV read the normed rows). At 0 the
// step launches the norm and the logits GEMV reads its output, as before. The residual stream
// lives until the logits node (memory_plan.cc), which now reads it.
TEST(Lowering, FinalNormIsTheDecodeLogitsGemvsPrologue) {
  auto g = testing::PresetGraph("0.6b");
  ASSERT_TRUE(g.ok()) << g.status();
  int norm = -1, logits = -1;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (g->nodes[i].op == ir::OpKind::kLogits) logits = static_cast<int>(i);
  }
  ASSERT_GE(logits, 0);
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (g->nodes[i].op == ir::OpKind::kRmsNorm && g->nodes[i].outputs[0] == g->nodes[logits].inputs[0]) {
      norm = static_cast<int>(i);
    }
  }
  ASSERT_GE(norm, 0) << "the preset's final rms_norm feeds its logits";
  const ir::Node& n = g->nodes[norm];
  for (const char* value : {"", "1", "0"}) {
    SCOPED_TRACE(absl::StrCat("JLLM_LOGITS_NORM=", value));
    std::optional<::jllm::testing::ScopedEnv> env;
    if (*value != '\0') env.emplace(std::vector<std::pair<std::string, std::string>>{{"JLLM_LOGITS_NORM", value}});
    const bool folded = std::string(value) != "0";
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    int decode_norms = 0;
    for (const NodeLowering& nl : lg->nodes) {
      for (const Launch& l : nl.decode) decode_norms += l.kind == LaunchKind::kRmsNorm;
    }
    EXPECT_EQ(decode_norms, folded ? 0 : 1);  // every other norm is its projections' prologue
    EXPECT_EQ(lg->nodes[norm].decode.size(), folded ? 0u : 1u);
    ASSERT_EQ(lg->nodes[norm].prefill.size(), 1u);
    EXPECT_EQ(lg->nodes[norm].prefill[0].kind, LaunchKind::kRmsNorm);
    ASSERT_EQ(lg->nodes[logits].decode.size(), 1u);
    const Launch& l = lg->nodes[logits].decode[0];
    ASSERT_EQ(l.kind, LaunchKind::kGemv);
    const KernelSpec& s = lg->specs[l.spec];
    EXPECT_EQ(Define(s, "JLLM_NORM"), folded ? "1" : "0");
    EXPECT_EQ(absl::StrContains(s.label, "+norm"), folded) << s.label;
    const Operand x = l.ops[slot::kGemvX], gamma = l.ops[slot::kGemvGamma];
    EXPECT_EQ(x.kind, Operand::Kind::kValue);
    EXPECT_EQ(x.id, folded ? n.inputs[0] : n.outputs[0]);
    EXPECT_EQ(gamma.present(), folded);
    if (folded) {
      EXPECT_EQ(gamma.kind, Operand::Kind::kWeight);
      EXPECT_EQ(gamma.id, n.weights[0]);
      EXPECT_FLOAT_EQ(l.p0, n.attrs_as<ir::RmsNormAttrs>().eps);
    }
    EXPECT_EQ(lg->nodes[logits].extra_reads, folded ? std::vector<ir::ValueId>{n.inputs[0]} : std::vector<ir::ValueId>{});
  }
}

// JLLM_GREEDY_LOGITS (on by default): the logits node gets a second decode GEMV for greedy steps,
// the same kernel and operands as its decode launch plus the draw (JLLM_ARGMAX, "+argmax"); the
// sampler stays for every other draw. At 0, none.
TEST(Lowering, GreedyStepsDrawInTheLogitsGemv) {
  auto g = testing::PresetGraph("0.6b");
  ASSERT_TRUE(g.ok()) << g.status();
  int logits = -1;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (g->nodes[i].op == ir::OpKind::kLogits) logits = static_cast<int>(i);
  }
  ASSERT_GE(logits, 0);
  for (const char* value : {"", "1", "0"}) {
    SCOPED_TRACE(absl::StrCat("JLLM_GREEDY_LOGITS=", value));
    std::optional<::jllm::testing::ScopedEnv> env;
    if (*value != '\0') env.emplace(std::vector<std::pair<std::string, std::string>>{{"JLLM_GREEDY_LOGITS", value}});
    const bool on = std::string(value) != "0";
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    EXPECT_GE(lg->sample.spec, 0);  // the sampler is there either way
    int argmax_specs = 0;
    for (const KernelSpec& s : lg->specs) argmax_specs += absl::StrContains(s.defines, "JLLM_ARGMAX");
    if (!on) {
      EXPECT_EQ(lg->greedy_logits.spec, -1);
      EXPECT_EQ(lg->greedy_node, -1);
      EXPECT_EQ(argmax_specs, 0);
      continue;
    }
    EXPECT_EQ(argmax_specs, 1);
    ASSERT_EQ(lg->greedy_node, logits);
    ASSERT_EQ(lg->nodes[logits].decode.size(), 1u);
    const Launch& plain = lg->nodes[logits].decode[0];
    const Launch& greedy = lg->greedy_logits;
    ASSERT_EQ(greedy.kind, LaunchKind::kGemv);
    ASSERT_NE(greedy.spec, plain.spec);
    const KernelSpec& ps = lg->specs[plain.spec];
    const KernelSpec& gs = lg->specs[greedy.spec];
    EXPECT_EQ(Define(gs, "JLLM_ARGMAX"), "1");
    EXPECT_EQ(Define(ps, "JLLM_ARGMAX"), "");
    EXPECT_EQ(gs.label, ps.label + " +argmax");
    EXPECT_EQ(Define(gs, "JLLM_NORM"), Define(ps, "JLLM_NORM"));
    EXPECT_EQ(Define(gs, "JLLM_KSPLIT"), Define(ps, "JLLM_KSPLIT"));
    EXPECT_EQ(gs.grid_x, ps.grid_x);
    ASSERT_EQ(greedy.ops.size(), plain.ops.size());
    for (size_t i = 0; i < greedy.ops.size(); ++i) {
      EXPECT_EQ(greedy.ops[i].kind, plain.ops[i].kind) << "slot " << i;
      EXPECT_EQ(greedy.ops[i].id, plain.ops[i].id) << "slot " << i;
    }
    EXPECT_FLOAT_EQ(greedy.p0, plain.p0);
    EXPECT_EQ(greedy.tune_key, plain.tune_key);
  }
}

// JLLM_GEMV_EMBED=1: the decode step's first GEMV (0.6b's QKV, normed, reading the embedding's
// output) stages the token's row of the q6_K table itself — no embed launch in the decode step,
// the GEMV's EMBED defines name the table's type and rows, its operands the tokens, positions,
// table and the residual value it writes (its x) — while prefill keeps embed.cu; at 0 (the
// default), with XLANES 4 (runs of 4 columns a lane, not 8) or with the late norm off, nothing
// folds.
TEST(Lowering, FirstGemvStagesTheEmbeddingRowBySwitch) {
  auto g = testing::PresetGraph("0.6b");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->nodes[0].op, ir::OpKind::kEmbed);
  const ir::WeightRef& table = g->weights[g->nodes[0].weights[0]];
  ASSERT_EQ(table.type, GgmlType::kQ6_K);
  const std::vector<std::vector<std::pair<std::string, std::string>>> settings = {
      {}, {{"JLLM_GEMV_EMBED", "1"}}, {{"JLLM_GEMV_EMBED", "1"}, {"JLLM_GEMV_X_LANES", "4"}},
      {{"JLLM_GEMV_EMBED", "1"}, {"JLLM_GEMV_LATE_NORM", "0"}}};
  for (size_t i = 0; i < settings.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("setting ", i));
    ::jllm::testing::ScopedEnv env(settings[i]);
    const bool folds = i == 1;
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    ASSERT_EQ(lg->nodes[0].prefill.size(), 1u);
    EXPECT_EQ(lg->nodes[0].prefill[0].kind, LaunchKind::kEmbed);
    int embed_gemvs = 0;
    for (const KernelSpec& s : lg->specs) embed_gemvs += absl::StrContains(s.defines, "JLLM_EMBED=");
    EXPECT_EQ(embed_gemvs, folds ? 1 : 0);
    ASSERT_EQ(lg->nodes[0].decode.size(), folds ? 0u : 1u);
    ASSERT_EQ(lg->nodes[1].decode.size(), 1u);
    const Launch& first = lg->nodes[1].decode[0];
    ASSERT_EQ(first.kind, LaunchKind::kGemv);
    const KernelSpec& fs = lg->specs[first.spec];
    if (!folds) {
      EXPECT_FALSE(first.ops[slot::kGemvEmbedTable].present());
      EXPECT_FALSE(absl::StrContains(fs.label, "+embed"));
      continue;
    }
    EXPECT_TRUE(absl::EndsWith(fs.label, " +embed")) << fs.label;
    EXPECT_EQ(Define(fs, "JLLM_EMBED"), "1");
    EXPECT_EQ(Define(fs, "JLLM_EMBED_TYPE"), absl::StrCat(static_cast<int>(table.type)));
    EXPECT_EQ(Define(fs, "JLLM_EMBED_V"), absl::StrCat(table.dim(1)));
    EXPECT_EQ(Define(fs, "JLLM_NORM"), "1");
    EXPECT_EQ(Define(fs, "JLLM_KSPLIT"), "1");
    const ir::Node& embed = g->nodes[0];
    EXPECT_EQ(first.ops[slot::kGemvEmbedTokens].id, embed.inputs[0]);
    EXPECT_EQ(first.ops[slot::kGemvEmbedPos].id, *g->FindValue(ir::kPositionsInput));
    EXPECT_EQ(first.ops[slot::kGemvEmbedTable].kind, Operand::Kind::kWeight);
    EXPECT_EQ(first.ops[slot::kGemvEmbedTable].id, embed.weights[0]);
    EXPECT_EQ(first.ops[slot::kGemvEmbedY].id, embed.outputs[0]);
    EXPECT_EQ(first.ops[slot::kGemvX].id, embed.outputs[0]);
    // The tokens and positions live until the GEMV reads them (memory_plan.cc).
    EXPECT_THAT(lg->nodes[1].extra_reads,
                ::testing::UnorderedElementsAre(embed.inputs[0], *g->FindValue(ir::kPositionsInput)));
    // Every later GEMV stages x as before.
    for (size_t n = 2; n < lg->nodes.size(); ++n) {
      for (const Launch& l : lg->nodes[n].decode) {
        if (l.kind == LaunchKind::kGemv) {
          EXPECT_FALSE(l.ops[slot::kGemvEmbedTable].present()) << "node " << n;
        }
      }
    }
  }
}

// JLLM_GEMV_TMA (on by default): every decode GEMV of the 4b preset reads its ring through
// tensor maps, one a matrix with the box of an item's rows × a step, and takes the alignment
// slack; never with the switch at 0, on a target without tensor-map copies, with cp.async, or
// where a box would land misaligned (one q4_K row of 576 bytes a box).
TEST(Lowering, GemvTensorMapCopiesBySwitch) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  struct Seen {
    int gemvs = 0, tma = 0;
    std::set<std::string> gate_up;  // every layer's tile boxes, "row_bytes/rows/stride/box_bytes/box_rows"
    int64_t gate_up_smem = 0;
  };
  auto lower = [&](std::vector<std::pair<std::string, std::string>> vars, LoweringTarget target = {}) {
    ::jllm::testing::ScopedEnv env(vars);
    Seen seen;
    auto lg = LowerGraph(*g, nullptr, target);
    EXPECT_TRUE(lg.ok()) << lg.status();
    if (!lg.ok()) return seen;
    for (const Launch* l : DecodeLaunches(*lg)) {
      if (l->kind != LaunchKind::kGemv) continue;
      const KernelSpec& s = lg->specs[l->spec];
      ++seen.gemvs;
      const bool on = Define(s, "JLLM_TMA") == "1";
      seen.tma += on;
      EXPECT_EQ(on, absl::StrContains(s.label, " tma")) << s.label;
      for (int m = 0; m < 3; ++m) {
        EXPECT_EQ(l->tile[m].box_bytes > 0, on && m < std::stoi(Define(s, "JLLM_NM"))) << s.label << " member " << m;
      }
      if (absl::StrContains(s.label, "+swiglu")) {
        for (int m = 0; m < 2; ++m) {
          const TileBox& t = l->tile[m];
          seen.gate_up.insert(absl::StrCat(t.row_bytes, "/", t.rows, "/", t.row_stride, "/", t.box_bytes, "/", t.box_rows));
        }
        seen.gate_up_smem = s.smem;
      }
    }
    return seen;
  };
  const Seen base = lower({{"JLLM_GEMV_TMA", "0"}});
  EXPECT_GT(base.gemvs, 0);
  EXPECT_EQ(base.tma, 0);
  const Seen tma = lower({});  // the default since stop 28
  EXPECT_EQ(tma.tma, tma.gemvs);
  EXPECT_EQ(lower({{"JLLM_GEMV_TMA", "1"}}).tma, tma.gemvs);
  // gate and up: 9,728 rows of 10 q4_K blocks (1,440 bytes); pairs: a box of 4 rows × 8 pair
  // units of 36 bytes.
  EXPECT_EQ(tma.gate_up, std::set<std::string>{"1440/9728/1440/288/4"});
  EXPECT_EQ(tma.gate_up_smem, base.gate_up_smem + 128);
  EXPECT_EQ(lower({{"JLLM_GEMV_TMA", "1"}}, LoweringTarget{kSmemPerBlockSm90, 132, false}).tma, 0);
  EXPECT_EQ(lower({{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_BULK", "0"}}).tma, 0);
  EXPECT_EQ(lower({{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_PAIRS", "0"}, {"JLLM_GEMV_R", "1"}}).tma, 0);
  EXPECT_EQ(lower({{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_PAIRS", "0"}}).tma, tma.gemvs);  // R 2: 1,152-byte boxes
}

// The labels of the decode GEMVs of `g` lowered under `vars` whose spec defines `define` as 1.
std::set<std::string> GemvLabelsWith(const ir::Graph& g, const std::vector<std::pair<std::string, std::string>>& vars,
                                     const std::string& define) {
  ::jllm::testing::ScopedEnv env(vars);
  std::set<std::string> seen;
  auto lg = LowerGraph(g);
  EXPECT_TRUE(lg.ok()) << lg.status();
  if (!lg.ok()) return seen;
  for (const Launch* l : DecodeLaunches(*lg)) {
    if (l->kind != LaunchKind::kGemv) continue;
    const KernelSpec& s = lg->specs[l->spec];
    if (Define(s, define) == "1") seen.insert(s.label);
  }
  return seen;
}

// The switches of a GEMV group's work split, each reaching only the decode GEMVs it is for (4b),
// and none by default: JLLM_GEMV_WEIGHTED (CTA ranges of equal bytes) only where the members
// differ in type (the QKV triples with a q6_K V); JLLM_GEMV_ALIGNED (CTA ranges inside one member
// each) in every GEMV of several members without a K split (both QKV triples), none with one;
// JLLM_GEMV_SLOT_SKIP (x staged by the CTA's members) only where the x slots are of several types
// (the QKV with a q6_K V). Never gate+up (one item kind) or a single matmul.
TEST(Lowering, GemvGroupSwitchesReachOnlyTheirGroups) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string mixed = "gemv q4_K+q4_K+q6_K 4096+1024+1024x2560 +norm x:i16 ring3 tma";
  const std::string q4 = "gemv q4_K+q4_K+q4_K 4096+1024+1024x2560 +norm x:i16 ring3 tma";
  struct Case {
    std::string define;
    std::vector<std::pair<std::string, std::string>> vars;
    std::set<std::string> labels;
  };
  const std::vector<Case> cases = {
      {"JLLM_WEIGHTED", {}, {}},
      {"JLLM_WEIGHTED", {{"JLLM_GEMV_WEIGHTED", "1"}}, {mixed + " weighted pairs"}},
      {"JLLM_ALIGNED", {}, {}},
      {"JLLM_ALIGNED", {{"JLLM_GEMV_ALIGNED", "1"}}, {mixed + " aligned pairs", q4 + " aligned pairs"}},
      {"JLLM_ALIGNED", {{"JLLM_GEMV_ALIGNED", "1"}, {"JLLM_GEMV_KSPLIT", "2"}}, {}},
      {"JLLM_SLOT_SKIP", {}, {}},
      {"JLLM_SLOT_SKIP", {{"JLLM_GEMV_SLOT_SKIP", "1"}}, {mixed + " slot-skip pairs"}},
  };
  for (const Case& c : cases) {
    std::string vars;
    for (const auto& [k, v] : c.vars) vars += k + "=" + v + " ";
    EXPECT_EQ(GemvLabelsWith(*g, c.vars, c.define), c.labels) << c.define << " with " << vars;
  }
}

// launch_geometry.h's byte-weighted CTA ranges (gemv.cu, JLLM_WEIGHTED): contiguous, covering
// every item once, each CTA's bytes within an item of its share; for 4b's QKV (pairs: 4-row
// items of 5,760 bytes for q and k, 8,448 for the q6_K v) on 264 CTAs the heaviest CTA carries
// fewer bytes than with equal item counts.
TEST(GemvGeometry, ByteWeightedRangesCoverEveryItemWithEqualBytes) {
  const int64_t q4 = 4 * 1440, q6 = 4 * 2112;
  ASSERT_EQ(q6, 4 * jllm::cuda::layout::RowStride(jllm::cuda::layout::kQ6_K, 2560));
  for (const int ksplit : {1, 3}) {
    const geometry::GemvItemCosts t = {ksplit, 3, {1024, 256, 256}, {q4, q4, q6}};
    const int items = ksplit * (1024 + 256 + 256);
    auto cost = [&](int i) { return t.item_cost[(i % 1536) < 1024 ? 0 : (i % 1536) < 1280 ? 1 : 2]; };
    for (const int G : {1, 7, 132, 264, 5000}) {
      const int64_t total = geometry::GemvSplitCost(t) * ksplit;
      int prev = 0;
      int64_t heaviest = 0;
      for (int b = 0; b < G; ++b) {
        const int begin = geometry::GemvItemAtCost(total * b / G, t), end = geometry::GemvItemAtCost(total * (b + 1) / G, t);
        EXPECT_EQ(begin, prev) << "ksplit " << ksplit << " G " << G << " CTA " << b;
        EXPECT_LE(begin, end) << "ksplit " << ksplit << " G " << G << " CTA " << b;
        int64_t bytes = 0;
        for (int i = begin; i < end; ++i) bytes += cost(i);
        EXPECT_LE(std::abs(static_cast<double>(bytes) - static_cast<double>(total) / G), static_cast<double>(q6))
            << "ksplit " << ksplit << " G " << G << " CTA " << b;
        heaviest = std::max(heaviest, bytes);
        prev = end;
      }
      EXPECT_EQ(prev, items) << "ksplit " << ksplit << " G " << G;
      if (ksplit == 1 && G == 264) {
        int64_t equal_items_heaviest = 0;
        for (int b = 0; b < G; ++b) {
          int64_t bytes = 0;
          for (int i = items * b / G; i < items * (b + 1) / G; ++i) bytes += cost(i);
          equal_items_heaviest = std::max(equal_items_heaviest, bytes);
        }
        EXPECT_LT(heaviest, equal_items_heaviest);
      }
    }
  }
}

// A kernel nothing can shrink enough is refused by the lowering, naming it and the GPU's limit.
TEST(Lowering, KernelBeyondTheTargetsSharedMemoryIsRefusedByName) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto lg = LowerGraph(*g, nullptr, LoweringTarget{16 * 1024});
  ASSERT_FALSE(lg.ok());
  EXPECT_THAT(std::string(lg.status().message()), ::testing::HasSubstr("static ones; this GPU allows 16384"));
  EXPECT_THAT(std::string(lg.status().message()), ::testing::HasSubstr("cuda: kernel "));
}

// JLLM_GEMV_GRID caps every decode GEMV's CTAs (0, the default: one an item, as many as fit the
// SMs at load); 4b's QKV has 6,144 rows in items of 4 (pairs), so 1,536 CTAs uncapped.
TEST(Lowering, GemvGridCappedBySwitch) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto grids = [&] {
    auto lg = LowerGraph(*g);
    EXPECT_TRUE(lg.ok()) << lg.status();
    std::vector<int64_t> out;
    for (const Launch* l : DecodeLaunches(*lg)) {
      if (l->kind == LaunchKind::kGemv) out.push_back(lg->specs[l->spec].grid_x);
    }
    return out;
  };
  const std::vector<int64_t> uncapped = grids();
  ASSERT_FALSE(uncapped.empty());
  EXPECT_EQ(uncapped[0], 1536);  // the first layer's QKV
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_GRID", "100"}});
  const std::vector<int64_t> capped = grids();
  ASSERT_EQ(capped.size(), uncapped.size());
  for (size_t i = 0; i < capped.size(); ++i) EXPECT_EQ(capped[i], std::min<int64_t>(uncapped[i], 100)) << i;
}

// The feed-forward GEMVs (gate+up with the SwiGLU, and the down projection reading its output)
// take 16 warps a CTA; by size (JLLM_GEMV_BY_SIZE, the default) so does every GEMV of at least
// 4 MiB — all of 4b's —, without it every other decode GEMV 8: 4b's 36 layers, and the logits.
TEST(Lowering, FeedForwardGemvsTakeSixteenWarps) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  for (const bool by_size : {true, false}) {
    ::jllm::testing::ScopedEnv env(
        std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_BY_SIZE", by_size ? "1" : "0"}});
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    int ffn = 0, other = 0;
    for (const Launch* l : DecodeLaunches(*lg)) {
      if (l->kind != LaunchKind::kGemv) continue;
      const KernelSpec& spec = lg->specs[l->spec];
      const bool feed_forward = spec.label.find("9728") != std::string::npos;  // 4b's FFN width
      // By size (the default): every 4b GEMV is at least 4 MiB (attn-out 5.9 MB), so 16 warps.
      EXPECT_EQ(spec.threads, feed_forward || by_size ? 512 : 256) << spec.label;
      EXPECT_EQ(Define(spec, "JLLM_MINB"), feed_forward || by_size ? "1" : "2") << spec.label;
      ++(feed_forward ? ffn : other);
    }
    EXPECT_EQ(ffn, 2 * 36);
    EXPECT_EQ(other, 2 * 36 + 1);  // QKV and attn-out in each layer, and the logits
  }
}

// JLLM_GEMV_ONLY narrows the GEMV knobs to the shapes whose text contains it: with NW 4 for
// "151936" only the logits GEMV (151,936 vocabulary rows) takes 4 warps, the others their default.
TEST(Lowering, GemvKnobsForOneShape) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto narrow = [&] {
    auto lg = LowerGraph(*g);
    EXPECT_TRUE(lg.ok()) << lg.status();
    std::vector<std::string> out;
    for (const Launch* l : DecodeLaunches(*lg)) {
      if (l->kind == LaunchKind::kGemv && lg->specs[l->spec].threads == 128) out.push_back(lg->specs[l->spec].label);
    }
    return out;
  };
  ::jllm::testing::ScopedEnv env(
      std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_NW", "4"}, {"JLLM_GEMV_ONLY", "151936"}});
  std::vector<std::string> four = narrow();
  ASSERT_EQ(four.size(), 1u);
  EXPECT_NE(four[0].find("151936"), std::string::npos) << four[0];
  // A list: the logits and every down projection (2560 rows x 9728).
  ::jllm::testing::ScopedEnv list(std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_ONLY", "151936,2560x9728"}});
  EXPECT_EQ(narrow().size(), 1u + 36u);
}

// The prefill gate+up pair where its grid fills the GPU at a 512-token chunk (JLLM_GEMM_PAIR's
// default, 2): 4b's 9,728-row matrices (76 row tiles x 8 token tiles = 608 CTAs) pair, 0.6b's
// 3,072 rows (192 CTAs) do not; JLLM_GEMM_PAIR=1 pairs those too, 0 neither.
TEST(Lowering, GateAndUpPairWhereThePairFillsTheGpu) {
  auto pairs = [](const std::string& preset) {
    auto g = testing::PresetGraph(preset);
    EXPECT_TRUE(g.ok()) << g.status();
    auto lg = LowerGraph(*g);
    EXPECT_TRUE(lg.ok()) << lg.status();
    int n = 0;
    for (const NodeLowering& nl : lg->nodes) {
      for (const Launch& l : nl.prefill) n += l.kind == LaunchKind::kGemm && l.ops[slot::kGemmW2].present();
    }
    return n;
  };
  EXPECT_EQ(pairs("4b"), 36);
  EXPECT_EQ(pairs("0.6b"), 0);
  {
    ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMM_PAIR", "1"}});
    EXPECT_EQ(pairs("0.6b"), 28);
  }
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMM_PAIR", "0"}});
  EXPECT_EQ(pairs("4b"), 0);
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

// The decode GEMV specs of `lg` by tuning key, in step order.
std::vector<std::pair<std::string, KernelSpec>> DecodeGemvs(const LoweredGraph& lg) {
  std::vector<std::pair<std::string, KernelSpec>> out;
  for (const Launch* l : DecodeLaunches(lg)) {
    if (l->kind == LaunchKind::kGemv) out.emplace_back(l->tune_key, lg.specs[l->spec]);
  }
  return out;
}

// A tuning table sets the knobs of the shapes it names and of no other: with 4 warps, 4 CTAs an
// SM and a ring of 2 for 4b's attention output projection (2,560 rows of 4,096 q4_K columns, the
// residual added), its 36 GEMVs change and every other GEMV lowers as without a table.
TEST(Lowering, TuningTableSetsTheKnobsOfItsShapesOnly) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto plain = LowerGraph(*g);
  ASSERT_TRUE(plain.ok()) << plain.status();
  TuningTable table;
  table.gemv["q4_K 2560x4096 +residual"] = {{"nw", 4}, {"minb", 4}, {"ring", 2}, {"per_sm", 2}};
  auto tuned = LowerGraph(*g, &table);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  const auto before = DecodeGemvs(*plain), after = DecodeGemvs(*tuned);
  ASSERT_EQ(before.size(), after.size());
  int changed = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    ASSERT_EQ(before[i].first, after[i].first) << i;
    EXPECT_EQ(after[i].second.label.rfind("gemv " + after[i].first, 0), 0u) << after[i].second.label;
    if (after[i].first != "q4_K 2560x4096 +residual") {
      EXPECT_EQ(before[i].second, after[i].second) << after[i].second.label;
      continue;
    }
    ++changed;
    EXPECT_EQ(after[i].second.threads, 128);
    EXPECT_EQ(Define(after[i].second, "JLLM_MINB"), "4");
    EXPECT_EQ(Define(after[i].second, "JLLM_RING"), "2");
    EXPECT_EQ(after[i].second.max_per_sm, 2);
    EXPECT_EQ(before[i].second.threads, 512);  // the heuristics: 16 warps (5.9 MB, GemvBySize)
    EXPECT_EQ(before[i].second.max_per_sm, 0);  // and as many CTAs an SM as fit
  }
  EXPECT_EQ(changed, 36);
}

// An environment variable still overrides the table (the A/B switch), and JLLM_TUNING=0 ignores
// the table (the A/B of tuned against built-in choices).
TEST(Lowering, SwitchesOverrideTheTableAndTuningZeroIgnoresIt) {
  auto g = testing::PresetGraph("4b");
  ASSERT_TRUE(g.ok()) << g.status();
  TuningTable table;
  table.gemv["q4_K 2560x4096 +residual"] = {{"nw", 4}, {"minb", 4}};
  auto threads = [&] {
    auto lg = LowerGraph(*g, &table);
    EXPECT_TRUE(lg.ok()) << lg.status();
    for (const auto& [key, spec] : DecodeGemvs(*lg)) {
      if (key == "q4_K 2560x4096 +residual") return spec.threads;
    }
    return int64_t{-1};
  };
  EXPECT_EQ(threads(), 128);
  {
    ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_NW", "2"}});
    EXPECT_EQ(threads(), 64);
  }
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_TUNING", "0"}});
  EXPECT_EQ(threads(), 512);  // the heuristics' 16 warps (GemvBySize)
}

// A table naming a shape the graph has no GEMV of (another model's table, a typo) is refused,
// naming the shape and listing the graph's own.
TEST(Lowering, TuningTableForAnotherModelIsRefused) {
  auto g = testing::PresetGraph("0.6b");
  ASSERT_TRUE(g.ok()) << g.status();
  TuningTable table;
  table.gemv["q4_K 2560x4096 +residual"] = {{"nw", 16}};  // 4b's attention output projection
  auto lg = LowerGraph(*g, &table);
  ASSERT_FALSE(lg.ok());
  const std::string msg(lg.status().message());
  EXPECT_NE(msg.find("GEMV shape 'q4_K 2560x4096 +residual' is not one of this graph's"), std::string::npos) << msg;
  EXPECT_NE(msg.find("q6_K 151936x1024"), std::string::npos) << msg;  // 0.6b's logits, listed
  EXPECT_NE(msg.find("jllm-compile --tune"), std::string::npos) << msg;
}

// The K split aims at items for the warps of 8-warp CTAs whatever a GEMV's CTA shape: 4b's downs
// (640 row groups of 4, the 16-warp feed-forward CTAs) are not split — measured faster unsplit on
// the H200 (docs/PERF.md, stop 23) — while 0.6b's (256 row groups) still are.
TEST(Lowering, KSplitCountsEightWarpCtas) {
  struct Case {
    std::string preset, down_columns;  // the down projection's K: the feed-forward width
    bool split_downs;
  };
  for (const auto& [preset, down_columns, split_downs] : std::vector<Case>{{"4b", "x9728", false}, {"0.6b", "x3072", true}}) {
    auto g = testing::PresetGraph(preset);
    ASSERT_TRUE(g.ok()) << g.status();
    auto lg = LowerGraph(*g);
    ASSERT_TRUE(lg.ok()) << lg.status();
    int downs = 0;
    for (const auto& [key, spec] : DecodeGemvs(*lg)) {
      const bool down = key.find(down_columns + " +residual") != std::string::npos;
      const int ksplit = std::stoi(Define(spec, "JLLM_KSPLIT"));
      if (down) {
        ++downs;
        EXPECT_EQ(ksplit > 1, split_downs) << preset << " " << spec.label;
      } else if (preset == "4b") {
        EXPECT_EQ(ksplit, 1) << spec.label;
      }
    }
    EXPECT_EQ(downs, preset == "4b" ? 36 : 28) << preset;
  }
}

// The heuristics that fill a GPU count the target's SMs: on the H200 (132) 0.6b's downs split
// along K for enough items a warp, its narrow prefill GEMMs take 64-token tiles and its gate+up
// no pair; on the Orin Nano's 8 SMs every GEMV has enough items unsplit (a split would add only
// its ticket), every prefill GEMM fills the GPU with 128-token tiles, and decode attention's 8
// CTAs of one split each fill it (no merge). The lowering for the H200's own numbers is the
// default one.
TEST(Lowering, FillHeuristicsCountTheTargetsSms) {
  auto g = testing::PresetGraph("0.6b");
  ASSERT_TRUE(g.ok()) << g.status();
  auto h200 = LowerGraph(*g, nullptr, LoweringTarget{kSmemPerBlockSm90, 132});
  auto by_default = LowerGraph(*g);
  auto orin = LowerGraph(*g, nullptr, TargetForArch("sm_87"));
  ASSERT_TRUE(h200.ok()) << h200.status();
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  ASSERT_TRUE(orin.ok()) << orin.status();
  ASSERT_EQ(h200->specs.size(), by_default->specs.size());
  for (size_t i = 0; i < h200->specs.size(); ++i) EXPECT_EQ(h200->specs[i].ModuleKey(), by_default->specs[i].ModuleKey());
  auto splits = [](const LoweredGraph& lg) {
    int split = 0;
    for (const auto& [key, spec] : DecodeGemvs(lg)) split += std::stoi(Define(spec, "JLLM_KSPLIT")) > 1 ? 1 : 0;
    return split;
  };
  EXPECT_GE(splits(*h200), 28);  // the downs at least
  EXPECT_EQ(splits(*orin), 0);
  // The token tiles (JLLM_BN) of the prefill GEMMs that are not a gate+up pair, and the pairs.
  auto gemms = [](const LoweredGraph& lg) {
    std::pair<std::set<std::string>, int> out{{}, 0};
    for (const KernelSpec& s : lg.specs) {
      if (s.source != "gemm_f16.cu") continue;
      if (Define(s, "JLLM_PAIR") == "1") {
        ++out.second;  // (64 tokens at most)
      } else {
        out.first.insert(Define(s, "JLLM_BN"));
      }
    }
    return out;
  };
  const auto [h200_tiles, h200_pairs] = gemms(*h200);
  const auto [orin_tiles, orin_pairs] = gemms(*orin);
  EXPECT_EQ(h200_tiles, (std::set<std::string>{"64", "128"}));
  EXPECT_EQ(orin_tiles, (std::set<std::string>{"128"}));
  EXPECT_EQ(h200_pairs, 0);
  EXPECT_GT(orin_pairs, 0);
  // Decode attention (8 kv heads): 16 splits on the H200 (128 CTAs, one wave), one on the Orin.
  auto attention_splits = [](const LoweredGraph& lg) {
    std::set<std::string> out;
    for (const KernelSpec& s : lg.specs) {
      if (s.source == "attention_mma.cu") out.insert(Define(s, "JLLM_NSPLIT"));
    }
    return out;
  };
  EXPECT_EQ(attention_splits(*h200), (std::set<std::string>{"16"}));
  EXPECT_EQ(attention_splits(*orin), (std::set<std::string>{"1"}));
}

// A persistent grid: as many CTAs as fit every SM, at most max_per_sm an SM (the room PER_SM
// leaves for the next kernel), never more than the kernel has items or fewer than it accepts.
TEST(KernelSpecGrid, PersistentGridTakesWhatFitsUpToPerSmCap) {
  KernelSpec s;
  s.persistent = true;
  s.grid_x = 1000;
  EXPECT_EQ(s.PersistentGridX(3, 132), 396);
  s.max_per_sm = 1;
  EXPECT_EQ(s.PersistentGridX(3, 132), 132);
  s.max_per_sm = 5;  // a cap above what fits changes nothing
  EXPECT_EQ(s.PersistentGridX(3, 132), 396);
  s.grid_x = 100;  // fewer items than CTAs
  EXPECT_EQ(s.PersistentGridX(3, 132), 100);
  s.grid_x = 1000;
  s.min_grid_x = 500;
  s.max_per_sm = 1;
  EXPECT_EQ(s.PersistentGridX(3, 132), 500);
}

}  // namespace
}  // namespace jllm::cuda
