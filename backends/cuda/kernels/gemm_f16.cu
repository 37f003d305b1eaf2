// Prefill matrix product on the f16 tensor cores, for the K-quants and q8_0: y[t] = W · x[t]
// (+ residual[t]) for the T tokens of a chunk; W one matrix in the device layout, x [T, K],
// y [T, N].
//
// A CTA computes BM weight rows x BN tokens; warp w owns rows 16w..16w+15 and every token, so
// each weight is dequantized once per CTA, straight from shared memory into the warp's A
// fragments (mma.sync m16n8k16, f16 in, f32 accumulate). The pipeline keeps the memory system
// busy while the tensor cores run:
//   - W: per 256 columns the rows' raw quant bytes (raw_tiles.cuh), copied with cp.async into
//     two stages: super-block sb + 2 is issued as soon as sb is consumed, so each lands during
//     a whole super-block of MMAs. The weights depend on no earlier kernel, so the first two
//     stages are issued before the grid dependency wait.
//   - x: 32 columns at a time as f16, double-buffered: a thread loads its share of the next
//     32 columns into registers before the MMAs of the current ones and converts and stores it
//     after them, so the loads' latency hides behind the MMAs; one barrier per 32 columns.
// Precision: a weight rounded to f16 keeps tf32's 10 mantissa bits (the op table's tf32 bound
// holds). x is split (JLLM_XSPLIT 1) into hi = f16(x) and lo = f16(x - hi), each multiplied by
// the same A fragment: x then carries ~21 bits and only the weights' rounding is left, which
// halves the error variance of a dot product against 10-bit x (14b's --validate needs it: 5.2e-3
// with 10-bit x, over the 5e-3 bound). f16's range is smaller than tf32's: an activation beyond
// 65,504 would overflow, which Qwen3's matmul inputs (normed, or SwiGLU of normed) do not reach.
// Rows past N and tokens past T read row N - 1 and token T - 1 and are not stored.
// JLLM_PAIR: the gate and up matrices of a SwiGLU (args.w, args.w2, same type and shape) in one
// launch: a warp's 16 rows of both share every x fragment, and the epilogue stores
// silu(gate) · up — x is staged once for the two, and no elementwise kernel follows.
//
// Constants (-D): JLLM_TYPE, JLLM_K, JLLM_N, JLLM_BM, JLLM_BN, JLLM_RESIDUAL, JLLM_XSPLIT,
// JLLM_PAIR, JLLM_MINB (CTAs per SM the registers are capped for).
#include "kernel_args.h"
#include "launch_geometry.h"
#include "raw_tiles.cuh"

namespace {

using namespace jllm_kernels;

constexpr int kType = JLLM_TYPE;
constexpr int kK = JLLM_K;
constexpr int kN = JLLM_N;
constexpr int kBm = JLLM_BM;
constexpr int kBn = JLLM_BN;
constexpr bool kResidual = JLLM_RESIDUAL;
constexpr int kXParts = JLLM_XSPLIT ? 2 : 1;        // x as hi (+ lo) f16 tiles
constexpr int kMats = JLLM_PAIR ? 2 : 1;            // gate and up, or one matrix
constexpr int kWarps = kBm / 16;
constexpr int kThreads = 32 * kWarps;
constexpr int kNt = kBn / 8;                        // n8 tiles per warp
constexpr int kSb = kK / 256;                       // raw stages (super-blocks) along K
constexpr int kSteps = kK / 32;                     // x stages
constexpr int kChunks = geo::GemmRawChunks(kType);  // 16-byte copies per row and stage
constexpr int kPitch = geo::GemmRawPitch(kType);
constexpr int kXp = geo::kGemmF16XPitch;
constexpr int kXPer = kBn * 8 / kThreads;           // float4 of x per thread and stage
constexpr long long kRowStride = jllm::cuda::layout::RowStride(kType, kK);

static_assert(geo::GemmF16Supported(kType), "gemm_f16 reads the K-quants and q8_0");
static_assert(kK % 256 == 0, "GEMM columns are whole groups of 256");
static_assert(kBm % 16 == 0 && kBn % 16 == 0 && kThreads <= 1024, "tile shape");
static_assert((kBn * 8) % kThreads == 0, "x tile float4 per thread");
static_assert(kMats == 1 || !kResidual, "a SwiGLU pair adds no residual");

using Raw = RawTile<kType>;

}  // namespace

