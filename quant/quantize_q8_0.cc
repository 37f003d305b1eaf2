// ggml's quantize_row_q8_0_ref (FORMATS.md §3): one fp16 scale per 32 values, rounded with
// roundf (half away from zero), unlike the K-quants' nearest_int.
#include <algorithm>
#include <cmath>

#include "quant/quant.h"
#include "quant/row_codecs.h"

namespace jllm::quant::internal {

void QuantizeQ8_0(const float* x, BlockQ8_0* y, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, x += kQK8_0) {
    float amax = 0;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = F32ToFp16(d);
    for (int j = 0; j < kQK8_0; ++j) {
      // x*id is within [-127, 127] up to rounding; the clamp only guards the conversion.
      y[b].qs[j] = static_cast<int8_t>(std::clamp(std::round(x[j] * id), -127.f, 127.f));
    }
  }
}

}  // namespace jllm::quant::internal
