// y = W x for a Q6_K weight in GGUF layout (row-major, each row COLS/256 blocks of 210 bytes:
// ql[128] low nibbles, qh[64] high 2-bit pairs, int8 scales[16], fp16 d), f32 x and y.
// Memory-bound single-token decode: every weight byte is read once.
//
// 210-byte blocks are only 2-byte aligned, so weights cannot go straight into registers with
// 16-byte loads. Instead each CTA streams tiles of whole rows (one contiguous, 16-byte aligned
// byte range) into a ring of shared-memory stages with 16-byte cp.async copies, STAGES-1 tiles
// ahead of the one it computes, and decodes from shared memory. CTAs are persistent: CTA b takes
// tiles b, b + gridDim.x, ... (the launch picks gridDim.x to fill the GPU).
//
// Work split inside a tile, as in q4_k_gemv.cu: a row is cut into units of 32 weights (8 per
// block: half hh, 8-element column group g); lane `lane` owns units lane, lane+32, ... for R
// rows at once; NRG row groups per tile; KS warps split one row group's columns.
//
// Compile-time constants (NVRTC -D): JLLM_ROWS, JLLM_COLS, JLLM_R, JLLM_NRG, JLLM_KS, JLLM_STAGES.
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
constexpr int kStages = JLLM_STAGES;

constexpr int kBlockBytes = 210;
constexpr int kBlocksPerRow = kCols / 256;
constexpr int kRowBytes = kBlocksPerRow * kBlockBytes;
constexpr long long kTotalBytes = static_cast<long long>(kRows) * kRowBytes;
constexpr int kUnits = 8 * kBlocksPerRow;  // 32-weight units per row
constexpr int kWarps = kNrg * kKs;
constexpr int kThreads = 32 * kWarps;
constexpr int kSteps = (kUnits + 32 * kKs - 1) / (32 * kKs);  // unit steps per warp
constexpr int kTileRows = kNrg * kR;
constexpr int kTileBytes = kTileRows * kRowBytes;
constexpr int kNumTiles = (kRows + kTileRows - 1) / kTileRows;

// Dynamic shared memory: x slots, then the KS partial sums, then the stages. The host computes
// the same total (QuantGemvSpec::DynamicSharedBytes) and the kernel checks it.
constexpr int kXsBytes = 8 * kUnits * 16;
constexpr int kPartialBytes = (kWarps * kR * 4 + 15) / 16 * 16;
constexpr int kSmemBytes = kXsBytes + kPartialBytes + kStages * kTileBytes;

static_assert(kCols % 256 == 0, "Q6_K rows are whole 256-element blocks");
static_assert(kRowBytes % 4 == 0, "rows must start 4-byte aligned (an even number of blocks)");
static_assert(kTileBytes % 16 == 0, "tiles must start 16-byte aligned for cp.async");
static_assert(kStages >= 2, "need at least double buffering");
static_assert(kR >= 1 && kNrg >= 1 && kKs >= 1 && kThreads <= 1024, "bad launch shape");

// x[e..e+3] -> its slot. Element e = 256b + 128hh + 32Q + 8g + 4i + t belongs to unit
// 8b + 4hh + g (quadrant Q of half hh, columns 8g..8g+7); its part is 2Q + i.
__device__ __forceinline__ int XSlot(int e) {
  const int b = e >> 8, r = e & 255;
  const int hh = r >> 7, quad = (r >> 5) & 3, g = (r >> 3) & 3, i = (r >> 2) & 1;
  return (2 * quad + i) * kUnits + 8 * b + 4 * hh + g;
}