JLLM_KERNEL(gemm_f16, jllm::cuda::GemmArgs, kThreads, JLLM_MINB) {
  JLLM_DYNAMIC_SMEM(jllm_u8, smem);
  constexpr int kStage = kMats * kBm * kPitch;                            // raw bytes of a stage
  jllm_u8* raw = smem;                                                    // [2][kMats][kBm][kPitch]
  jllm_u16* xs = reinterpret_cast<jllm_u16*>(smem + 2 * kStage);         // [2][kXParts][kBn][kXp]
  const int m0 = blockIdx.x * kBm;
  const int t0 = blockIdx.y * kBn;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
  const jllm_u8* w = static_cast<const jllm_u8*>(args.w);
  const jllm_u8* w_up = static_cast<const jllm_u8*>(args.w2);

  auto stage_raw = [&](int sb) {
    jllm_u8* dst = raw + (sb & 1) * kStage;
    for (int c = tid; c < kMats * kBm * kChunks; c += kThreads) {
      const int r = c / kChunks, ch = c % kChunks;  // r: row of matrix r / kBm
      const jllm_u8* base = kMats == 2 && r >= kBm ? w_up : w;
      const jllm_u8* row = base + static_cast<long long>(min(m0 + r % kBm, kN - 1)) * kRowStride;
      jllm_cp_async16(dst + r * kPitch + 16 * ch, RawChunk<kType, kK>(row, sb, ch));
    }
  };
  stage_raw(0);
  jllm_cp_async_commit();
  if (kSb > 1) stage_raw(1);
  jllm_cp_async_commit();  // (empty with one stage: the waits below count two groups)

  JLLM_GRID_WAIT();  // x and the residual come from the kernels before
  JLLM_LAUNCH_DEPENDENTS();

  const int last_token = args.n_tokens - 1;
  float4 xr[kXPer];
  auto load_x = [&](int step) {
#pragma unroll
    for (int i = 0; i < kXPer; ++i) {
      const int f = tid + i * kThreads, t = f >> 3, c4 = f & 7;
      xr[i] = *reinterpret_cast<const float4*>(args.x + static_cast<long long>(min(t0 + t, last_token)) * kK +
                                               32 * step + 4 * c4);
    }
  };
  auto store_x = [&](int step) {
    jllm_u16* dst = xs + (step & 1) * kXParts * kBn * kXp;
#pragma unroll
    for (int i = 0; i < kXPer; ++i) {
      const int f = tid + i * kThreads, t = f >> 3, c4 = f & 7;
      const jllm_u32 hi0 = jllm_pack_half2(xr[i].x, xr[i].y), hi1 = jllm_pack_half2(xr[i].z, xr[i].w);
      *reinterpret_cast<uint2*>(dst + t * kXp + 4 * c4) = make_uint2(hi0, hi1);
      if constexpr (kXParts == 2) {
        const jllm_u32 lo0 = jllm_pack_half2(xr[i].x - jllm_half_to_float(static_cast<jllm_u16>(hi0)),
                                             xr[i].y - jllm_half_to_float(static_cast<jllm_u16>(hi0 >> 16)));
        const jllm_u32 lo1 = jllm_pack_half2(xr[i].z - jllm_half_to_float(static_cast<jllm_u16>(hi1)),
                                             xr[i].w - jllm_half_to_float(static_cast<jllm_u16>(hi1 >> 16)));
        *reinterpret_cast<uint2*>(dst + kBn * kXp + t * kXp + 4 * c4) = make_uint2(lo0, lo1);
      }
    }
  };

  float acc[kMats][kNt][4];
#pragma unroll
  for (int mat = 0; mat < kMats; ++mat) {
#pragma unroll
    for (int j = 0; j < kNt; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mat][j][e] = 0.f;
    }
  }

  load_x(0);
  store_x(0);
  jllm_cp_async_wait<1>();  // super-block 0 is here (this thread's copies)
  __syncthreads();

  // ldmatrix row address of this lane inside an x stage: matrix l / 8 of a pair of n8 tiles is
  // (tile l / 16, k half (l / 8) % 2); row l % 8 of it is token 8 * tile + l % 8.
  const int x_lane = (8 * (lane >> 4) + (lane & 7)) * kXp + 8 * ((lane >> 3) & 1);

