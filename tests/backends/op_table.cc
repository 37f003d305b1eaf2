// The op table (op_table.h): every op of ir/ops.h, fused ones included, over several shapes and
// weight types — T = 1 rows exercise a backend's decode kernels, T > 1 its prefill kernels —
// against an independent double-precision formula.
//
// The bounds were reasoned for cpu_ref and hold every backend to them: cpu_ref computes in f32 (unit roundoff u = 6e-8, u² = 3.6e-15); a sum of K
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
// The CUDA kernels compute in f32 as well, so the same bounds apply, with one reasoned
// exception: the decode GEMV of the K-quants turns each 4/6-bit q into the float 0.5 + q/256
// with one byte permute and removes the offset afterwards (Σ(q·x) = 256·Σ((0.5 + q/256)·x) −
// 128·Σx). The offset term is ~128/7.5 ≈ 17x the dot product it is removed from, so its
// rounding is ~17x the relative error, ~300x the NMSE: 2e-11 measured against 2e-13 for a plain
// f32 dot. K-quant matmuls therefore allow 1e-10 (a wrong scale bit costs ~1e-2).
// The CUDA decode GEMV may read x quantized to int8 (dp4a) for the K-quants and q8_0: runs of
// 16 elements with d = max|x| / 127, each element off by at most d/2, uniformly: a variance of
// d²/12. For the tables' x ~ N(0, 1), max|x| over 16 is ~1.8, so d²/12 ≈ 1.7e-5 against
// E[x²] = 1: an NMSE of ~2e-5 in x, which a product with independent random weights carries
// into y unchanged (SwiGLU multiplies two such products: ~4e-5; measured 1.3e-5..4.6e-5). Those
// one-token cases allow 1e-4 there (still 100x under a wrong scale bit). With int16 x (two int8
// planes, d = max|x| / 32512) the same reasoning gives d²/12 ≈ 2.6e-10 in x, ~5e-10 with
// SwiGLU: those cases allow 5e-9 (10x over it, 10⁶x under a wrong scale bit).
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/backends/op_table.h"
#include "ir/status.h"

namespace jllm::testing {
namespace {

using namespace cpu_ref::testing;  // TestModel, Random, the Ref* formulas

using ir::DType;
using ir::kDimT;
using ir::OpKind;

constexpr double kCopyNmse = 1e-14;
constexpr double kRowNmse = 1e-13;
constexpr double kMatMulNmse = 1e-11;
constexpr double kKQuantMatMulNmse = 1e-10;
constexpr double kX8MatMulNmse = 1e-4;
constexpr double kX16MatMulNmse = 5e-9;
// tf32 operands (the CUDA prefill GEMM on the tensor cores; gemm_f16.cu's f16 weights have the
// same 10 bits, and its x split in hi and lo f16 more): each rounded to 10 mantissa bits,
// relative error uniform in ±2^-11, so a product's relative error has variance ~2/3·2^-22 and
// a sum of products with random signs an NMSE of about that, 1.6e-7; the bound leaves 6×.
constexpr double kTf32MatMulNmse = 1e-6;

bool IsKQuant(GgmlType t) { return t == GgmlType::kQ4_K || t == GgmlType::kQ5_K || t == GgmlType::kQ6_K; }
bool HasInt8Dot(GgmlType t) { return IsKQuant(t) || t == GgmlType::kQ8_0; }
constexpr double kAttentionNmse = 1e-11;
constexpr double kInt8AttentionNmse = 1e-7;
constexpr double kExactNmse = 0.0;

std::string TypeTag(GgmlType t) { return std::string(GgmlTypeName(t)); }

// One case's model on the runner: the values it reads become the graph's outputs, then it runs
// steps; a failure is reported (EXPECT) and leaves ok() false.
class CaseRun {
 public:
  CaseRun(OpRunner& runner, TestModel& m, std::vector<ir::ValueId> outputs, int64_t max_context = 256)
      : runner_(runner), outputs_(std::move(outputs)) {
    m.graph.outputs = outputs_;
    const absl::Status st = runner_.Load(m, max_context);
    if (absl::IsUnimplemented(st)) {
      skipped_ = std::string(st.message());
    } else {
      EXPECT_TRUE(st.ok()) << st;
    }
    ok_ = st.ok();
  }
  bool Step(int64_t t, int64_t pos0, std::vector<NamedInput> inputs) {
    if (!ok_) return false;
    absl::StatusOr<std::vector<std::vector<float>>> r = runner_.Run(t, pos0, std::move(inputs));
    EXPECT_TRUE(r.ok()) << r.status();
    ok_ = r.ok();
    if (ok_) results_ = *std::move(r);
    return ok_;
  }
  // The last step's value of output `v`.
  std::vector<float> Out(ir::ValueId v) const {
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (outputs_[i] == v) return results_[i];
    }
    ADD_FAILURE() << "value " << v << " is not an output of the case";
    return {};
  }
  // An empty comparison that says why the backend could not run the case.
  Comparison Failed() const { return Comparison{{}, {}, skipped_}; }

