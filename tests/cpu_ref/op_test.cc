// Every op of ir/ops.h, fused ones included, over several shapes and weight types, against an
// independent double-precision formula (test_support.h) — in the manner of ggml's
// test-backend-ops: one table, one row per (op, shape, types), an NMSE bound per op.
//
// The bounds: cpu_ref computes in f32 (unit roundoff u = 6e-8, u² = 3.6e-15); a sum of K
// products with random signs drifts by about sqrt(K/16)·u relative (16 partial sums), an NMSE of
// ~2e-13 at K = 1024. Matmuls get 1e-11; row-local ops (norms, RoPE, elementwise), whose
// results are a few roundings from exact, 1e-13; copies 1e-14. Attention reads a cache rounded
// to f16 or int8 and the reference applies the same storage rounding, so the f16 bound covers
// only f32 arithmetic (1e-11). For int8, x·(1/d) in f32 and x/d in double can round a
// near-tie to neighbouring codes: one such element is off by d = max|x|/127, an NMSE of ~5e-8
// in these sizes, so int8 cases allow 1e-7 (observed: the codes agree, NMSE ~5e-15).
// An f32 cache stores K and V exactly: kv_append must read back bit for bit (NMSE 0), and
// attention meets the f32-arithmetic bound against the plain double formula with no storage
// rounding at all, which f16 meets only against a reference that rounds K and V to f16 too.
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test_support.h"

