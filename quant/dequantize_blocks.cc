// Block dequantizers (FORMATS.md §2). The f32 expressions keep ggml's grouping
// ((d*sc)*q - dmin*m, (d*sc)*q) so results equal ggml's dequantize_row_* bit for bit.
#include "quant/quant.h"
#include "quant/row_codecs.h"

namespace jllm::quant::internal {

void DequantizeQ8_0(const BlockQ8_0* x, float* y, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b) {
    const float d = Fp16ToF32(x[b].d);
    for (int j = 0; j < kQK8_0; ++j) *y++ = x[b].qs[j] * d;
  }
}

void DequantizeQ4_K(const BlockQ4_K* x, float* y, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b) {
    const float d = Fp16ToF32(x[b].d);
    const float dmin = Fp16ToF32(x[b].dmin);
    const uint8_t* q = x[b].qs;
    // Each 32 bytes of qs hold two sub-blocks: low nibbles (2c), then high nibbles (2c+1).
    for (int c = 0; c < 4; ++c, q += 32) {
      uint8_t sc, m;
      UnpackScaleMinK4(2 * c, x[b].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      UnpackScaleMinK4(2 * c + 1, x[b].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}

void DequantizeQ5_K(const BlockQ5_K* x, float* y, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b) {
    const float d = Fp16ToF32(x[b].d);
    const float dmin = Fp16ToF32(x[b].dmin);
    const uint8_t* ql = x[b].qs;
    const uint8_t* qh = x[b].qh;
    for (int c = 0; c < 4; ++c, ql += 32) {
      uint8_t sc, m;
      UnpackScaleMinK4(2 * c, x[b].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      UnpackScaleMinK4(2 * c + 1, x[b].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      const uint8_t lo_bit = static_cast<uint8_t>(1u << (2 * c));
      const uint8_t hi_bit = static_cast<uint8_t>(1u << (2 * c + 1));
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & lo_bit ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & hi_bit ? 16 : 0)) - m2;
    }
  }
}

void DequantizeQ6_K(const BlockQ6_K* x, float* y, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b) {
    const float d = Fp16ToF32(x[b].d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[b].ql + 64 * h;
      const uint8_t* qh = x[b].qh + 32 * h;
      const int8_t* sc = x[b].scales + 8 * h;
      float* out = y + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        out[l] = d * sc[is] * q1;
        out[l + 32] = d * sc[is + 2] * q2;
        out[l + 64] = d * sc[is + 4] * q3;
        out[l + 96] = d * sc[is + 6] * q4;
      }
    }
    y += kQK_K;
  }
}

}  // namespace jllm::quant::internal
