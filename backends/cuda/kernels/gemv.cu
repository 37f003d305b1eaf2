// Decode matrix-vector product: y_m = W_m · x for one token, for a group of up to three weight
// matrices that share x (a plain matmul, the QKV triple with mixed types, gate+up), with the
// fusions of ir's MatMulAttrs written out as steps of the kernel:
//   prologue  NORM:     x is RMS-normed (and scaled by gamma) while it is staged
//   body      every warp streams R rows of one member, unit by unit (weight_types.cuh)
//   epilogue  RESIDUAL: y += residual;  SWIGLU: y = silu(W_gate·x) · (W_up·x)
// Memory-bound: every weight byte is read once, with 16-byte streaming loads, into registers.
//
// Work split. A CTA (NW warps) computes one tile of NW·R rows of one member (with SWIGLU, the
// same rows of gate and up). x — or, with KSPLIT > 1, this CTA's 1/KSPLIT slice of the columns —
// is staged once per CTA in shared memory in the member's unit order (conflict-free reads).
// With KSPLIT > 1 the CTAs of a tile write partial sums; the last of them to finish (a ticket
// counter) adds them in a fixed order and runs the epilogue, so results are deterministic.
//
// Constants (-D): JLLM_K, JLLM_NM (members), JLLM_T<m> / JLLM_N<m> (ggml type id and rows of
// member m), JLLM_R, JLLM_NW, JLLM_KSPLIT, JLLM_NORM, JLLM_RESIDUAL, JLLM_SWIGLU.
#include "kernel_args.h"
#include "launch_geometry.h"
#include "weight_types.cuh"

namespace {

using namespace jllm_kernels;

constexpr int kK = JLLM_K;
constexpr int kNm = JLLM_NM;
constexpr int kR = JLLM_R;
constexpr int kNw = JLLM_NW;
constexpr int kThreads = 32 * kNw;
constexpr int kKsplit = JLLM_KSPLIT;
constexpr bool kNorm = JLLM_NORM;
constexpr bool kResidual = JLLM_RESIDUAL;
constexpr bool kSwiglu = JLLM_SWIGLU;
constexpr int kTileRows = kNw * kR;

#ifndef JLLM_T1
#define JLLM_T1 JLLM_T0
#define JLLM_N1 0
#endif
#ifndef JLLM_T2
#define JLLM_T2 JLLM_T0
#define JLLM_N2 0
#endif
constexpr int kType[3] = {JLLM_T0, JLLM_T1, JLLM_T2};
constexpr int kRows[3] = {JLLM_N0, JLLM_N1, JLLM_N2};

constexpr int kBlocks256 = kK / 256;                       // 256-element column groups
constexpr int kSplitBlocks = jllm::cuda::geometry::GemvSplitGroups(kK, kKsplit);  // most in a split
constexpr int Tiles(int m) { return jllm::cuda::geometry::GemvTiles(kRows[m], kNw, kR); }
// First tile of member m; with SWIGLU one tile covers gate and up rows alike.
constexpr int TileBegin(int m) { return m == 0 ? 0 : kSwiglu ? Tiles(0) : TileBegin(m - 1) + Tiles(m - 1); }
constexpr int RowBegin(int m) { return m == 0 ? 0 : RowBegin(m - 1) + kRows[m - 1]; }
constexpr int kTotalRows = RowBegin(kNm);

static_assert(kK % 256 == 0, "GEMV columns are whole groups of 256");
static_assert(kNm >= 1 && kNm <= 3, "1..3 members");
static_assert(!kSwiglu || (kNm == 2 && kType[0] == kType[1] && kRows[0] == kRows[1]),
              "SWIGLU needs gate and up of one type and height");
static_assert(!kNorm || kKsplit == 1, "the RMSNorm prologue needs every column in one CTA");
static_assert(!kResidual || kNm == 1, "the residual epilogue is for a single matmul");
static_assert(kKsplit >= 1 && kKsplit <= kBlocks256, "KSPLIT in 1..K/256");

// The rows of tile `tile` of member m (member-local), computed by warp `warp`.
template <int kM>
__device__ __forceinline__ void RunTile(const jllm::cuda::GemvArgs& args, int tile, float4* xs,
                                        float* red) {
  constexpr int T = kType[kM];
  using W = WType<T>;
  constexpr int kUnitsPerGroup = W::kUnits256;
  constexpr int kMaxUnits = kSplitBlocks * kUnitsPerGroup;
  constexpr jllm_i64 kRowStride = jllm::cuda::layout::RowStride(T, kK);
  constexpr int kMembersHere = kSwiglu ? 2 : 1;  // matrices this tile reads

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int split = blockIdx.y;
  const int g0 = split * kBlocks256 / kKsplit, g1 = (split + 1) * kBlocks256 / kKsplit;
  const int u0 = g0 * kUnitsPerGroup, n_units = (g1 - g0) * kUnitsPerGroup;
  const int row0 = tile * kTileRows + warp * kR;  // member-local

  // Stage this CTA's columns of x in unit order, normalized if asked.
  float scale = 1.0f;
  if constexpr (kNorm) {
    __shared__ double scratch[32];
    scale = jllm_rms_scale(jllm_sum_squares(args.x, kK, scratch), kK, args.eps);
  }
  {
    const int e0 = g0 * 256, n = (g1 - g0) * 256;
    for (int i = 4 * threadIdx.x; i < n; i += 4 * kThreads) {
      float4 v = *reinterpret_cast<const float4*>(args.x + e0 + i);
      if constexpr (kNorm) {
        const float4 g = *reinterpret_cast<const float4*>(args.gamma + e0 + i);
        v = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w);
      }
      const int e = e0 + i;
      xs[W::PartOf(e) * kMaxUnits + (W::UnitOf(e) - u0)] = v;
    }
  }
  __syncthreads();