namespace jllm::cpu_ref::testing {
namespace {

using ir::DType;
using ir::kDimT;
using ir::OpKind;

struct Comparison {
  std::vector<float> got;
  std::vector<double> want;
};

struct OpCase {
  std::string name;
  double max_nmse;
  std::function<Comparison(std::mt19937&)> run;
};

constexpr double kCopyNmse = 1e-14;
constexpr double kRowNmse = 1e-13;
constexpr double kMatMulNmse = 1e-11;
constexpr double kAttentionNmse = 1e-11;
constexpr double kInt8AttentionNmse = 1e-7;
constexpr double kExactNmse = 0.0;

std::string TypeTag(GgmlType t) { return std::string(GgmlTypeName(t)); }

// Runs one step; a failure is reported and gives empty output.
bool RunStep(GraphExecutor* exec, int64_t t, int64_t pos0, std::vector<Feed> feeds) {
  if (exec == nullptr) return false;
  absl::Status st = exec->Run(t, pos0, feeds);
  EXPECT_TRUE(st.ok()) << st;
  return st.ok();
}

void Append(std::vector<double>& to, const std::vector<double>& v) { to.insert(to.end(), v.begin(), v.end()); }
void Append(std::vector<float>& to, const std::vector<float>& v) { to.insert(to.end(), v.begin(), v.end()); }

// ---- rows of the table ----------------------------------------------------------------------

void EmbedCases(std::vector<OpCase>& cases) {
  struct P { GgmlType type; int64_t e, v, t; };
  for (P p : {P{GgmlType::kF32, 64, 50, 5}, P{GgmlType::kF16, 96, 20, 3},
              P{GgmlType::kQ8_0, 256, 100, 7}, P{GgmlType::kQ4_K, 256, 300, 4},
              P{GgmlType::kQ6_K, 512, 40, 2}}) {
    cases.push_back({absl::StrCat("embed_", TypeTag(p.type), "_E", p.e, "_V", p.v, "_T", p.t),
                     kCopyNmse, [p](std::mt19937& rng) {
      TestModel m;
      auto table = m.AddRandomWeight("table", p.type, {p.e, p.v}, rng);
      auto tokens = m.Input("tokens", DType::kI32, {kDimT});
      auto y = m.Node1(OpKind::kEmbed, {tokens}, {table}, ir::NoAttrs{}, "y");
      auto exec = m.Executor();
      std::vector<int32_t> ids(p.t);
      std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(p.v - 1));
      for (int32_t& id : ids) id = pick(rng);
      ids[0] = static_cast<int32_t>(p.v - 1);  // the last row too
      if (!RunStep(exec.get(), p.t, 0, {{"tokens", {}, ids}})) return Comparison{};
      const Matrix w = m.Dequantized(table);
      Comparison c{Values(*exec, y), {}};
      for (int32_t id : ids) c.want.insert(c.want.end(), w.begin() + id * p.e, w.begin() + (id + 1) * p.e);
      return c;
    }});
  }
}

void RmsNormCases(std::vector<OpCase>& cases) {
  struct P { int64_t width, t; GgmlType gamma; float eps; };
  for (P p : {P{32, 1, GgmlType::kF32, 1e-6f}, P{256, 7, GgmlType::kF16, 1e-6f},
              P{1000, 3, GgmlType::kBF16, 1e-5f}, P{2560, 2, GgmlType::kF32, 1e-6f}}) {
    cases.push_back({absl::StrCat("rms_norm_W", p.width, "_T", p.t, "_", TypeTag(p.gamma)),
                     kRowNmse, [p](std::mt19937& rng) {
      TestModel m;
      auto gamma = m.AddRandomWeight("gamma", p.gamma, {p.width}, rng, 0.1f, 1.0f);
      auto x = m.Input("x", DType::kF32, {kDimT, p.width});
      auto y = m.Node1(OpKind::kRmsNorm, {x}, {gamma}, ir::RmsNormAttrs{p.eps}, "y");
      auto exec = m.Executor();
      std::vector<float> xs = Random(rng, p.t * p.width, 3.0f);
      if (!RunStep(exec.get(), p.t, 0, {{"x", xs, {}}})) return Comparison{};
      return Comparison{Values(*exec, y),
                        RefRmsNorm(ToDouble(xs), m.Dequantized(gamma), p.eps, p.width)};
    }});
  }
}

// matmul (optionally with the RMSNorm prologue and/or residual epilogue) and logits.
void MatMulCases(std::vector<OpCase>& cases) {
  struct Shape { int64_t k, n, t; };
  struct P { GgmlType type; Shape s; bool norm, residual, logits; };
  std::vector<P> params;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                        GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    for (Shape s : {Shape{256, 64, 1}, Shape{512, 96, 5}, Shape{1024, 40, 3}}) {
      params.push_back({type, s, false, false, false});
    }
  }
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kF32}) {
    params.push_back({type, {256, 128, 4}, true, false, false});
    params.push_back({type, {512, 64, 3}, false, true, false});
    params.push_back({type, {256, 256, 2}, true, true, false});
  }
  params.push_back({GgmlType::kQ8_0, {256, 1000, 3}, false, false, true});
  params.push_back({GgmlType::kQ6_K, {512, 333, 1}, false, false, true});
  for (P p : params) {
    const std::string op = p.logits ? "logits" : "matmul";
    cases.push_back({absl::StrCat(op, "_", TypeTag(p.type), "_K", p.s.k, "_N", p.s.n, "_T",
                                  p.s.t, p.norm ? "_norm" : "", p.residual ? "_residual" : ""),
                     kMatMulNmse, [p](std::mt19937& rng) {
      const auto [k, n, t] = p.s;
      TestModel m;
      auto w = m.AddRandomWeight("w", p.type, {k, n}, rng);
      std::vector<ir::WeightId> weights = {w};
      ir::MatMulAttrs attrs;
      if (p.norm) {
        weights.push_back(m.AddRandomWeight("gamma", GgmlType::kF32, {k}, rng, 0.1f, 1.0f));
        attrs.norm_eps = 1e-6f;
      }
      attrs.residual = p.residual;
      auto x = m.Input("x", DType::kF32, {kDimT, k});
      std::vector<ir::ValueId> inputs = {x};
      if (p.residual) inputs.push_back(m.Input("r", DType::kF32, {kDimT, n}));
      auto y = p.logits ? m.Node1(OpKind::kLogits, inputs, weights, ir::NoAttrs{}, "y")
                        : m.Node1(OpKind::kMatMul, inputs, weights, attrs, "y");
      auto exec = m.Executor();
      std::vector<float> xs = Random(rng, t * k), rs = Random(rng, t * n);
      std::vector<Feed> feeds = {{"x", xs, {}}};
      if (p.residual) feeds.push_back({"r", rs, {}});
      if (!RunStep(exec.get(), t, 0, feeds)) return Comparison{};
      Matrix xin = ToDouble(xs);
      if (p.norm) xin = RefRmsNorm(xin, m.Dequantized(weights[1]), 1e-6f, k);
      Matrix want = RefMatMul(m.Dequantized(w), xin, k, n);
      if (p.residual) {
        for (size_t i = 0; i < want.size(); ++i) want[i] += rs[i];
      }
      return Comparison{Values(*exec, y), want};
    }});
  }
}