#pragma unroll 1
  for (int s = 0; s < kSteps; ++s) {
    const int sb = s >> 3, sub = s & 7;
    if (s + 1 < kSteps) load_x(s + 1);

    const jllm_u16* xb = xs + (s & 1) * kXParts * kBn * kXp + x_lane;
#pragma unroll
    for (int kb = 0; kb < 2; ++kb) {
      const int e = 32 * sub + 16 * kb;
      jllm_u32 a[kMats][4];
#pragma unroll
      for (int mat = 0; mat < kMats; ++mat) {
        const jllm_u8* r0 = raw + (sb & 1) * kStage + (mat * kBm + 16 * warp + g) * kPitch;
        const jllm_u8* r1 = r0 + 8 * kPitch;
        const typename Raw::Scale s0 = Raw::Scale16(r0, e, sb), s1 = Raw::Scale16(r1, e, sb);
        const float2 v00 = Raw::Pair(r0, e + 2 * t4, s0), v10 = Raw::Pair(r1, e + 2 * t4, s1);
        const float2 v01 = Raw::Pair(r0, e + 2 * t4 + 8, s0), v11 = Raw::Pair(r1, e + 2 * t4 + 8, s1);
        a[mat][0] = jllm_pack_half2(v00.x, v00.y);
        a[mat][1] = jllm_pack_half2(v10.x, v10.y);
        a[mat][2] = jllm_pack_half2(v01.x, v01.y);
        a[mat][3] = jllm_pack_half2(v11.x, v11.y);
      }
#pragma unroll
      for (int j = 0; j < kNt; j += 2) {
#pragma unroll
        for (int part = 0; part < kXParts; ++part) {
          jllm_u32 b[4];
          jllm_ldmatrix_x4(b, xb + part * kBn * kXp + 8 * j * kXp + 16 * kb);
          const jllm_u32 b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
#pragma unroll
          for (int mat = 0; mat < kMats; ++mat) {
            jllm_mma_f16_16x8x16(acc[mat][j], a[mat], b0);
            jllm_mma_f16_16x8x16(acc[mat][j + 1], a[mat], b1);
          }
        }
      }
    }

    if (s + 1 < kSteps) store_x(s + 1);
    if (sub == 7 && s + 1 < kSteps) {
      __syncthreads();  // every warp is done with this super-block's stage
      if (sb + 2 < kSb) stage_raw(sb + 2);
      jllm_cp_async_commit();
      jllm_cp_async_wait<1>();  // super-block sb + 1 is here
    }
    __syncthreads();
  }

  // c[e]: row 16w + g (+ 8 for e >= 2), token 8j + 2 t4 (+ 1 for odd e).
#pragma unroll
  for (int j = 0; j < kNt; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int m = m0 + 16 * warp + g + (e >= 2 ? 8 : 0), t = t0 + 8 * j + 2 * t4 + (e & 1);
      if (t > last_token || m >= kN) continue;
      const long long at = static_cast<long long>(t) * kN + m;
      if constexpr (kMats == 2) {
        args.y[at] = jllm_swiglu(acc[0][j][e], acc[1][j][e]);
      } else {
        args.y[at] = kResidual ? acc[0][j][e] + args.residual[at] : acc[0][j][e];
      }
    }
  }
}