 private:
  OpRunner& runner_;
  std::vector<ir::ValueId> outputs_;
  std::vector<std::vector<float>> results_;
  bool ok_ = false;
  std::string skipped_;
};

NamedInput F32(const std::string& name, std::vector<float> v) { return {name, std::move(v), {}}; }
NamedInput I32(const std::string& name, std::vector<int32_t> v) { return {name, {}, std::move(v)}; }

void Append(std::vector<double>& to, const std::vector<double>& v) { to.insert(to.end(), v.begin(), v.end()); }
void Append(std::vector<float>& to, const std::vector<float>& v) { to.insert(to.end(), v.begin(), v.end()); }

// ---- rows of the table ----------------------------------------------------------------------

void EmbedCases(std::vector<OpCase>& cases) {
  struct P { GgmlType type; int64_t e, v, t; };
  for (P p : {P{GgmlType::kF32, 64, 50, 5}, P{GgmlType::kF16, 96, 20, 3},
              P{GgmlType::kQ8_0, 256, 100, 7}, P{GgmlType::kQ4_K, 256, 300, 4},
              P{GgmlType::kQ6_K, 512, 40, 2}}) {
    cases.push_back({absl::StrCat("embed_", TypeTag(p.type), "_E", p.e, "_V", p.v, "_T", p.t),
                     kCopyNmse, [p](std::mt19937& rng, OpRunner& runner) {
      TestModel m;
      auto table = m.AddRandomWeight("table", p.type, {p.e, p.v}, rng);
      auto tokens = m.Input("tokens", DType::kI32, {kDimT});
      auto y = m.Node1(OpKind::kEmbed, {tokens}, {table}, ir::NoAttrs{}, "y");
      CaseRun run(runner, m, {y});
      std::vector<int32_t> ids(p.t);
      std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(p.v - 1));
      for (int32_t& id : ids) id = pick(rng);
      ids[0] = static_cast<int32_t>(p.v - 1);  // the last row too
      if (!run.Step(p.t, 0, {I32("tokens", ids)})) return run.Failed();
      const Matrix w = m.Dequantized(table);
      Comparison c{run.Out(y), {}};
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
                     kRowNmse, [p](std::mt19937& rng, OpRunner& runner) {
      TestModel m;
      auto gamma = m.AddRandomWeight("gamma", p.gamma, {p.width}, rng, 0.1f, 1.0f);
      auto x = m.Input("x", DType::kF32, {kDimT, p.width});
      auto y = m.Node1(OpKind::kRmsNorm, {x}, {gamma}, ir::RmsNormAttrs{p.eps}, "y");
      CaseRun run(runner, m, {y});
      std::vector<float> xs = Random(rng, p.t * p.width, 3.0f);
      if (!run.Step(p.t, 0, {F32("x", xs)})) return run.Failed();
      return Comparison{run.Out(y),
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
    for (Shape s : {Shape{256, 64, 1}, Shape{256, 64, 4}, Shape{512, 96, 1}, Shape{512, 96, 5},
                    Shape{1024, 40, 1}, Shape{1024, 40, 3}}) {
      params.push_back({type, s, false, false, false});
    }
  }
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kF32}) {
    for (int64_t t : {1, 3}) {
      params.push_back({type, {256, 128, t}, true, false, false});
      params.push_back({type, {512, 64, t}, false, true, false});
      params.push_back({type, {256, 256, t}, true, true, false});
    }
  }
  // A long row: the decode GEMV's staged x and ring then need more than 48 KiB of shared memory.
  params.push_back({GgmlType::kQ4_K, {9728, 64, 1}, true, true, false});
  // A prefill of more tokens than a GEMM tile holds (32..128), rows that end inside a tile, and
  // 8 super-blocks along K (q6_K's d values are 8 to a 16-byte chunk of the row's tail).
  params.push_back({GgmlType::kQ6_K, {2048, 144, 40}, false, true, false});
  params.push_back({GgmlType::kQ4_K, {2048, 144, 40}, false, false, false});
  params.push_back({GgmlType::kQ8_0, {256, 1000, 3}, false, false, true});
  params.push_back({GgmlType::kQ8_0, {256, 1000, 1}, false, false, true});
  params.push_back({GgmlType::kQ6_K, {512, 333, 1}, false, false, true});
  params.push_back({GgmlType::kQ6_K, {512, 333, 2}, false, false, true});
  for (P p : params) {
    const std::string op = p.logits ? "logits" : "matmul";
    cases.push_back({absl::StrCat(op, "_", TypeTag(p.type), "_K", p.s.k, "_N", p.s.n, "_T",
                                  p.s.t, p.norm ? "_norm" : "", p.residual ? "_residual" : ""),
                     IsKQuant(p.type) ? kKQuantMatMulNmse : kMatMulNmse,
                     [p](std::mt19937& rng, OpRunner& runner) {
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
      CaseRun run(runner, m, {y});
      std::vector<float> xs = Random(rng, t * k), rs = Random(rng, t * n);
      std::vector<NamedInput> feeds = {F32("x", xs)};
      if (p.residual) feeds.push_back(F32("r", rs));
      if (!run.Step(t, 0, feeds)) return run.Failed();
      Matrix xin = ToDouble(xs);
      if (p.norm) xin = RefRmsNorm(xin, m.Dequantized(weights[1]), 1e-6f, k);
      Matrix want = RefMatMul(m.Dequantized(w), xin, k, n);
      if (p.residual) {
        for (size_t i = 0; i < want.size(); ++i) want[i] += rs[i];
      }
      return Comparison{run.Out(y), want};
    }});
    if (HasInt8Dot(p.type) && (p.s.t == 1 || p.logits)) {
      cases.back().max_nmse_x8 = kX8MatMulNmse;
      cases.back().max_nmse_x16 = kX16MatMulNmse;
    }
    // Several tokens run the prefill GEMM (the logits of each too, on the CUDA backend).
    if (p.s.t > 1) cases.back().max_nmse_tf32 = kTf32MatMulNmse;
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
      // The prefill GEMM's SwiGLU pair (one type): rows that end inside a tile, and (with 32-token
      // tiles, a variant) two token tiles.
      {"gate_up_q6k_swiglu_norm", {{GgmlType::kQ6_K, 200}, {GgmlType::kQ6_K, 200}}, 512, 60, true, true},
      // One token: the fused decode kernels (a mixed QKV triple, gate+up of one type and of two).
      {"qkv_norm", {{GgmlType::kQ4_K, 256}, {GgmlType::kQ4_K, 128}, {GgmlType::kQ6_K, 128}}, 512, 1, true, false},
      {"qkv_q8_0_f32_bf16", {{GgmlType::kQ8_0, 64}, {GgmlType::kF32, 96}, {GgmlType::kBF16, 40}}, 256, 1, false, false},
      {"gate_up_q4k_swiglu_norm", {{GgmlType::kQ4_K, 768}, {GgmlType::kQ4_K, 768}}, 256, 1, true, true},
      // Members of one type (Qwen3's Q4_K_M layers whose V is q4_K), and a type that recurs after
      // another: x is staged once per distinct type, and the GEMV's ring lies behind those slots.
      {"qkv_q4k_norm", {{GgmlType::kQ4_K, 256}, {GgmlType::kQ4_K, 128}, {GgmlType::kQ4_K, 128}}, 512, 1, true, false},
      {"qkv_q4k_q6k_q4k", {{GgmlType::kQ4_K, 128}, {GgmlType::kQ6_K, 64}, {GgmlType::kQ4_K, 64}}, 256, 1, false, false},
      {"gate_up_swiglu_norm", {{GgmlType::kQ5_K, 300}, {GgmlType::kQ8_0, 300}}, 256, 1, true, true},
      // A decode gate+up whose items take several unit steps (2 a row of 16-byte units, 4 as
      // pairs): a GEMV ring slot of several steps (JLLM_GEMV_CHUNK) holds both matrices' rows.
      {"gate_up_q4k_swiglu_norm", {{GgmlType::kQ4_K, 72}, {GgmlType::kQ4_K, 72}}, 2048, 1, true, true},
  };
  for (const P& p : params) {
    bool kquant = false;
    for (const Member& m : p.members) kquant = kquant || IsKQuant(m.type);
    cases.push_back({absl::StrCat("matmul_group_", p.tag, "_K", p.k, "_T", p.t),
                     kquant ? kKQuantMatMulNmse : kMatMulNmse,
                     [p](std::mt19937& rng, OpRunner& runner) {
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
      CaseRun run(runner, m, outs);
      std::vector<float> xs = Random(rng, p.t * p.k);
      if (!run.Step(p.t, 0, {F32("x", xs)})) return run.Failed();
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
      for (ir::ValueId v : outs) Append(c.got, run.Out(v));
      return c;
    }});
    bool int8_dot = false;
    for (const Member& m : p.members) int8_dot = int8_dot || HasInt8Dot(m.type);
    if (int8_dot && p.t == 1) {
      cases.back().max_nmse_x8 = kX8MatMulNmse;
      cases.back().max_nmse_x16 = kX16MatMulNmse;
    }
    if (p.t > 1) cases.back().max_nmse_tf32 = kTf32MatMulNmse;
  }
}

void HeadRmsNormCases(std::vector<OpCase>& cases) {
  struct P { int64_t n_head, head_dim, t; };
  for (P p : {P{4, 64, 3}, P{16, 128, 2}, P{2, 256, 5}}) {
    cases.push_back({absl::StrCat("head_rms_norm_H", p.n_head, "_D", p.head_dim, "_T", p.t),
                     kRowNmse, [p](std::mt19937& rng, OpRunner& runner) {
      TestModel m;
      auto gamma = m.AddRandomWeight("gamma", GgmlType::kF32, {p.head_dim}, rng, 0.1f, 1.0f);
      auto x = m.Input("x", DType::kF32, {kDimT, p.n_head * p.head_dim});
      auto y = m.Node1(OpKind::kHeadRmsNorm, {x}, {gamma},
                       ir::HeadRmsNormAttrs{p.n_head, p.head_dim, 1e-6f}, "y");
      CaseRun run(runner, m, {y});
      std::vector<float> xs = Random(rng, p.t * p.n_head * p.head_dim, 2.0f);
      if (!run.Step(p.t, 0, {F32("x", xs)})) return run.Failed();
      // Each head is one row of head_dim for the reference.
      return Comparison{run.Out(y),
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
                     kRowNmse, [p](std::mt19937& rng, OpRunner& runner) {
      TestModel m;
      auto x = m.Input("x", DType::kF32, {kDimT, p.n_head * p.head_dim});
      auto pos = m.Input("pos", DType::kI32, {kDimT});
      auto y = m.Node1(OpKind::kRope, {x, pos}, {},
                       ir::RopeAttrs{p.n_head, p.head_dim, p.n_rot, p.base, p.scale}, "y");
      CaseRun run(runner, m, {y}, 40001);
      std::vector<float> xs = Random(rng, p.t * p.n_head * p.head_dim);
      // Positions anywhere in a long context: the angle recurrence must match at 40k too.
      std::vector<int32_t> ps(p.t);
      std::uniform_int_distribution<int32_t> pick(0, 40000);
      for (int32_t& v : ps) v = pick(rng);
      ps[0] = 0;
      if (!run.Step(p.t, 0, {F32("x", xs), I32("pos", ps)})) return run.Failed();
      return Comparison{run.Out(y), RefRope(ToDouble(xs), ps, p.n_head, p.head_dim,
                                                  p.n_rot, p.base, p.scale)};
    }});
  }
}

void ElementwiseCases(std::vector<OpCase>& cases) {
  for (int64_t width : {100, 768}) {
    for (bool swiglu : {false, true}) {
      cases.push_back({absl::StrCat(swiglu ? "swiglu" : "add", "_W", width), kRowNmse,
                       [width, swiglu](std::mt19937& rng, OpRunner& runner) {
        TestModel m;
        auto a = m.Input("a", DType::kF32, {kDimT, width});
        auto b = m.Input("b", DType::kF32, {kDimT, width});
        auto y = m.Node1(swiglu ? OpKind::kSwiGlu : OpKind::kAdd, {a, b}, {}, ir::NoAttrs{}, "y");
        CaseRun run(runner, m, {y});
        const int64_t t = 3;
        std::vector<float> as = Random(rng, t * width, 3.0f), bs = Random(rng, t * width);
        if (!run.Step(t, 0, {F32("a", as), F32("b", bs)})) return run.Failed();
        Comparison c{run.Out(y), {}};
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
                     [kv](std::mt19937& rng, OpRunner& runner) {
      const int64_t hkv = 2, d = 64, w = hkv * d;
      TestModel m(1, kv);
      auto k = m.Input("k", DType::kF32, {kDimT, w});
      auto v = m.Input("v", DType::kF32, {kDimT, w});
      auto pos = m.Input("pos", DType::kI32, {kDimT});
      m.Node1(OpKind::kKvAppend, {k, v, pos}, {}, ir::KvAppendAttrs{0, hkv, d}, "kv");
      CaseRun run(runner, m, {});
      std::vector<float> ks = Random(rng, 5 * w), vs = Random(rng, 5 * w, 4.0f);
      Comparison c;
      for (auto [t0, t] : {std::pair<int64_t, int64_t>{0, 3}, {3, 2}}) {
        std::vector<float> kstep(ks.begin() + t0 * w, ks.begin() + (t0 + t) * w);
        std::vector<float> vstep(vs.begin() + t0 * w, vs.begin() + (t0 + t) * w);
        if (!run.Step(t, t0, {F32("k", kstep), F32("v", vstep), I32("pos", Positions(t0, t))})) {
          return run.Failed();
        }
      }
      for (int which = 0; which < 2; ++which) {
        for (int64_t p = 0; p < 5; ++p) {
          absl::StatusOr<std::vector<float>> row = runner.ReadKvRow(0, which, p);
          if (absl::IsUnimplemented(row.status())) {
            return Comparison{{}, {}, absl::StrCat(row.status().message(), "; its appends are checked by the attention rows")};
          }
          if (!row.ok()) {
            ADD_FAILURE() << row.status();
            return Comparison{};
          }
          Append(c.got, *row);
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
                           {8, 2, 128, 63, 1, false}, {4, 2, 64, 5, 2, true}, {16, 8, 128, 3, 1, true}};
  for (P p : params) {
    for (ir::KvDType kv : {ir::KvDType::kF16, ir::KvDType::kInt8, ir::KvDType::kF32}) {
      cases.push_back({absl::StrCat(p.fused ? "qk_norm_rope_kv_append_attention" : "attention",
                                    "_H", p.h, "_Hkv", p.hkv, "_D", p.d, "_T", p.t1, "+", p.t2,
                                    "_", std::string(ir::KvDTypeName(kv))),
                       kv == ir::KvDType::kInt8 ? kInt8AttentionNmse : kAttentionNmse,
                       [p, kv](std::mt19937& rng, OpRunner& runner) {
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
        std::vector<ir::ValueId> read = {y};
        if (p.fused) read.push_back(q_att);
        CaseRun run(runner, m, read);
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
          if (!run.Step(t, t0, {F32("q", slice(qs, qw)), F32("k", slice(ks, kvw)),
                                F32("v", slice(vs, kvw)), I32("pos", Positions(t0, t))})) {
            return run.Failed();
          }
          Append(c.got, run.Out(y));
          c.want.insert(c.want.end(), want_all.begin() + t0 * qw, want_all.begin() + (t0 + t) * qw);
          if (p.fused) {  // the rotated q output as well
            Append(c.got, run.Out(q_att));
            c.want.insert(c.want.end(), q_ref.begin() + t0 * qw, q_ref.begin() + (t0 + t) * qw);
          }
        }
        return c;
      }});
    }
  }
}

// A Qwen3 attention block's front: the normed QKV group, its q/k norm + RoPE + KV append, and
// attention, over one-token steps (the decode kernels: on the CUDA backend the QKV GEMV, which
// can run the head ops in its tail, JLLM_GEMV_HEAD). Four steps: a head ticket left set by one
// step would leave the next step's head untransformed. The attention output and the rotated q of
// every step are compared — but in the "_y" case only the output: its rotated q has no reader
// but attention, so decode attention may run the head ops itself (JLLM_ATTN_FUSE_HEAD). Its
// rope base is 20 rather than 1e6, so at these four positions the last pairs turn by tenths of a
// radian, not thousandths: a pair given its neighbour's angle shows.
void QkvHeadAttentionCases(std::vector<OpCase>& cases) {
  struct P { int64_t h, hkv, d, k; GgmlType tq, tk, tv; bool q_out = true; };
  const std::vector<std::pair<P, ir::KvDType>> params = {
      {{16, 8, 128, 256, GgmlType::kQ4_K, GgmlType::kQ4_K, GgmlType::kQ6_K}, ir::KvDType::kF32},
      {{16, 8, 128, 256, GgmlType::kQ4_K, GgmlType::kQ4_K, GgmlType::kQ6_K}, ir::KvDType::kF16},
      {{16, 8, 128, 256, GgmlType::kQ4_K, GgmlType::kQ4_K, GgmlType::kQ6_K, false}, ir::KvDType::kF16},
      {{4, 2, 64, 512, GgmlType::kQ4_K, GgmlType::kQ4_K, GgmlType::kQ4_K}, ir::KvDType::kInt8},
  };
  // Unlike the attention cases, the cache here stores k and v as the backend computed them, which
  // differ from the reference's by the matmul's error ε (relative; ~1e-5 with f32 x, ~7e-5 with
  // int16 x, ~5e-3 with int8 x): where the two straddle a rounding boundary of the cache they land
  // one code apart. An element flips with probability ~ε·|x| / step and then errs by a step, an
  // NMSE of ~ε·step / |x|: f16 (step 2^-11 |x|) ~ε·5e-4, up to ~4e-8; int8 (step max|x| / 127 ~
  // 0.02 |x|) ~ε·0.02, up to ~1.5e-6, ~1e-4 with int8 x (measured on the emulation: 7e-9, 1.8e-7
  // and, with int8 x, 1.1e-4). The f32 cache stores them exactly: that case keeps the matmul bounds.
  for (const auto& [p, kv] : params) {
    const double stored = kv == ir::KvDType::kF16 ? 1e-7 : kv == ir::KvDType::kInt8 ? 5e-6 : 0;
    cases.push_back({absl::StrCat("qkv_head_attention_H", p.h, "_Hkv", p.hkv, "_D", p.d, "_K", p.k, "_",
                                  std::string(ir::KvDTypeName(kv)), p.q_out ? "" : "_y"),
                     std::max(kKQuantMatMulNmse, stored),
                     [p, kv](std::mt19937& rng, OpRunner& runner) {
      constexpr int64_t kSteps = 4;
      const int64_t qw = p.h * p.d, kvw = p.hkv * p.d;
      const float eps = 1e-6f, base = p.q_out ? 1e6f : 20.f;
      const double scale = 1.0 / std::sqrt(static_cast<double>(p.d));
      TestModel m(1, kv);
      const ir::WeightId wq = m.AddRandomWeight("wq", p.tq, {p.k, qw}, rng);
      const ir::WeightId wk = m.AddRandomWeight("wk", p.tk, {p.k, kvw}, rng);
      const ir::WeightId wv = m.AddRandomWeight("wv", p.tv, {p.k, kvw}, rng);
      const ir::WeightId norm = m.AddRandomWeight("attn_norm", GgmlType::kF32, {p.k}, rng, 0.1f, 1.0f);
      const ir::WeightId qg = m.AddRandomWeight("q_gamma", GgmlType::kF32, {p.d}, rng, 0.1f, 1.0f);
      const ir::WeightId kg = m.AddRandomWeight("k_gamma", GgmlType::kF32, {p.d}, rng, 0.1f, 1.0f);
      auto x = m.Input("x", DType::kF32, {kDimT, p.k});
      auto pos = m.Input("pos", DType::kI32, {kDimT});
      ir::MatMulAttrs mm;
      mm.norm_eps = eps;
      auto qkv = m.Node(OpKind::kMatMulGroup, {x}, {wq, wk, wv, norm}, mm, {"q", "k", "v"});
      auto outs = m.Node(OpKind::kQkNormRopeKvAppend, {qkv[0], qkv[1], qkv[2], pos}, {qg, kg},
                         ir::QkNormRopeKvAppendAttrs{0, p.h, p.hkv, p.d, eps, p.d, base, 1.0f}, {"q_out", "kv"});
      auto y = m.Node1(OpKind::kAttention, {outs[0], outs[1], pos}, {},
                       ir::AttentionAttrs{0, p.h, p.hkv, p.d, static_cast<float>(scale)}, "y");
      CaseRun run(runner, m, p.q_out ? std::vector<ir::ValueId>{y, outs[0]} : std::vector<ir::ValueId>{y});
      const std::vector<float> xs = Random(rng, kSteps * p.k);
      const std::vector<int32_t> all_pos = Positions(0, kSteps);
      // The reference: the normed products, the head transforms, the cache's storage rounding.
      const Matrix xin = RefRmsNorm(ToDouble(xs), m.Dequantized(norm), eps, p.k);
      const Matrix q_ref = RefRope(RefRmsNorm(RefMatMul(m.Dequantized(wq), xin, p.k, qw), m.Dequantized(qg), eps, p.d),
                                   all_pos, p.h, p.d, p.d, base, 1.0f);
      const Matrix k_ref = RefRope(RefRmsNorm(RefMatMul(m.Dequantized(wk), xin, p.k, kvw), m.Dequantized(kg), eps, p.d),
                                   all_pos, p.hkv, p.d, p.d, base, 1.0f);
      const Matrix v_ref = RefMatMul(m.Dequantized(wv), xin, p.k, kvw);
      const Matrix keys = RefKvStore(std::vector<float>(k_ref.begin(), k_ref.end()), kv, p.d);
      const Matrix values = RefKvStore(std::vector<float>(v_ref.begin(), v_ref.end()), kv, p.d);
      const Matrix want_all = RefAttention(q_ref, keys, values, all_pos, p.h, p.hkv, p.d, scale);
      Comparison c;
      for (int64_t t = 0; t < kSteps; ++t) {
        if (!run.Step(1, t, {F32("x", std::vector<float>(xs.begin() + t * p.k, xs.begin() + (t + 1) * p.k)),
                             I32("pos", {static_cast<int32_t>(t)})})) {
          return run.Failed();
        }
        Append(c.got, run.Out(y));
        c.want.insert(c.want.end(), want_all.begin() + t * qw, want_all.begin() + (t + 1) * qw);
        if (!p.q_out) continue;
        Append(c.got, run.Out(outs[0]));
        c.want.insert(c.want.end(), q_ref.begin() + t * qw, q_ref.begin() + (t + 1) * qw);
      }
      return c;
    }});
    // Decode GEMVs reading quantized x (op_table.cc's header); the cache's code flips as above.
    cases.back().max_nmse_x8 = kv == ir::KvDType::kInt8 ? 3e-4 : kX8MatMulNmse;
    cases.back().max_nmse_x16 = std::max(kX16MatMulNmse, stored);
  }
}

}  // namespace

std::vector<OpCase> AllOpCases() {
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
  QkvHeadAttentionCases(cases);
  return cases;
}

std::string OpCaseName(const OpCase& c) {
  std::string name = c.name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

void CheckOpCase(const OpCase& c, OpRunner& runner) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name)));
  const Comparison cmp = c.run(rng, runner);
  if (!cmp.skipped.empty()) GTEST_SKIP() << runner.name() << " does not run " << c.name << ": " << cmp.skipped;
  ASSERT_FALSE(cmp.got.empty()) << c.name << " on " << runner.name();
  ASSERT_EQ(cmp.got.size(), cmp.want.size());
  for (size_t i = 0; i < cmp.got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(cmp.got[i])) << c.name << " on " << runner.name() << ": element " << i
                                           << " is " << cmp.got[i];
  }
  const double nmse = cpu_ref::testing::Nmse(cmp.got, cmp.want);
  const int planes = runner.DecodeActivationPlanes();
  const double quantized = planes == 1 ? c.max_nmse_x8 : planes == 2 ? c.max_nmse_x16 : 0;
  const double tf32 = runner.PrefillTf32() ? c.max_nmse_tf32 : 0;
  // A case may run both paths (logits of several tokens): the looser of the bounds that apply.
  const double bound = std::max(quantized > 0 ? quantized : c.max_nmse, tf32);
  EXPECT_LE(nmse, bound) << c.name << " on " << runner.name();
}

absl::Status BackendOpRunner::Load(const TestModel& model, int64_t max_context) {
  ASSIGN_OR_RETURN(backend_, factory_(model));
  source_ = std::make_unique<BlobWeightSource>(model.blob);
  outputs_.clear();
  for (ir::ValueId v : model.graph.outputs) outputs_.push_back(model.graph.name_of(v));
  BackendOptions o;
  o.max_context = max_context;
  o.max_step_tokens = 64;
  o.n_threads = 2;
  return backend_->Load(model.graph, *source_, o);
}

absl::StatusOr<std::vector<std::vector<float>>> BackendOpRunner::Run(int64_t n_tokens, int64_t pos0,
                                                                     std::vector<NamedInput> inputs) {
  return backend_->Evaluate(n_tokens, pos0, inputs, outputs_);
}

}  // namespace jllm::testing