// matmul_group: members of different types (a Q4_K_M QKV), with the norm prologue, and the
// (gate, up) group with the SwiGLU epilogue.
void MatMulGroupCases(std::vector<OpCase>& cases) {
  struct Member { GgmlType type; int64_t n; };
  struct P { std::string tag; std::vector<Member> members; int64_t k, t; bool norm, swiglu; };
  const std::vector<P> params = {
      {"qkv_q4k_q4k_q6k", {{GgmlType::kQ4_K, 256}, {GgmlType::kQ4_K, 128}, {GgmlType::kQ6_K, 128}}, 256, 3, false, false},
      {"qkv_norm", {{GgmlType::kQ4_K, 256}, {GgmlType::kQ4_K, 128}, {GgmlType::kQ6_K, 128}}, 256, 2, true, false},
      {"f16_q8_0", {{GgmlType::kF16, 64}, {GgmlType::kQ8_0, 96}}, 512, 1, false, false},
      {"gate_up_swiglu", {{GgmlType::kQ4_K, 768}, {GgmlType::kQ4_K, 768}}, 256, 4, false, true},
      {"gate_up_swiglu_norm", {{GgmlType::kQ5_K, 300}, {GgmlType::kQ8_0, 300}}, 256, 2, true, true},
  };
  for (const P& p : params) {
    cases.push_back({absl::StrCat("matmul_group_", p.tag, "_K", p.k, "_T", p.t), kMatMulNmse,
                     [p](std::mt19937& rng) {
      TestModel m;
      std::vector<ir::WeightId> weights;
      std::vector<std::string> names;
      for (size_t i = 0; i < p.members.size(); ++i) {
        weights.push_back(m.AddRandomWeight(absl::StrCat("w", i), p.members[i].type,
                                            {p.k, p.members[i].n}, rng));
        names.push_back(absl::StrCat("y", i));
      }
      ir::MatMulAttrs attrs;
      attrs.swiglu = p.swiglu;
      if (p.norm) {
        weights.push_back(m.AddRandomWeight("gamma", GgmlType::kF32, {p.k}, rng, 0.1f, 1.0f));
        attrs.norm_eps = 1e-6f;
      }
      if (p.swiglu) names.resize(1);
      auto x = m.Input("x", DType::kF32, {kDimT, p.k});
      auto outs = m.Node(OpKind::kMatMulGroup, {x}, weights, attrs, names);
      auto exec = m.Executor();
      std::vector<float> xs = Random(rng, p.t * p.k);
      if (!RunStep(exec.get(), p.t, 0, {{"x", xs, {}}})) return Comparison{};
      Matrix xin = ToDouble(xs);
      if (p.norm) xin = RefRmsNorm(xin, m.Dequantized(weights.back()), 1e-6f, p.k);
      std::vector<Matrix> products;
      for (size_t i = 0; i < p.members.size(); ++i) {
        products.push_back(RefMatMul(m.Dequantized(weights[i]), xin, p.k, p.members[i].n));
      }
      Comparison c;
      if (p.swiglu) {
        for (size_t i = 0; i < products[0].size(); ++i) {
          c.want.push_back(RefSilu(products[0][i]) * products[1][i]);
        }
      } else {
        for (const Matrix& y : products) Append(c.want, y);
      }
      for (ir::ValueId v : outs) Append(c.got, Values(*exec, v));
      return c;
    }});
  }
}

void HeadRmsNormCases(std::vector<OpCase>& cases) {
  struct P { int64_t n_head, head_dim, t; };
  for (P p : {P{4, 64, 3}, P{16, 128, 2}, P{2, 256, 5}}) {
    cases.push_back({absl::StrCat("head_rms_norm_H", p.n_head, "_D", p.head_dim, "_T", p.t),
                     kRowNmse, [p](std::mt19937& rng) {
      TestModel m;
      auto gamma = m.AddRandomWeight("gamma", GgmlType::kF32, {p.head_dim}, rng, 0.1f, 1.0f);
      auto x = m.Input("x", DType::kF32, {kDimT, p.n_head * p.head_dim});
      auto y = m.Node1(OpKind::kHeadRmsNorm, {x}, {gamma},
                       ir::HeadRmsNormAttrs{p.n_head, p.head_dim, 1e-6f}, "y");
      auto exec = m.Executor();
      std::vector<float> xs = Random(rng, p.t * p.n_head * p.head_dim, 2.0f);
      if (!RunStep(exec.get(), p.t, 0, {{"x", xs, {}}})) return Comparison{};
      // Each head is one row of head_dim for the reference.
      return Comparison{Values(*exec, y),
                        RefRmsNorm(ToDouble(xs), m.Dequantized(gamma), 1e-6f, p.head_dim)};
    }});
  }
}

