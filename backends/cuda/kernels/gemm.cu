// Prefill matrix product: y[t] = W · x[t] (+ residual[t]) for the T tokens of a chunk; W one
// matrix in the device layout, x [T, K], y [T, N].
//
// A plain register-tiled kernel: a CTA computes BM weight rows x BN tokens. K is consumed 32
// columns at a time: the W tile is dequantized into shared memory (each weight is read from
// memory once per CTA, and the CTAs of one row tile run side by side, so it comes from L2 for
// the others), the x tile is copied beside it, and every thread accumulates TM x TN outputs.
// Prefill is bound by arithmetic, not by weight bytes; tensor cores are a later variant.
//
// Constants (-D): JLLM_TYPE, JLLM_K, JLLM_N, JLLM_BM, JLLM_BN, JLLM_TM, JLLM_TN, JLLM_RESIDUAL.
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
constexpr int kBk = geo::kGemmBk;
constexpr int kThreadsM = kBm / kTm, kThreadsN = kBn / kTn;
constexpr int kThreads = kThreadsM * kThreadsN;
constexpr int kWs = kBm + 4;  // row pitch of the W tile (floats)
constexpr int kXs = kBn + 4;
constexpr long long kRowStride = jllm::cuda::layout::RowStride(kType, kK);

static_assert(kK % 256 == 0, "GEMM columns are whole groups of 256");
static_assert(kBm % kTm == 0 && kBn % kTn == 0 && kTm % 4 == 0 && kTn % 4 == 0, "tile shape");
static_assert(kThreads % 32 == 0 && kThreads <= 1024, "threads");
static_assert((kBm * kBk / 8) % kThreads == 0, "W tile groups per thread");
static_assert((kBn * kBk / 4) % kThreads == 0, "x tile float4 per thread");

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

  float acc[kTm][kTn];
#pragma unroll
  for (int i = 0; i < kTm; ++i) {
#pragma unroll
    for (int j = 0; j < kTn; ++j) acc[i][j] = 0.f;
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
      for (int i = 0; i < 8; ++i) ws[(8 * c8 + i) * kWs + m] = v[i];
    }
    // x tile, transposed to [k][token].
    for (int f = tid; f < kBn * (kBk / 4); f += kThreads) {
      const int t = f / (kBk / 4), c4 = f % (kBk / 4);
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (t0 + t < args.n_tokens) {
        v = *reinterpret_cast<const float4*>(args.x + static_cast<long long>(t0 + t) * kK + k0 + 4 * c4);
      }
      xs[(4 * c4 + 0) * kXs + t] = v.x;
      xs[(4 * c4 + 1) * kXs + t] = v.y;
      xs[(4 * c4 + 2) * kXs + t] = v.z;
      xs[(4 * c4 + 3) * kXs + t] = v.w;
    }
    __syncthreads();
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
    __syncthreads();
  }

#pragma unroll
  for (int j = 0; j < kTn; ++j) {
    const int t = t0 + tn * kTn + j;
    if (t >= args.n_tokens) continue;
#pragma unroll
    for (int i = 0; i < kTm; ++i) {
      const int m = m0 + tm * kTm + i;
      if (m >= kN) continue;
      const long long at = static_cast<long long>(t) * kN + m;
      args.y[at] = kResidual ? acc[i][j] + args.residual[at] : acc[i][j];
    }
  }
}
