// Each fused op against the unfused composition it replaces, in one graph fed the same inputs,
// and int8 against f16 KV storage within a bound derived from the int8 rounding.
//
// Fused and unfused spellings do the same f32 operations in the same order in cpu_ref, so they
// agree exactly: the bound is NMSE 0, bit-identical outputs (measured so). Any tolerance would
// only hide a change of what is computed.
#include <algorithm>
#include <cmath>

#include "test_support.h"
#include "toy_model.h"

namespace jllm::cpu_ref::testing {
namespace {

using ir::DType;
using ir::kDimT;
using ir::OpKind;

constexpr double kFusedNmse = 0;  // bit-identical

TEST(FusionTest, RmsNormPrologueAndResidualEpilogueMatchUnfused) {
  std::mt19937 rng(7);
  const int64_t k = 512, n = 128, t = 4;
  TestModel m;
  auto w = m.AddRandomWeight("w", GgmlType::kQ4_K, {k, n}, rng);
  auto gamma = m.AddRandomWeight("gamma", GgmlType::kF32, {k}, rng, 0.1f, 1.0f);
  auto x = m.Input("x", DType::kF32, {kDimT, k});
  auto r = m.Input("r", DType::kF32, {kDimT, n});
  // Unfused: r + W·(rms_norm(x)·gamma).
  auto h = m.Node1(OpKind::kRmsNorm, {x}, {gamma}, ir::RmsNormAttrs{1e-6f}, "h");
  auto y = m.Node1(OpKind::kMatMul, {h}, {w}, ir::MatMulAttrs{}, "y");
  auto sum = m.Node1(OpKind::kAdd, {r, y}, {}, ir::NoAttrs{}, "sum");
  // Fused: one matmul with both.
  ir::MatMulAttrs attrs;
  attrs.norm_eps = 1e-6f;
  attrs.residual = true;
  auto fused = m.Node1(OpKind::kMatMul, {x, r}, {w, gamma}, attrs, "fused");
  auto exec = m.Executor();
  ASSERT_NE(exec, nullptr);
  std::vector<float> xs = Random(rng, t * k), rs = Random(rng, t * n);
  ASSERT_TRUE(exec->Run(t, 0, {{"x", xs, {}}, {"r", rs, {}}}).ok());
  EXPECT_LE(Nmse(Values(*exec, fused), Values(*exec, sum)), kFusedNmse);
}

TEST(FusionTest, MatMulGroupMatchesSeparateMatMuls) {
  std::mt19937 rng(8);
  const int64_t k = 256, t = 3;
  TestModel m;
  auto wq = m.AddRandomWeight("wq", GgmlType::kQ4_K, {k, 256}, rng);
  auto wk = m.AddRandomWeight("wk", GgmlType::kQ4_K, {k, 128}, rng);
  auto wv = m.AddRandomWeight("wv", GgmlType::kQ6_K, {k, 128}, rng);
  auto gamma = m.AddRandomWeight("gamma", GgmlType::kF32, {k}, rng, 0.1f, 1.0f);
  auto x = m.Input("x", DType::kF32, {kDimT, k});
  auto h = m.Node1(OpKind::kRmsNorm, {x}, {gamma}, ir::RmsNormAttrs{1e-6f}, "h");
  std::vector<ir::ValueId> separate;
  for (auto [w, name] : {std::pair{wq, "q"}, {wk, "k"}, {wv, "v"}}) {
    separate.push_back(m.Node1(OpKind::kMatMul, {h}, {w}, ir::MatMulAttrs{}, name));
  }
  ir::MatMulAttrs attrs;
  attrs.norm_eps = 1e-6f;
  auto group = m.Node(OpKind::kMatMulGroup, {x}, {wq, wk, wv, gamma}, attrs, {"gq", "gk", "gv"});
  auto exec = m.Executor();
  ASSERT_NE(exec, nullptr);
  std::vector<float> xs = Random(rng, t * k);
  ASSERT_TRUE(exec->Run(t, 0, {{"x", xs, {}}}).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(Nmse(Values(*exec, group[i]), Values(*exec, separate[i])), kFusedNmse) << i;
  }
}

TEST(FusionTest, SwiGluEpilogueMatchesUnfused) {
  std::mt19937 rng(9);
  const int64_t k = 256, f = 512, t = 5;
  TestModel m;
  auto gate = m.AddRandomWeight("gate", GgmlType::kQ4_K, {k, f}, rng);
  auto up = m.AddRandomWeight("up", GgmlType::kQ5_K, {k, f}, rng);
  auto gamma = m.AddRandomWeight("gamma", GgmlType::kF32, {k}, rng, 0.1f, 1.0f);
  auto x = m.Input("x", DType::kF32, {kDimT, k});
  auto h = m.Node1(OpKind::kRmsNorm, {x}, {gamma}, ir::RmsNormAttrs{1e-6f}, "h");
  auto g = m.Node1(OpKind::kMatMul, {h}, {gate}, ir::MatMulAttrs{}, "g");
  auto u = m.Node1(OpKind::kMatMul, {h}, {up}, ir::MatMulAttrs{}, "u");
  auto act = m.Node1(OpKind::kSwiGlu, {g, u}, {}, ir::NoAttrs{}, "act");
  ir::MatMulAttrs attrs;
  attrs.norm_eps = 1e-6f;
  attrs.swiglu = true;
  auto fused = m.Node1(OpKind::kMatMulGroup, {x}, {gate, up, gamma}, attrs, "fused");
  auto exec = m.Executor();
  ASSERT_NE(exec, nullptr);
  std::vector<float> xs = Random(rng, t * k);
  ASSERT_TRUE(exec->Run(t, 0, {{"x", xs, {}}}).ok());
  EXPECT_LE(Nmse(Values(*exec, fused), Values(*exec, act)), kFusedNmse);
}

// Layer 0 takes the unfused path, layer 1 the fused one; both read the same q, k, v.
TEST(FusionTest, QkNormRopeKvAppendMatchesUnfused) {
  std::mt19937 rng(10);
  const int64_t h = 8, hkv = 2, d = 128;
  const float eps = 1e-6f, base = 1e6f, scale = 1.0f / std::sqrt(float(d));
  TestModel m(2);
  auto qg = m.AddRandomWeight("q_gamma", GgmlType::kF32, {d}, rng, 0.1f, 1.0f);
  auto kg = m.AddRandomWeight("k_gamma", GgmlType::kF32, {d}, rng, 0.1f, 1.0f);
  auto q = m.Input("q", DType::kF32, {kDimT, h * d});
  auto k = m.Input("k", DType::kF32, {kDimT, hkv * d});
  auto v = m.Input("v", DType::kF32, {kDimT, hkv * d});
  auto pos = m.Input("pos", DType::kI32, {kDimT});
  auto qn = m.Node1(OpKind::kHeadRmsNorm, {q}, {qg}, ir::HeadRmsNormAttrs{h, d, eps}, "qn");
  auto kn = m.Node1(OpKind::kHeadRmsNorm, {k}, {kg}, ir::HeadRmsNormAttrs{hkv, d, eps}, "kn");
  auto qr = m.Node1(OpKind::kRope, {qn, pos}, {}, ir::RopeAttrs{h, d, d, base, 1.0f}, "qr");
  auto kr = m.Node1(OpKind::kRope, {kn, pos}, {}, ir::RopeAttrs{hkv, d, d, base, 1.0f}, "kr");
  auto kv0 = m.Node1(OpKind::kKvAppend, {kr, v, pos}, {}, ir::KvAppendAttrs{0, hkv, d}, "kv0");
  auto att0 = m.Node1(OpKind::kAttention, {qr, kv0, pos}, {}, ir::AttentionAttrs{0, h, hkv, d, scale}, "att0");
  auto fused = m.Node(OpKind::kQkNormRopeKvAppend, {q, k, v, pos}, {qg, kg},
                      ir::QkNormRopeKvAppendAttrs{1, h, hkv, d, eps, d, base, 1.0f}, {"q1", "kv1"});
  auto att1 = m.Node1(OpKind::kAttention, {fused[0], fused[1], pos}, {}, ir::AttentionAttrs{1, h, hkv, d, scale}, "att1");
  auto exec = m.Executor();
  ASSERT_NE(exec, nullptr);
  const int64_t t1 = 6, t2 = 1;
  std::vector<float> qs = Random(rng, (t1 + t2) * h * d), ks = Random(rng, (t1 + t2) * hkv * d),
                     vs = Random(rng, (t1 + t2) * hkv * d);
  for (auto [t0, t] : {std::pair<int64_t, int64_t>{0, t1}, {t1, t2}}) {
    auto slice = [&](const std::vector<float>& x, int64_t w) {
      return std::vector<float>(x.begin() + t0 * w, x.begin() + (t0 + t) * w);
    };
    ASSERT_TRUE(exec->Run(t, t0, {{"q", slice(qs, h * d), {}}, {"k", slice(ks, hkv * d), {}},
                                  {"v", slice(vs, hkv * d), {}}, {"pos", {}, Positions(t0, t)}})
                    .ok());
    EXPECT_LE(Nmse(Values(*exec, fused[0]), Values(*exec, qr)), kFusedNmse);
    EXPECT_LE(Nmse(Values(*exec, att1), Values(*exec, att0)), kFusedNmse);
  }
}

// The same model spelled with core ops and with every fusion gives the same logits.
TEST(FusionTest, FusedToyModelMatchesUnfused) {
  TestModel plain, fused;
  BuildToyModel(plain, {.n_layer = 2, .fused = false, .kv = {}});
  BuildToyModel(fused, {.n_layer = 2, .fused = true, .kv = {}});
  auto a = plain.Executor(64), b = fused.Executor(64);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::vector<int32_t> tokens = {5, 17, 299, 0, 42, 42, 7};
  const auto pos = Positions(0, tokens.size());
  for (GraphExecutor* e : {a.get(), b.get()}) {
    ASSERT_TRUE(e->Run(tokens.size(), 0, {{ir::kTokensInput, {}, tokens}, {ir::kPositionsInput, {}, pos}}).ok());
  }
  const auto la = Values(*a, *plain.graph.FindValue(ir::kLogitsOutput));
  const auto lb = Values(*b, *fused.graph.FindValue(ir::kLogitsOutput));
  EXPECT_LE(Nmse(lb, la), kFusedNmse);
}

// int8 KV against f16 KV: layer 0 stores f16, layer 1 int8; both attend with the same q over
// the same k, v. A bound per output element, derived from the storage rounding:
//   f16 stores each element to a relative 2^-11; int8 to |Δx| <= d/2 + 127·|d16 − d| <= 0.57·d
//   (d = max|x|/127 per row of one kv head, d16 its f16 rounding, |d16 − d| <= 2^-11·d).
//   A score s_j = scale·q·k_j moves by at most e_j = scale·Σ|q_i|·|Δk_ji|; with e = max_j e_j
//   each softmax weight moves by at most a factor e^{±2e}, so Σ_j |Δp_j| <= e^{2e} − 1, and an
//   output element o_i = Σ_j p_j v_ji moves by at most max_j |Δv_ji| + (e^{2e} − 1)·max_j |v_ji|.
// The f16-vs-int8 difference is at most the sum of the two bounds, plus f32 slack (1e-5·max|v|).
TEST(FusionTest, Int8KvAttentionWithinDerivedBoundOfF16) {
  std::mt19937 rng(11);
  const int64_t h = 4, hkv = 2, d = 64, n = 24;
  const float scale = 1.0f / std::sqrt(float(d));
  TestModel m(2);
  m.graph.kv_dtypes = {ir::KvDType::kF16, ir::KvDType::kInt8};
  auto q = m.Input("q", DType::kF32, {kDimT, h * d});
  auto k = m.Input("k", DType::kF32, {kDimT, hkv * d});
  auto v = m.Input("v", DType::kF32, {kDimT, hkv * d});
  auto pos = m.Input("pos", DType::kI32, {kDimT});
  std::vector<ir::ValueId> att;
  for (int64_t layer : {0, 1}) {
    auto kv = m.Node1(OpKind::kKvAppend, {k, v, pos}, {}, ir::KvAppendAttrs{layer, hkv, d},
                      absl::StrCat("kv", layer));
    att.push_back(m.Node1(OpKind::kAttention, {q, kv, pos}, {},
                          ir::AttentionAttrs{layer, h, hkv, d, scale}, absl::StrCat("att", layer)));
  }
  auto exec = m.Executor();
  ASSERT_NE(exec, nullptr);
  // Sharp attention (large q) makes the softmax sensitive, the case where int8 keys matter most.
  std::vector<float> qs = Random(rng, n * h * d, 4.0f), ks = Random(rng, n * hkv * d),
                     vs = Random(rng, n * hkv * d);
  const auto positions = Positions(0, n);
  ASSERT_TRUE(exec->Run(n, 0, {{"q", qs, {}}, {"k", ks, {}}, {"v", vs, {}}, {"pos", {}, positions}}).ok());
  const auto f16 = Values(*exec, att[0]), int8 = Values(*exec, att[1]);

  // Per (position, kv head) row: the int8 step d and the largest |x|.
  auto row_step = [&](const std::vector<float>& x, int64_t j, int64_t g) {
    double amax = 0;
    for (int64_t i = 0; i < d; ++i) amax = std::max(amax, std::fabs(double{x[j * hkv * d + g * d + i]}));
    return amax / 127;
  };
  double mean_abs_diff = 0;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t hh = 0; hh < h; ++hh) {
      const int64_t g = hh / (h / hkv);
      double q_abs = 0;
      for (int64_t i = 0; i < d; ++i) q_abs += std::fabs(qs[t * h * d + hh * d + i]);
      double e8 = 0, e16 = 0, dv8 = 0, vmax = 0;
      for (int64_t j = 0; j <= t; ++j) {
        e8 = std::max(e8, scale * q_abs * 0.57 * row_step(ks, j, g));
        e16 = std::max(e16, scale * q_abs * 127 * row_step(ks, j, g) * 0x1p-11);
        dv8 = std::max(dv8, 0.57 * row_step(vs, j, g));
        vmax = std::max(vmax, 127 * row_step(vs, j, g));
      }
      const double bound8 = dv8 + std::expm1(2 * e8) * vmax;
      const double bound16 = vmax * 0x1p-11 + std::expm1(2 * e16) * vmax;
      const double bound = bound8 + bound16 + 1e-5 * vmax;
      for (int64_t i = 0; i < d; ++i) {
        const size_t idx = t * h * d + hh * d + i;
        const double diff = std::fabs(double{int8[idx]} - f16[idx]);
        EXPECT_LE(diff, bound) << "t=" << t << " head=" << hh << " i=" << i;
        mean_abs_diff += diff;
      }
    }
  }
  // And int8 storage did change something (the two layers really differ).
  EXPECT_GT(mean_abs_diff, 0.0);
}

}  // namespace
}  // namespace jllm::cpu_ref::testing