void RopeCases(std::vector<OpCase>& cases) {
  struct P { int64_t n_head, head_dim, n_rot; float base, scale; int64_t t; };
  for (P p : {P{2, 64, 64, 1e4f, 1.0f, 4}, P{4, 128, 128, 1e6f, 1.0f, 3},
              P{2, 64, 32, 1e4f, 1.0f, 3}, P{2, 128, 128, 1e6f, 0.25f, 2},
              P{3, 128, 128, 1e6f, 0.7f, 2}}) {
    cases.push_back({absl::StrCat("rope_H", p.n_head, "_D", p.head_dim, "_rot", p.n_rot,
                                  "_base", p.base, "_scale", p.scale == 1 ? 1 : p.scale * 100),
                     kRowNmse, [p](std::mt19937& rng) {
      TestModel m;
      auto x = m.Input("x", DType::kF32, {kDimT, p.n_head * p.head_dim});
      auto pos = m.Input("pos", DType::kI32, {kDimT});
      auto y = m.Node1(OpKind::kRope, {x, pos}, {},
                       ir::RopeAttrs{p.n_head, p.head_dim, p.n_rot, p.base, p.scale}, "y");
      auto exec = m.Executor();
      std::vector<float> xs = Random(rng, p.t * p.n_head * p.head_dim);
      // Positions anywhere in a long context: the angle recurrence must match at 40k too.
      std::vector<int32_t> ps(p.t);
      std::uniform_int_distribution<int32_t> pick(0, 40000);
      for (int32_t& v : ps) v = pick(rng);
      ps[0] = 0;
      if (!RunStep(exec.get(), p.t, 0, {{"x", xs, {}}, {"pos", {}, ps}})) return Comparison{};
      return Comparison{Values(*exec, y), RefRope(ToDouble(xs), ps, p.n_head, p.head_dim,
                                                  p.n_rot, p.base, p.scale)};
    }});
  }
}

void ElementwiseCases(std::vector<OpCase>& cases) {
  for (int64_t width : {100, 768}) {
    for (bool swiglu : {false, true}) {
      cases.push_back({absl::StrCat(swiglu ? "swiglu" : "add", "_W", width), kRowNmse,
                       [width, swiglu](std::mt19937& rng) {
        TestModel m;
        auto a = m.Input("a", DType::kF32, {kDimT, width});
        auto b = m.Input("b", DType::kF32, {kDimT, width});
        auto y = m.Node1(swiglu ? OpKind::kSwiGlu : OpKind::kAdd, {a, b}, {}, ir::NoAttrs{}, "y");
        auto exec = m.Executor();
        const int64_t t = 3;
        std::vector<float> as = Random(rng, t * width, 3.0f), bs = Random(rng, t * width);
        if (!RunStep(exec.get(), t, 0, {{"a", as, {}}, {"b", bs, {}}})) return Comparison{};
        Comparison c{Values(*exec, y), {}};
        for (size_t i = 0; i < as.size(); ++i) {
          c.want.push_back(swiglu ? RefSilu(as[i]) * bs[i] : double{as[i]} + bs[i]);
        }
        return c;
      }});
    }
  }
}