  float acc[kMembersHere][kR];
#pragma unroll
  for (int j = 0; j < kMembersHere; ++j) {
#pragma unroll
    for (int r = 0; r < kR; ++r) acc[j][r] = 0.f;
  }
  const jllm_u8* wbase[kMembersHere];
#pragma unroll
  for (int j = 0; j < kMembersHere; ++j) wbase[j] = static_cast<const jllm_u8*>(args.w[kM + j]);

  constexpr int kSteps = (kMaxUnits + 31) / 32;
  using Frag = typename W::Frag;
  Frag cur[kMembersHere][kR], nxt[kMembersHere][kR];
  auto load = [&](int s, Frag (&f)[kMembersHere][kR]) {
    const int u = u0 + lane + 32 * s;
#pragma unroll
    for (int j = 0; j < kMembersHere; ++j) {
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (lane + 32 * s < n_units && row0 + r < kRows[kM]) {
          f[j][r] = W::Load(wbase[j] + (row0 + r) * kRowStride, u);
        }
      }
    }
  };
  load(0, cur);
#pragma unroll 1
  for (int s = 0; s < kSteps; ++s) {
    if (s + 1 < kSteps) load(s + 1, nxt);
    const int ul = lane + 32 * s;  // unit within this split
    if (ul < n_units) {
      float4 xv[W::kParts];
#pragma unroll
      for (int p = 0; p < W::kParts; ++p) xv[p] = xs[p * kMaxUnits + ul];
#pragma unroll
      for (int j = 0; j < kMembersHere; ++j) {
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (row0 + r < kRows[kM]) {
            acc[j][r] += UnitDot<T, kK>(cur[j][r], xv, u0 + ul, wbase[j] + (row0 + r) * kRowStride);
          }
        }
      }
    }
    if (s + 1 < kSteps) {
#pragma unroll
      for (int j = 0; j < kMembersHere; ++j) {
#pragma unroll
        for (int r = 0; r < kR; ++r) cur[j][r] = nxt[j][r];
      }
    }
  }

  // Row sums; lane 0 of each warp holds them.
  float sums[kMembersHere][kR];
#pragma unroll
  for (int j = 0; j < kMembersHere; ++j) {
#pragma unroll
    for (int r = 0; r < kR; ++r) sums[j][r] = jllm_warp_sum(acc[j][r]);
  }

  auto epilogue = [&](int row, const float (&v)[kMembersHere]) {
    if constexpr (kSwiglu) {
      const float g = v[0];
      args.y[0][row] = g / (1.0f + expf(-g)) * v[1];
    } else if constexpr (kResidual) {
      args.y[kM][row] = v[0] + args.residual[row];
    } else {
      args.y[kM][row] = v[0];
    }
  };

  if constexpr (kKsplit == 1) {
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (row0 + r < kRows[kM]) {
          float v[kMembersHere];
#pragma unroll
          for (int j = 0; j < kMembersHere; ++j) v[j] = sums[j][r];
          epilogue(row0 + r, v);
        }
      }
    }
  } else {
    // Partial sums of this split, then the tile's last CTA adds the KSPLIT partials in order.
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < kMembersHere; ++j) {
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (row0 + r < kRows[kM]) {
            args.partials[split * kTotalRows + RowBegin(kM + j) + row0 + r] = sums[j][r];
          }
        }
      }
    }
    __threadfence();
    __syncthreads();
    __shared__ unsigned ticket;
    const int tile_id = TileBegin(kM) + tile;
    if (threadIdx.x == 0) ticket = atomicAdd(&args.counters[tile_id], 1u);
    __syncthreads();
    if (ticket != kKsplit - 1) return;
    __threadfence();
    for (int i = threadIdx.x; i < kTileRows; i += kThreads) {
      const int row = tile * kTileRows + i;
      if (row >= kRows[kM]) continue;
      float v[kMembersHere];
#pragma unroll
      for (int j = 0; j < kMembersHere; ++j) {
        float t = 0.f;
        for (int k = 0; k < kKsplit; ++k) {
          t += const_cast<volatile float*>(args.partials)[k * kTotalRows + RowBegin(kM + j) + row];
        }
        v[j] = t;
      }
      epilogue(row, v);
    }
    if (threadIdx.x == 0) args.counters[tile_id] = 0;
  }
  (void)red;
}

}  // namespace

JLLM_KERNEL(gemv, jllm::cuda::GemvArgs, kThreads, 1) {
  JLLM_DYNAMIC_SMEM(float4, xs);
  const int t = blockIdx.x;
  if (kNm == 1 || kSwiglu || t < TileBegin(1)) {
    RunTile<0>(args, t, xs, nullptr);
  } else if (kNm == 2 || t < TileBegin(2)) {
    if constexpr (kNm >= 2 && !kSwiglu) RunTile<1>(args, t - TileBegin(1), xs, nullptr);
  } else {
    if constexpr (kNm >= 3) RunTile<2>(args, t - TileBegin(2), xs, nullptr);
  }
}
