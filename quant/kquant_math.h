// Shared pieces of ggml's reference K-quantizers (FORMATS.md §3). Private to quant/: the
// arithmetic follows ggml's f32 expressions and loop order term by term, because the
// quantized bytes (not just their accuracy) must match llama-quantize's.
#pragma once

#include <bit>
#include <cstdint>

namespace jllm::quant::internal {

// Round half to even via the 1.5*2^23 trick; defined for |x| <= 4194303 (callers clamp after).
inline int NearestInt(float x) {
  const float shifted = x + 12582912.0f;
  const int32_t bits = std::bit_cast<int32_t>(shifted);
  return (bits & 0x007FFFFF) - 0x00400000;
}

// Fits x ~ scale*L + min with L in [0, nmax] over n elements with weights w; returns the scale
// and stores -min (>= 0) in *neg_min. L receives the levels; laux is scratch of n bytes.
float MakeQkx2Quants(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                     uint8_t* laux, float rmin, float rdelta, int nstep);

// Fits x ~ scale*l with l in [-nmax, nmax-1] (weights x^2); returns the signed scale and stores
// l + nmax in L.
float MakeQxQuants(int n, int nmax, const float* x, int8_t* L);

}  // namespace jllm::quant::internal