// kv_append alone: what the cache holds after two steps (read back through KvCache).
void KvAppendCases(std::vector<OpCase>& cases) {
  for (ir::KvDType kv : {ir::KvDType::kF16, ir::KvDType::kInt8, ir::KvDType::kF32}) {
    const double bound = kv == ir::KvDType::kF16   ? kCopyNmse
                         : kv == ir::KvDType::kF32 ? kExactNmse
                                                   : kInt8AttentionNmse;
    cases.push_back({absl::StrCat("kv_append_", std::string(ir::KvDTypeName(kv))), bound,
                     [kv](std::mt19937& rng) {
      const int64_t hkv = 2, d = 64, w = hkv * d;
      TestModel m(1, kv);
      auto k = m.Input("k", DType::kF32, {kDimT, w});
      auto v = m.Input("v", DType::kF32, {kDimT, w});
      auto pos = m.Input("pos", DType::kI32, {kDimT});
      m.Node1(OpKind::kKvAppend, {k, v, pos}, {}, ir::KvAppendAttrs{0, hkv, d}, "kv");
      auto exec = m.Executor();
      std::vector<float> ks = Random(rng, 5 * w), vs = Random(rng, 5 * w, 4.0f);
      Comparison c;
      for (auto [t0, t] : {std::pair<int64_t, int64_t>{0, 3}, {3, 2}}) {
        std::vector<float> kstep(ks.begin() + t0 * w, ks.begin() + (t0 + t) * w);
        std::vector<float> vstep(vs.begin() + t0 * w, vs.begin() + (t0 + t) * w);
        if (!RunStep(exec.get(), t, t0, {{"k", kstep, {}}, {"v", vstep, {}}, {"pos", {}, Positions(t0, t)}})) {
          return Comparison{};
        }
      }
      std::vector<float> row(w);
      for (int which = 0; which < 2; ++which) {
        for (int64_t p = 0; p < 5; ++p) {
          exec->kv_cache(0)->Read(which, p, row.data());
          Append(c.got, row);
        }
        Append(c.want, RefKvStore(which == 0 ? ks : vs, kv, d));
      }
      return c;
    }});
  }
}

// kv_append + attention (or the fused qk_norm_rope_kv_append + attention) over two steps:
// a prefill of t1 tokens, then t2 more; both steps' outputs are compared.
void AttentionCases(std::vector<OpCase>& cases) {
  struct P { int64_t h, hkv, d, t1, t2; bool fused; };
  std::vector<P> params = {{4, 4, 64, 5, 1, false}, {4, 2, 64, 6, 3, false},
                           {8, 2, 128, 4, 1, false}, {16, 8, 128, 9, 2, false},
                           {4, 2, 64, 5, 2, true}, {16, 8, 128, 3, 1, true}};
  for (P p : params) {
    for (ir::KvDType kv : {ir::KvDType::kF16, ir::KvDType::kInt8, ir::KvDType::kF32}) {
      cases.push_back({absl::StrCat(p.fused ? "qk_norm_rope_kv_append_attention" : "attention",
                                    "_H", p.h, "_Hkv", p.hkv, "_D", p.d, "_T", p.t1, "+", p.t2,
                                    "_", std::string(ir::KvDTypeName(kv))),
                       kv == ir::KvDType::kInt8 ? kInt8AttentionNmse : kAttentionNmse,
                       [p, kv](std::mt19937& rng) {
        const int64_t qw = p.h * p.d, kvw = p.hkv * p.d, n = p.t1 + p.t2;
        const float eps = 1e-6f, base = 1e6f;
        const double scale = 1.0 / std::sqrt(static_cast<double>(p.d));
        TestModel m(1, kv);
        auto q = m.Input("q", DType::kF32, {kDimT, qw});
        auto k = m.Input("k", DType::kF32, {kDimT, kvw});
        auto v = m.Input("v", DType::kF32, {kDimT, kvw});
        auto pos = m.Input("pos", DType::kI32, {kDimT});
        ir::ValueId q_att = q, cache;
        ir::WeightId qg = -1, kg = -1;
        if (p.fused) {
          qg = m.AddRandomWeight("q_gamma", GgmlType::kF32, {p.d}, rng, 0.1f, 1.0f);
          kg = m.AddRandomWeight("k_gamma", GgmlType::kF32, {p.d}, rng, 0.1f, 1.0f);
          auto outs = m.Node(OpKind::kQkNormRopeKvAppend, {q, k, v, pos}, {qg, kg},
                             ir::QkNormRopeKvAppendAttrs{0, p.h, p.hkv, p.d, eps, p.d, base, 1.0f},
                             {"q_out", "kv"});
          q_att = outs[0], cache = outs[1];
        } else {
          cache = m.Node1(OpKind::kKvAppend, {k, v, pos}, {}, ir::KvAppendAttrs{0, p.hkv, p.d}, "kv");
        }
        auto y = m.Node1(OpKind::kAttention, {q_att, cache, pos}, {},
                         ir::AttentionAttrs{0, p.h, p.hkv, p.d, static_cast<float>(scale)}, "y");
        auto exec = m.Executor();
        std::vector<float> qs = Random(rng, n * qw), ks = Random(rng, n * kvw),
                           vs = Random(rng, n * kvw);
        const std::vector<int32_t> all_pos = Positions(0, n);
        // The reference: (norm + RoPE,) then storage rounding of k and v, then attention.
        Matrix q_ref = ToDouble(qs), k_ref = ToDouble(ks);
        if (p.fused) {
          q_ref = RefRope(RefRmsNorm(q_ref, m.Dequantized(qg), eps, p.d), all_pos, p.h, p.d, p.d, base, 1.0f);
          k_ref = RefRope(RefRmsNorm(k_ref, m.Dequantized(kg), eps, p.d), all_pos, p.hkv, p.d, p.d, base, 1.0f);
        }
        const Matrix keys = RefKvStore(std::vector<float>(k_ref.begin(), k_ref.end()), kv, p.d);
        const Matrix values = RefKvStore(vs, kv, p.d);
        const Matrix want_all = RefAttention(q_ref, keys, values, all_pos, p.h, p.hkv, p.d, scale);
        Comparison c;
        for (auto [t0, t] : {std::pair<int64_t, int64_t>{0, p.t1}, {p.t1, p.t2}}) {
          auto slice = [&](const std::vector<float>& x, int64_t w) {
            return std::vector<float>(x.begin() + t0 * w, x.begin() + (t0 + t) * w);
          };
          if (!RunStep(exec.get(), t, t0, {{"q", slice(qs, qw), {}}, {"k", slice(ks, kvw), {}},
                                          {"v", slice(vs, kvw), {}}, {"pos", {}, Positions(t0, t)}})) {
            return Comparison{};
          }
          Append(c.got, Values(*exec, y));
          c.want.insert(c.want.end(), want_all.begin() + t0 * qw, want_all.begin() + (t0 + t) * qw);
          if (p.fused) {  // the rotated q output as well
            Append(c.got, Values(*exec, q_att));
            c.want.insert(c.want.end(), q_ref.begin() + t0 * qw, q_ref.begin() + (t0 + t) * qw);
          }
        }
        return c;
      }});
    }
  }
}

