// y = W x for a Q4_K weight in GGUF layout (row-major, each row COLS/256 blocks of 144 bytes:
// d, dmin, 12 bytes of packed 6-bit scales and mins, 128 bytes of nibbles), f32 x and y.
// Memory-bound single-token decode: every weight byte is read once, with 16-byte streaming loads.
//
// Work split. A row is cut into 16-byte units of its nibbles (8 per block, 32 weights each).
// Lane `lane` of a warp owns units lane, lane+32, ... of the warp's column range, for R rows at
// once, so each activation it reads from shared memory serves R rows. A CTA holds NRG row groups
// of R rows; KS warps share one row group by splitting its columns and meet in shared memory.
// Loads of the next unit step are issued before the current one is computed.
//
// Compile-time constants (NVRTC -D): JLLM_ROWS, JLLM_COLS, JLLM_R, JLLM_NRG, JLLM_KS.
#include "jllm_common.cuh"

namespace {

constexpr int kRows = JLLM_ROWS;
constexpr int kCols = JLLM_COLS;
constexpr int kR = JLLM_R;
constexpr int kNrg = JLLM_NRG;
constexpr int kKs = JLLM_KS;
#ifdef JLLM_MIN_BLOCKS
constexpr int kMinBlocks = JLLM_MIN_BLOCKS;  // CTAs per SM the register budget must allow
#else
constexpr int kMinBlocks = 1;
#endif

constexpr int kBlockBytes = 144;
constexpr int kBlocksPerRow = kCols / 256;
constexpr long long kRowBytes = static_cast<long long>(kBlocksPerRow) * kBlockBytes;
constexpr int kUnits = 8 * kBlocksPerRow;  // 16-byte nibble units per row
constexpr int kWarps = kNrg * kKs;
constexpr int kThreads = 32 * kWarps;
constexpr int kSteps = (kUnits + 32 * kKs - 1) / (32 * kKs);  // unit steps per warp
constexpr int kTileRows = kNrg * kR;

static_assert(kCols % 256 == 0, "Q4_K rows are whole 256-element blocks");
static_assert(kR >= 1 && kNrg >= 1 && kKs >= 1 && kThreads <= 1024, "bad launch shape");

// x[e..e+3] -> its slot. Element e = 256b + 64c + 32p + 16h + t lives in unit 8b + 2c + h (the
// nibbles qs[32c + 16h .. +15]); p = 0 is the low-nibble sub-block 2c, p = 1 the high 2c+1.
__device__ __forceinline__ int XSlot(int e) {
  const int b = e >> 8, r = e & 255;
  const int c = r >> 6, p = (r >> 5) & 1, h = (r >> 4) & 1, q = (r >> 2) & 3;
  return (4 * p + q) * kUnits + 8 * b + 2 * c + h;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    q4_k_gemv(const jllm_u8* __restrict__ w, const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float4 xs[8 * kUnits];
  __shared__ float partial[kWarps * kR];

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int kp = warp % kKs;
  const int row0 = blockIdx.x * kTileRows + (warp / kKs) * kR;

  // A lane's units all have u % 8 == lane % 8, so which nibbles and scales it uses is fixed.
  const int c = (lane & 7) >> 1;         // sub-blocks 2c (low nibbles) and 2c+1 (high)
  const int scale_shift = (c & 1) * 16;  // bit offset of byte (2c & 3) in a scales word
  const bool split_scales = c >= 2;      // sub-blocks 4..7 use the split 6-bit packing

  uint4 qs[kR], hd[kR];
  auto load_step = [&](int s, uint4 (&q)[kR], uint4 (&h)[kR]) {
    const int u = lane + 32 * (kp + kKs * s);
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      if (u < kUnits && row0 + r < kRows) {
        const jllm_u8* blk = w + (row0 + r) * kRowBytes + (u >> 3) * kBlockBytes;
        q[r] = jllm_load_stream16(blk + 16 + 16 * (u & 7));
        h[r] = jllm_load_stream16(blk);
      } else {
        q[r] = make_uint4(0, 0, 0, 0);
        h[r] = make_uint4(0, 0, 0, 0);  // d = dmin = 0: the slot adds nothing
      }
    }
  };

  load_step(0, qs, hd);  // in flight while x is staged
  jllm_stage_x<kCols, kThreads>(x, xs, XSlot);
  __syncthreads();

  float acc[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) acc[r] = 0.f;

#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    uint4 qs_next[kR], hd_next[kR];
    if (s + 1 < kSteps) load_step(s + 1, qs_next, hd_next);

    const int u = lane + 32 * (kp + kKs * s);
    if (u < kUnits) {
      float4 xv[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) xv[j] = xs[j * kUnits + u];
      const float sum_lo = (jllm_sum4(xv[0]) + jllm_sum4(xv[1])) + (jllm_sum4(xv[2]) + jllm_sum4(xv[3]));
      const float sum_hi = (jllm_sum4(xv[4]) + jllm_sum4(xv[5])) + (jllm_sum4(xv[6]) + jllm_sum4(xv[7]));

#pragma unroll
      for (int r = 0; r < kR; ++r) {
        // Sums of (0.5 + q/256) * x over the 16 low and the 16 high nibbles.
        float f_lo = 0.f, f_hi = 0.f;
        const jllm_u32 words[4] = {qs[r].x, qs[r].y, qs[r].z, qs[r].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          f_lo = jllm_fma4_bytes(words[i] & 0x0F0F0F0Fu, xv[i], f_lo);
          f_hi = jllm_fma4_bytes((words[i] >> 4) & 0x0F0F0F0Fu, xv[4 + i], f_hi);
        }
        const jllm_u32 s1 = hd[r].y >> scale_shift;  // scales[0..3]
        const jllm_u32 s2 = hd[r].z >> scale_shift;  // scales[4..7]
        const jllm_u32 s3 = hd[r].w >> scale_shift;  // scales[8..11]
        int sc_lo, sc_hi, m_lo, m_hi;
        if (!split_scales) {
          sc_lo = s1 & 63;
          sc_hi = (s1 >> 8) & 63;
          m_lo = s2 & 63;
          m_hi = (s2 >> 8) & 63;
        } else {
          sc_lo = (s3 & 15) | ((s1 >> 2) & 0x30);
          sc_hi = ((s3 >> 8) & 15) | ((s1 >> 10) & 0x30);
          m_lo = ((s3 >> 4) & 15) | ((s2 >> 2) & 0x30);
          m_hi = ((s3 >> 12) & 15) | ((s2 >> 10) & 0x30);
        }
        const float d = jllm_half_to_float(static_cast<jllm_u16>(hd[r].x & 0xFFFFu));
        const float dmin = jllm_half_to_float(static_cast<jllm_u16>(hd[r].x >> 16));
        // sum_t (d*sc*q_t - dmin*m) x_t with sum_t q_t x_t = 256 f - 128 sum.
        const float d_lo = d * static_cast<float>(sc_lo);
        const float d_hi = d * static_cast<float>(sc_hi);
        float a = acc[r];
        a = fmaf(256.f * d_lo, f_lo, a);
        a = fmaf(-fmaf(128.f, d_lo, dmin * static_cast<float>(m_lo)), sum_lo, a);
        a = fmaf(256.f * d_hi, f_hi, a);
        a = fmaf(-fmaf(128.f, d_hi, dmin * static_cast<float>(m_hi)), sum_hi, a);
        acc[r] = a;
      }
    }
    if (s + 1 < kSteps) {
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        qs[r] = qs_next[r];
        hd[r] = hd_next[r];
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const float v = jllm_warp_sum(acc[r]);
    if (kKs == 1) {
      if (lane == 0 && row0 + r < kRows) y[row0 + r] = v;
    } else if (lane == 0) {
      partial[warp * kR + r] = v;
    }
  }
  if (kKs > 1) {
    __syncthreads();
    // Row group g's partials sit at warps g*KS .. g*KS+KS-1; add them in a fixed order.
    for (int i = threadIdx.x; i < kNrg * kR; i += kThreads) {
      const int g = i / kR, r = i % kR;
      float v = 0.f;
      for (int k = 0; k < kKs; ++k) v += partial[(g * kKs + k) * kR + r];
      const int row = blockIdx.x * kTileRows + g * kR + r;
      if (row < kRows) y[row] = v;
    }
  }
}
