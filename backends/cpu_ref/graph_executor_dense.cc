// The token-local ops: embed, norms, matmuls (fused prologue/epilogues included), RoPE and
// the elementwise ops. Work is split over output rows (matmuls) or tokens (the rest).
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu_ref/graph_executor.h"
#include "backends/cpu_ref/kernels.h"

namespace jllm::cpu_ref {
namespace {

// Splits work so that a thread gets at least ~64k multiply-adds (waking one costs microseconds).
int64_t MinChunk(int64_t work_per_item) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, work_per_item));
}

}  // namespace

absl::Status GraphExecutor::RunEmbed(const ir::Node& n) {
  const ir::WeightRef& table = graph_.weights[n.weights[0]];
  const int64_t e = table.dim(0);
  const int64_t vocab = table.dim(1);
  const int32_t* tokens = i32_[n.inputs[0]].data();
  float* y = Out(n.outputs[0]);
  for (int64_t t = 0; t < t_; ++t) {
    if (tokens[t] < 0 || tokens[t] >= vocab) {
      return absl::OutOfRangeError(absl::StrCat("token id ", tokens[t], " (row ", t,
                                                ") is outside the vocabulary of ", vocab));
    }
    std::copy_n(W(n.weights[0]) + tokens[t] * e, e, y + t * e);
  }
  return absl::OkStatus();
}

void GraphExecutor::RunRmsNorm(const ir::Node& n) {
  const int64_t width = Width(n.inputs[0]);
  const float eps = n.attrs_as<ir::RmsNormAttrs>().eps;
  const float* x = In(n.inputs[0]);
  const float* gamma = W(n.weights[0]);
  float* y = Out(n.outputs[0]);
  pool_.ParallelFor(t_, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) RmsNormRow(x + t * width, gamma, eps, width, y + t * width);
  }, MinChunk(width));
}

void GraphExecutor::RunMatMul(const ir::Node& n) {
  const bool logits = n.op == ir::OpKind::kLogits;
  const ir::MatMulAttrs attrs = logits ? ir::MatMulAttrs{} : n.attrs_as<ir::MatMulAttrs>();
  const absl::Span<const ir::WeightId> members =
      logits ? absl::Span<const ir::WeightId>(n.weights) : ir::MatMulMembers(n);
  const int64_t k = Width(n.inputs[0]);
  // A last-row-only output needs just the last token's row of the input.
  const bool last_only = n.outputs.size() == 1 && n.outputs[0] == last_row_only_;
  const int64_t rows = last_only ? 1 : t_;
  const int64_t row0 = last_only ? t_ - 1 : 0;
  const float* x = In(n.inputs[0]) + row0 * k;

  std::vector<float> normed;
  if (attrs.norm_eps) {  // RMSNorm prologue: the normalized rows feed every member
    normed.resize(rows * k);
    const float* gamma = W(*ir::MatMulNormWeight(n));
    const float eps = *attrs.norm_eps;
    pool_.ParallelFor(rows, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) RmsNormRow(x + t * k, gamma, eps, k, &normed[t * k]);
    }, MinChunk(k));
    x = normed.data();
  }

  if (attrs.swiglu) {  // (gate, up) group: one output silu(gate)·up
    const int64_t f = Width(n.outputs[0]);
    std::vector<float> gate(rows * f), up(rows * f);
    float* y = Out(n.outputs[0]);
    pool_.ParallelFor(f, [&](int64_t begin, int64_t end) {
      MatVecRows(W(members[0]), k, begin, end, x, rows, gate.data(), f);
      MatVecRows(W(members[1]), k, begin, end, x, rows, up.data(), f);
      for (int64_t t = 0; t < rows; ++t) {
        for (int64_t o = begin; o < end; ++o) y[t * f + o] = SwiGlu(gate[t * f + o], up[t * f + o]);
      }
    }, MinChunk(2 * k * rows));
    return;
  }

  for (size_t m = 0; m < members.size(); ++m) {
    const ir::ValueId out = n.outputs[m];
    const int64_t width = Width(out);
    float* y = Out(out);
    const float* residual = attrs.residual ? In(n.inputs[1]) + row0 * width : nullptr;
    pool_.ParallelFor(width, [&](int64_t begin, int64_t end) {
      MatVecRows(W(members[m]), k, begin, end, x, rows, y, width);
      if (residual == nullptr) return;
      for (int64_t t = 0; t < rows; ++t) {
        for (int64_t o = begin; o < end; ++o) y[t * width + o] += residual[t * width + o];
      }
    }, MinChunk(k * rows));
  }
}

void GraphExecutor::HeadNormRope(const float* x, int64_t n_head, int64_t head_dim,
                                 const float* gamma, float eps, const int32_t* pos,
                                 int64_t n_rot, float freq_base, float freq_scale, float* y) {
  const int64_t width = n_head * head_dim;
  pool_.ParallelFor(t_, [&](int64_t begin, int64_t end) {
    std::vector<float> cos_t(n_rot / 2), sin_t(n_rot / 2);
    for (int64_t t = begin; t < end; ++t) {
      if (pos != nullptr) RopeAngles(pos[t], n_rot, freq_base, freq_scale, cos_t.data(), sin_t.data());
      for (int64_t h = 0; h < n_head; ++h) {
        const float* xh = x + t * width + h * head_dim;
        float* yh = y + t * width + h * head_dim;
        if (gamma != nullptr) {
          RmsNormRow(xh, gamma, eps, head_dim, yh);
        } else {
          std::copy_n(xh, head_dim, yh);
        }
        if (pos != nullptr) RopeHead(yh, n_rot, cos_t.data(), sin_t.data());
      }
    }
  }, MinChunk(4 * width));
}

void GraphExecutor::RunHeadRmsNorm(const ir::Node& n) {
  const auto& a = n.attrs_as<ir::HeadRmsNormAttrs>();
  HeadNormRope(In(n.inputs[0]), a.n_head, a.head_dim, W(n.weights[0]), a.eps, nullptr, 0, 0, 0,
               Out(n.outputs[0]));
}

void GraphExecutor::RunRope(const ir::Node& n) {
  const auto& a = n.attrs_as<ir::RopeAttrs>();
  HeadNormRope(In(n.inputs[0]), a.n_head, a.head_dim, nullptr, 0, i32_[n.inputs[1]].data(),
               a.n_rot, a.freq_base, a.freq_scale, Out(n.outputs[0]));
}

void GraphExecutor::RunSwiGlu(const ir::Node& n) {
  const float* g = In(n.inputs[0]);
  const float* u = In(n.inputs[1]);
  float* y = Out(n.outputs[0]);
  const int64_t size = static_cast<int64_t>(f32_[n.outputs[0]].size());
  for (int64_t i = 0; i < size; ++i) y[i] = SwiGlu(g[i], u[i]);
}

void GraphExecutor::RunAdd(const ir::Node& n) {
  const float* a = In(n.inputs[0]);
  const float* b = In(n.inputs[1]);
  float* y = Out(n.outputs[0]);
  const int64_t size = static_cast<int64_t>(f32_[n.outputs[0]].size());
  for (int64_t i = 0; i < size; ++i) y[i] = a[i] + b[i];
}

}  // namespace jllm::cpu_ref
