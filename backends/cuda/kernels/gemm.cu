// Prefill matrix product: y[t] = W · x[t] (+ residual[t]) for the T tokens of a chunk; W one
// matrix in the device layout, x [T, K], y [T, N].
//
// A plain register-tiled kernel: a CTA computes BM weight rows x BN tokens. K is consumed 32
// columns at a time: the W tile is dequantized into shared memory (each weight is read from
// memory once per CTA, and the CTAs of one row tile run side by side, so it comes from L2 for
// the others), the x tile is copied beside it, and every thread accumulates TM x TN outputs
// with f32 FMAs (MMA 0) — or, MMA 1, every warp a 32 x 32 tile of the outputs on the tensor
// cores (mma.sync m16n8k8, tf32 in, f32 accumulate; sm_80+): the tiles are rounded to tf32 as
// they are staged. Prefill is bound by arithmetic, not by weight bytes.
//
// Constants (-D): JLLM_TYPE, JLLM_K, JLLM_N, JLLM_BM, JLLM_BN, JLLM_TM, JLLM_TN, JLLM_RESIDUAL,
// JLLM_MMA.
#include "kernel_args.h"
#include "launch_geometry.h"
#include "weight_types.cuh"

namespace {

using namespace jllm_kernels;
namespace geo = jllm::cuda::geometry;

constexpr int kType = JLLM_TYPE;
constexpr int kK = JLLM_K;
constexpr int kN = JLLM_N;
constexpr int kBm = JLLM_BM;
constexpr int kBn = JLLM_BN;
constexpr int kTm = JLLM_TM;
constexpr int kTn = JLLM_TN;
constexpr bool kResidual = JLLM_RESIDUAL;
constexpr bool kMma = JLLM_MMA;
constexpr int kBk = geo::kGemmBk;
constexpr int kThreadsM = kBm / kTm, kThreadsN = kBn / kTn;
constexpr int kThreads = kThreadsM * kThreadsN;
constexpr int kWs = kBm + geo::GemmPad(kMma);  // row pitch of the W tile (floats)
constexpr int kXs = kBn + geo::GemmPad(kMma);
// MMA: warps in a (BM/32) x (BN/32) grid, each 2 x 4 tiles of m16 x n8.
constexpr int kWarpsM = kBm / 32, kWarpsN = kBn / 32;
constexpr long long kRowStride = jllm::cuda::layout::RowStride(kType, kK);

static_assert(kK % 256 == 0, "GEMM columns are whole groups of 256");
static_assert(kBm % kTm == 0 && kBn % kTn == 0 && kTm % 4 == 0 && kTn % 4 == 0, "tile shape");
static_assert(kThreads % 32 == 0 && kThreads <= 1024, "threads");
static_assert((kBm * kBk / 8) % kThreads == 0, "W tile groups per thread");
static_assert((kBn * kBk / 4) % kThreads == 0, "x tile float4 per thread");
static_assert(!kMma || (kBm % 32 == 0 && kBn % 32 == 0 && kWarpsM * kWarpsN * 32 == kThreads),
              "MMA: one warp per 32 x 32 output tile");

// A staged tile value: f32, or for the tensor cores already rounded to tf32.
__device__ __forceinline__ float Staged(float v) {
  if constexpr (kMma) {
    return __uint_as_float(jllm_to_tf32(v));
  } else {
    return v;
  }
}

}  // namespace

JLLM_KERNEL(gemm, jllm::cuda::GemmArgs, kThreads, 1) {
  JLLM_GRID_WAIT();  // everything it reads comes from the kernels before
  JLLM_LAUNCH_DEPENDENTS();
  JLLM_DYNAMIC_SMEM(float, smem);
  float* ws = smem;                 // [kBk][kWs]
  float* xs = smem + kBk * kWs;     // [kBk][kXs]
  const int m0 = blockIdx.x * kBm;
  const int t0 = blockIdx.y * kBn;
  const int tid = threadIdx.x;
  const int tn = tid % kThreadsN, tm = tid / kThreadsN;
  const jllm_u8* w = static_cast<const jllm_u8*>(args.w);

  float acc[kMma ? 1 : kTm][kMma ? 1 : kTn];  // FMA path
  float mma_acc[kMma ? 2 : 1][kMma ? 4 : 1][4];  // tensor-core path
#pragma unroll
  for (int i = 0; i < (kMma ? 1 : kTm); ++i) {
#pragma unroll
    for (int j = 0; j < (kMma ? 1 : kTn); ++j) acc[i][j] = 0.f;
  }
#pragma unroll
  for (int i = 0; i < (kMma ? 2 : 1); ++i) {
#pragma unroll
    for (int j = 0; j < (kMma ? 4 : 1); ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) mma_acc[i][j][e] = 0.f;
    }
  }