std::vector<OpCase> AllCases() {
  std::vector<OpCase> cases;
  EmbedCases(cases);
  RmsNormCases(cases);
  MatMulCases(cases);
  MatMulGroupCases(cases);
  HeadRmsNormCases(cases);
  RopeCases(cases);
  ElementwiseCases(cases);
  KvAppendCases(cases);
  AttentionCases(cases);
  return cases;
}

// gtest prints a failing parameter with this instead of its bytes.
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

class OpTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpTest, MatchesDoubleReference) {
  const OpCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name)));
  const Comparison cmp = c.run(rng);
  ASSERT_FALSE(cmp.got.empty());
  ASSERT_EQ(cmp.got.size(), cmp.want.size());
  const double nmse = Nmse(cmp.got, cmp.want);
  EXPECT_LE(nmse, c.max_nmse) << c.name;
}

std::string CaseName(const ::testing::TestParamInfo<OpCase>& info) {
  std::string name = info.param.name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpTest, ::testing::ValuesIn(AllCases()), CaseName);

// The table must reach every op kind (a new op is a new row here).
TEST(OpTableTest, CoversEveryOpKind) {
  std::vector<bool> seen(ir::kNumOpKinds, false);
  for (const OpCase& c : AllCases()) {
    for (int i = 0; i < ir::kNumOpKinds; ++i) {
      const std::string op(ir::OpName(static_cast<OpKind>(i)));
      if (c.name.rfind(op + "_", 0) == 0 || c.name.find("_" + op + "_") != std::string::npos) {
        seen[i] = true;
      }
    }
  }
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    const auto op = static_cast<OpKind>(i);
    if (op == OpKind::kSample) continue;  // not executed by cpu_ref (the runtime samples)
    EXPECT_TRUE(seen[i]) << "no case for op " << ir::OpName(op);
  }
}

}  // namespace
}  // namespace jllm::cpu_ref::testing
