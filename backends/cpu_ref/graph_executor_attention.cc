// The ops that touch the KV cache: kv_append, attention and the fused q/k-norm + RoPE + append.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu_ref/graph_executor.h"
#include "backends/cpu_ref/kernels.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::cpu_ref {

absl::Status GraphExecutor::CheckPositions(const int32_t* pos, std::string_view what) const {
  for (int64_t t = 0; t < t_; ++t) {
    if (pos[t] < 0 || pos[t] >= s_) {
      return absl::OutOfRangeError(absl::StrCat(Sv(what), ": position ", pos[t], " (row ", t,
                                                ") is outside the ", s_,
                                                " cache positions of this step"));
    }
  }
  return absl::OkStatus();
}

absl::Status GraphExecutor::AppendRows(int64_t layer, const float* k, const float* v,
                                       const int32_t* pos) {
  RETURN_IF_ERROR(CheckPositions(pos, "kv append"));
  KvCache& cache = *caches_[layer];
  const int64_t width = cache.row_width();
  for (int64_t t = 0; t < t_; ++t) cache.Write(pos[t], k + t * width, v + t * width);
  return absl::OkStatus();
}

absl::Status GraphExecutor::RunKvAppend(const ir::Node& n) {
  return AppendRows(n.attrs_as<ir::KvAppendAttrs>().layer, In(n.inputs[0]), In(n.inputs[1]),
                    i32_[n.inputs[2]].data());
}

absl::Status GraphExecutor::RunQkNormRopeKvAppend(const ir::Node& n) {
  const auto& a = n.attrs_as<ir::QkNormRopeKvAppendAttrs>();
  const int32_t* pos = i32_[n.inputs[3]].data();
  HeadNormRope(In(n.inputs[0]), a.n_head, a.head_dim, W(n.weights[0]), a.eps, pos, a.n_rot,
               a.freq_base, a.freq_scale, Out(n.outputs[0]));
  std::vector<float> k(t_ * a.n_head_kv * a.head_dim);
  HeadNormRope(In(n.inputs[1]), a.n_head_kv, a.head_dim, W(n.weights[1]), a.eps, pos, a.n_rot,
               a.freq_base, a.freq_scale, k.data());
  return AppendRows(a.layer, k.data(), In(n.inputs[2]), pos);
}

absl::Status GraphExecutor::RunAttention(const ir::Node& n) {
  const auto& a = n.attrs_as<ir::AttentionAttrs>();
  const KvCache& cache = *caches_[cache_layer_[n.inputs[1]]];
  const int32_t* pos = i32_[n.inputs[2]].data();
  RETURN_IF_ERROR(CheckPositions(pos, "attention"));
  const int64_t n_ctx = *std::max_element(pos, pos + t_) + 1;

  // The cache rows this step can see, read back in f32 once for all heads.
  const int64_t kv_width = cache.row_width();
  std::vector<float> keys(n_ctx * kv_width), values(n_ctx * kv_width);
  pool_.ParallelFor(n_ctx, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      cache.Read(0, p, &keys[p * kv_width]);
      cache.Read(1, p, &values[p * kv_width]);
    }
  }, 64);

  const int64_t d = a.head_dim;
  const int64_t group = a.n_head / a.n_head_kv;  // query heads per kv head (GQA)
  const int64_t q_width = a.n_head * d;
  const float* q = In(n.inputs[0]);
  float* out = Out(n.outputs[0]);
  pool_.ParallelFor(t_ * a.n_head, [&](int64_t begin, int64_t end) {
    std::vector<float> probs(n_ctx);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / a.n_head;
      const int64_t h = item % a.n_head;
      const int64_t kv_off = (h / group) * d;
      const float* qh = q + t * q_width + h * d;
      // Causal: position pos[t] sees cache positions 0..pos[t]; the rest are masked to -inf,
      // i.e. left out of the softmax.
      const int64_t seen = pos[t] + 1;
      for (int64_t j = 0; j < seen; ++j) probs[j] = Dot(qh, &keys[j * kv_width + kv_off], d) * a.scale;
      SoftmaxInPlace(probs.data(), seen);
      float* oh = out + t * q_width + h * d;
      std::fill_n(oh, d, 0.0f);
      for (int64_t j = 0; j < seen; ++j) {
        const float p = probs[j];
        const float* vj = &values[j * kv_width + kv_off];
        for (int64_t i = 0; i < d; ++i) oh[i] += p * vj[i];
      }
    }
  }, std::max<int64_t>(1, 65536 / (n_ctx * d)));
  return absl::OkStatus();
}

}  // namespace jllm::cpu_ref