#pragma unroll 1
  for (int k0 = 0; k0 < kK; k0 += kBk) {
    // W tile: kBm rows x 4 groups of 8 columns; consecutive threads take consecutive rows.
    for (int g = tid; g < kBm * (kBk / 8); g += kThreads) {
      const int m = g % kBm, c8 = g / kBm;
      float v[8];
      if (m0 + m < kN) {
        Dequant8<kType, kK>(w + (m0 + m) * kRowStride, k0 + 8 * c8, v);
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = 0.f;
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) ws[(8 * c8 + i) * kWs + m] = Staged(v[i]);
    }
    // x tile, transposed to [k][token].
    for (int f = tid; f < kBn * (kBk / 4); f += kThreads) {
      const int t = f / (kBk / 4), c4 = f % (kBk / 4);
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (t0 + t < args.n_tokens) {
        v = *reinterpret_cast<const float4*>(args.x + static_cast<long long>(t0 + t) * kK + k0 + 4 * c4);
      }
      xs[(4 * c4 + 0) * kXs + t] = Staged(v.x);
      xs[(4 * c4 + 1) * kXs + t] = Staged(v.y);
      xs[(4 * c4 + 2) * kXs + t] = Staged(v.z);
      xs[(4 * c4 + 3) * kXs + t] = Staged(v.w);
    }
    __syncthreads();
    if constexpr (kMma) {
      // Fragments (jllm_common.cuh): rows of A are weight rows, columns of B tokens; with a
      // pitch of 8 (mod 32) floats the 32 lanes' loads hit 32 different banks.
      const int lane = tid & 31, g = lane >> 2, t4 = lane & 3;
      const int wm = (tid >> 5) % kWarpsM, wn = (tid >> 5) / kWarpsM;
#pragma unroll
      for (int kk = 0; kk < kBk; kk += 8) {
        const float* w0 = ws + (kk + t4) * kWs + 32 * wm + g;
        const float* w1 = w0 + 4 * kWs;
        const float* x0 = xs + (kk + t4) * kXs + 32 * wn + g;
        const float* x1 = x0 + 4 * kXs;
        jllm_u32 a[2][4], b[4][2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          a[i][0] = __float_as_uint(w0[16 * i]);
          a[i][1] = __float_as_uint(w0[16 * i + 8]);
          a[i][2] = __float_as_uint(w1[16 * i]);
          a[i][3] = __float_as_uint(w1[16 * i + 8]);
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          b[j][0] = __float_as_uint(x0[8 * j]);
          b[j][1] = __float_as_uint(x1[8 * j]);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) jllm_mma_tf32_16x8x8(mma_acc[i][j], a[i], b[j]);
        }
      }
    } else {
#pragma unroll 4
      for (int kk = 0; kk < kBk; ++kk) {
        float a[kTm], b[kTn];
#pragma unroll
        for (int i = 0; i < kTm; i += 4) {
          const float4 v = *reinterpret_cast<const float4*>(ws + kk * kWs + tm * kTm + i);
          a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < kTn; j += 4) {
          const float4 v = *reinterpret_cast<const float4*>(xs + kk * kXs + tn * kTn + j);
          b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < kTm; ++i) {
#pragma unroll
          for (int j = 0; j < kTn; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
      }
    }
    __syncthreads();
  }

  auto store = [&](int m, int t, float v) {
    if (t >= args.n_tokens || m >= kN) return;
    const long long at = static_cast<long long>(t) * kN + m;
    args.y[at] = kResidual ? v + args.residual[at] : v;
  };
  if constexpr (kMma) {
    const int lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int wm = (tid >> 5) % kWarpsM, wn = (tid >> 5) / kWarpsM;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int m = m0 + 32 * wm + 16 * i + g, t = t0 + 32 * wn + 8 * j + 2 * t4;
        store(m, t, mma_acc[i][j][0]);
        store(m, t + 1, mma_acc[i][j][1]);
        store(m + 8, t, mma_acc[i][j][2]);
        store(m + 8, t + 1, mma_acc[i][j][3]);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < kTn; ++j) {
#pragma unroll
      for (int i = 0; i < kTm; ++i) store(m0 + tm * kTm + i, t0 + tn * kTn + j, acc[i][j]);
    }
  }
}