// 8 bytes at a 2-byte-aligned shared address p, where p - misalign is 4-byte aligned and
// misalign is 0 or 2 (shift = 8 * misalign): three aligned words, two funnel shifts.
__device__ __forceinline__ void Load8Unaligned(const jllm_u8* p, int misalign, int shift,
                                               jllm_u32& lo, jllm_u32& hi) {
  const jllm_u32* w = reinterpret_cast<const jllm_u32*>(p - misalign);
  const jllm_u32 w0 = w[0], w1 = w[1], w2 = w[2];
  lo = __funnelshift_r(w0, w1, shift);
  hi = __funnelshift_r(w1, w2, shift);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    q6_k_gemv(const jllm_u8* __restrict__ w, const float* __restrict__ x, float* __restrict__ y) {
  extern __shared__ __align__(16) jllm_u8 smem[];
  {
    jllm_u32 dynamic_bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
    if (dynamic_bytes < static_cast<jllm_u32>(kSmemBytes)) __trap();  // launched with too little
  }
  float4* xs = reinterpret_cast<float4*>(smem);
  float* partial = reinterpret_cast<float*>(smem + kXsBytes);
  jllm_u8* stages = smem + kXsBytes + kPartialBytes;

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int kp = warp % kKs;
  const int lr0 = (warp / kKs) * kR;  // first tile-local row of this warp's group

  // A lane's units all have u % 8 == lane % 8 and an odd block index iff lane & 8, so its byte
  // offsets inside a block and the block's 2-byte misalignment are fixed.
  const int hh = (lane >> 2) & 1;
  const int g = lane & 3;
  const int misalign = ((lane >> 3) & 1) * 2;  // odd blocks start 2 bytes past a 4-byte boundary
  const int shift = misalign * 8;
  const int ql_off = 64 * hh + 8 * g;
  const int qh_off = 128 + 32 * hh + 8 * g;
  const int sc_off = 192 + 8 * hh + (g >> 1);

  // Local iteration i handles tile blockIdx.x + i * gridDim.x from stage i % STAGES.
  auto issue = [&](int i) {
    const int tile = blockIdx.x + i * gridDim.x;
    if (tile < kNumTiles) {
      jllm_u8* dst = stages + (i % kStages) * kTileBytes;
      const long long start = static_cast<long long>(tile) * kTileBytes;
      const long long left = kTotalBytes - start;
      const int bytes = left < kTileBytes ? static_cast<int>(left) : kTileBytes;
      for (int off = threadIdx.x * 16; off < bytes; off += kThreads * 16) {
        const int n = bytes - off;
        jllm_cp_async16(dst + off, w + start + off, n < 16 ? n : 16);
      }
    }
    jllm_cp_async_commit();  // possibly empty: keeps the group count uniform
  };

#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) issue(i);
  jllm_stage_x<kCols, kThreads>(x, xs, XSlot);

  for (int i = 0;; ++i) {
    const int tile = blockIdx.x + i * gridDim.x;
    if (tile >= kNumTiles) break;
    jllm_cp_async_wait<kStages - 2>();  // this thread's copies of tile i have landed
    __syncthreads();                    // everyone's have; and stage (i-1) % STAGES is free
    issue(i + kStages - 1);

    const jllm_u8* tile_smem = stages + (i % kStages) * kTileBytes;
    const int tile_row0 = tile * kTileRows;
    float acc[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) acc[r] = 0.f;

#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int u = lane + 32 * (kp + kKs * s);
      if (u >= kUnits) continue;
      float4 xv[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) xv[j] = xs[j * kUnits + u];
      float xsum[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) xsum[q] = jllm_sum4(xv[2 * q]) + jllm_sum4(xv[2 * q + 1]);

#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (tile_row0 + lr0 + r >= kRows) continue;
        const jllm_u8* blk = tile_smem + (lr0 + r) * kRowBytes + (u >> 3) * kBlockBytes;
        jllm_u32 ql_a[2], ql_b[2], qh[2];  // ql[64hh + 8g ..], ql[64hh + 32 + 8g ..], qh[32hh + 8g ..]
        Load8Unaligned(blk + ql_off, misalign, shift, ql_a[0], ql_a[1]);
        Load8Unaligned(blk + ql_off + 32, misalign, shift, ql_b[0], ql_b[1]);
        Load8Unaligned(blk + qh_off, misalign, shift, qh[0], qh[1]);
        // Sums of (0.5 + q/256) * x per quadrant Q; q = 4-bit part | 2-bit part << 4.
        float f[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          const jllm_u32 h = qh[k];
          const jllm_u32 q0 = (ql_a[k] & 0x0F0F0F0Fu) | ((h << 4) & 0x30303030u);
          const jllm_u32 q1 = (ql_b[k] & 0x0F0F0F0Fu) | ((h << 2) & 0x30303030u);
          const jllm_u32 q2 = ((ql_a[k] >> 4) & 0x0F0F0F0Fu) | (h & 0x30303030u);
          const jllm_u32 q3 = ((ql_b[k] >> 4) & 0x0F0F0F0Fu) | ((h >> 2) & 0x30303030u);
          f[0] = jllm_fma4_bytes(q0, xv[0 + k], f[0]);
          f[1] = jllm_fma4_bytes(q1, xv[2 + k], f[1]);
          f[2] = jllm_fma4_bytes(q2, xv[4 + k], f[2]);
          f[3] = jllm_fma4_bytes(q3, xv[6 + k], f[3]);
        }
        // sum_t (q_t - 32) x_t = 256 f - 160 sum, scaled by d * scales[8hh + 2Q + g/2].
        float dot = 0.f;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float sc = static_cast<float>(static_cast<signed char>(blk[sc_off + 2 * q]));
          dot = fmaf(sc, fmaf(256.f, f[q], -160.f * xsum[q]), dot);
        }
        const float d = jllm_half_to_float(*reinterpret_cast<const jllm_u16*>(blk + 208));
        acc[r] = fmaf(d, dot, acc[r]);
      }
    }

#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const float v = jllm_warp_sum(acc[r]);
      const int row = tile_row0 + lr0 + r;
      if (kKs == 1) {
        if (lane == 0 && row < kRows) y[row] = v;
      } else if (lane == 0) {
        partial[warp * kR + r] = v;
      }
    }
    if (kKs > 1) {
      __syncthreads();
      for (int k = threadIdx.x; k < kNrg * kR; k += kThreads) {
        const int grp = k / kR, r = k % kR;
        float v = 0.f;
        for (int p = 0; p < kKs; ++p) v += partial[(grp * kKs + p) * kR + r];
        const int row = tile_row0 + grp * kR + r;
        if (row < kRows) y[row] = v;
      }
      // The next iteration's barrier orders these reads before partial is written again.
    }
  }
  jllm_cp_async_wait<0>();  // no copy may outlive the CTA's shared memory
}
