#include "backends/cpu_ref/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/model_config.h"
#include "quant/quant.h"

namespace jllm::cpu_ref {
namespace {

// f16 -> f32 for all 65536 bit patterns: reading the cache is the attention's inner loop.
const float* HalfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = quant::Fp16ToF32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

}  // namespace

KvCache::KvCache(ir::KvDType type, int64_t n_pos, int64_t n_head_kv, int64_t head_dim)
    : type_(type), n_pos_(n_pos), n_head_kv_(n_head_kv), head_dim_(head_dim),
      width_(n_head_kv * head_dim) {
  // make_unique_for_overwrite: default-initialized, so the pages stay untouched until written.
  const size_t rows = static_cast<size_t>(2 * n_pos_);
  if (type_ == ir::KvDType::kF16) {
    half_ = std::make_unique_for_overwrite<uint16_t[]>(rows * width_);
  } else if (type_ == ir::KvDType::kF32) {
    full_ = std::make_unique_for_overwrite<float[]>(rows * width_);
  } else {
    q_ = std::make_unique_for_overwrite<int8_t[]>(rows * width_);
    scales_ = std::make_unique_for_overwrite<uint16_t[]>(rows * n_head_kv_);
  }
}

int64_t KvCache::BytesPerPosition(ir::KvDType type, int64_t n_head_kv, int64_t head_dim) {
  ir::ModelConfig c;  // the one formula for KV sizes lives with the model config
  c.n_head_kv = n_head_kv;
  c.head_dim = head_dim;
  return ir::KvBytesPerTokenPerLayer(c, type);
}

void KvCache::Write(int64_t pos, const float* k, const float* v) {
  for (int which = 0; which < 2; ++which) {
    const float* src = which == 0 ? k : v;
    const int64_t row = which * n_pos_ + pos;
    if (type_ == ir::KvDType::kF16) {
      uint16_t* dst = &half_[row * width_];
      for (int64_t i = 0; i < width_; ++i) dst[i] = quant::F32ToFp16(src[i]);
      continue;
    }
    if (type_ == ir::KvDType::kF32) {
      std::copy(src, src + width_, &full_[row * width_]);
      continue;
    }
    for (int64_t h = 0; h < n_head_kv_; ++h) {
      const float* x = src + h * head_dim_;
      float amax = 0.0f;
      bool finite = true;
      for (int64_t i = 0; i < head_dim_; ++i) {
        amax = std::max(amax, std::fabs(x[i]));
        finite = finite && std::isfinite(x[i]);
      }
      int8_t* dst = &q_[row * width_ + h * head_dim_];
      uint16_t* scale = &scales_[row * n_head_kv_ + h];
      if (!finite) {
        // A NaN scale makes the whole row read back as NaN rather than as made-up numbers.
        std::fill(dst, dst + head_dim_, int8_t{0});
        *scale = quant::F32ToFp16(NAN);
        continue;
      }
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      for (int64_t i = 0; i < head_dim_; ++i) {
        dst[i] = static_cast<int8_t>(std::clamp(std::round(x[i] * id), -127.0f, 127.0f));
      }
      *scale = quant::F32ToFp16(d);
    }
  }
}

void KvCache::Read(int which, int64_t pos, float* out) const {
  const int64_t row = which * n_pos_ + pos;
  const float* half_to_f32 = HalfTable();
  if (type_ == ir::KvDType::kF16) {
    const uint16_t* src = &half_[row * width_];
    for (int64_t i = 0; i < width_; ++i) out[i] = half_to_f32[src[i]];
    return;
  }
  if (type_ == ir::KvDType::kF32) {
    const float* src = &full_[row * width_];
    std::copy(src, src + width_, out);
    return;
  }
  for (int64_t h = 0; h < n_head_kv_; ++h) {
    const float d = half_to_f32[scales_[row * n_head_kv_ + h]];
    const int8_t* src = &q_[row * width_ + h * head_dim_];
    float* dst = out + h * head_dim_;
    for (int64_t i = 0; i < head_dim_; ++i) dst[i] = static_cast<float>(src[i]) * d;
  }
}

}  // namespace jllm::cpu_ref
