// Decode matrix-vector product: y_m = W_m · x for one token, for a group of up to three weight
// matrices that share x (a plain matmul, the QKV triple with mixed types, gate+up), with the
// fusions of ir's MatMulAttrs written out as steps of the kernel:
//   prologue  NORM:     x is RMS-normed (and scaled by gamma) while it is staged
//   body      every warp streams R rows of one member, unit by unit (weight_types.cuh)
//   epilogue  RESIDUAL: y += residual;  SWIGLU: y = silu(W_gate·x) · (W_up·x)
// Memory-bound: every weight byte is read once, with 16-byte streaming loads, into registers.
//
// Work split. The work is a set of groups — (member, column split) pairs, or one (gate, up)
// group per split with SWIGLU — each cut into tiles of NW·R rows. CTAs are persistent: the
// grid (sized to what the GPU holds at once, by the host) is shared among the groups in
// proportion to their tiles; a CTA stages its group's slice of x once, in the member's unit
// order (conflict-free reads), then takes every `count`-th tile of the group. For a tile it
// issues the loads of kBatch unit steps of its rows before using any, and the next tile's first
// loads before finishing the current one, so loads stay in flight across the whole matrix. With KSPLIT > 1 the CTAs of a
// tile's splits write partial sums; the last to finish (a ticket counter) adds them in a fixed
// order and runs the epilogue, so results are deterministic.
//
// Constants (-D): JLLM_K, JLLM_NM (members), JLLM_T<m> / JLLM_N<m> (ggml type id and rows of
// member m), JLLM_R, JLLM_NW, JLLM_KSPLIT, JLLM_NORM, JLLM_RESIDUAL, JLLM_SWIGLU.
#include "kernel_args.h"
#include "launch_geometry.h"
#include "weight_types.cuh"

namespace {

using namespace jllm_kernels;
namespace geo = jllm::cuda::geometry;

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

constexpr int kBlocks256 = kK / 256;  // 256-element column groups
constexpr int kSplitBlocks = geo::GemvSplitGroups(kK, kKsplit);  // most in one split
constexpr int kMembersPerGroup = kSwiglu ? 2 : 1;                 // matrices a tile reads
constexpr int kMemberGroups = kSwiglu ? 1 : kNm;                  // groups per split
constexpr int kGroups = kMemberGroups * kKsplit;
constexpr int Tiles(int m) { return geo::GemvTiles(kRows[m], kNw, kR); }
constexpr int TileBegin(int m) { return m == 0 ? 0 : TileBegin(m - 1) + Tiles(m - 1); }  // ticket index
constexpr int RowBegin(int m) { return m == 0 ? 0 : RowBegin(m - 1) + kRows[m - 1]; }
constexpr int kTotalRows = RowBegin(kNm);
constexpr int TotalGroupTiles() {
  int t = 0;
  for (int m = 0; m < kMemberGroups; ++m) t += Tiles(m);
  return t * kKsplit;
}
constexpr int kBatch = 2;  // unit steps whose loads are in flight together (more spill registers)

static_assert(kK % 256 == 0, "GEMV columns are whole groups of 256");
static_assert(kNm >= 1 && kNm <= 3, "1..3 members");
static_assert(!kSwiglu || (kNm == 2 && kType[0] == kType[1] && kRows[0] == kRows[1]),
              "SWIGLU needs gate and up of one type and height");
static_assert(!kNorm || kKsplit == 1, "the RMSNorm prologue needs every column in one CTA");
static_assert(!kResidual || kNm == 1, "the residual epilogue is for a single matmul");
static_assert(kKsplit >= 1 && kKsplit <= kBlocks256, "KSPLIT in 1..K/256");

// The tiles of member-group `mg` and split `split`, from CTA `first` on, every `stride`-th.
template <int kM>
__device__ __forceinline__ void RunGroup(const jllm::cuda::GemvArgs& args, int split, int first,
                                         int stride, float4* xs) {
  constexpr int T = kType[kM];
  using W = WType<T>;
  using Frag = typename W::Frag;
  constexpr int kUnitsPerGroup = W::kUnits256;
  constexpr int kMaxUnits = kSplitBlocks * kUnitsPerGroup;
  constexpr jllm_i64 kRowStride = jllm::cuda::layout::RowStride(T, kK);
  constexpr int kSteps = (kMaxUnits + 31) / 32;

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g0 = split * kBlocks256 / kKsplit, g1 = (split + 1) * kBlocks256 / kKsplit;
  const int u0 = g0 * kUnitsPerGroup, n_units = (g1 - g0) * kUnitsPerGroup;
  const jllm_u8* wbase[kMembersPerGroup];
#pragma unroll
  for (int j = 0; j < kMembersPerGroup; ++j) wbase[j] = static_cast<const jllm_u8*>(args.w[kM + j]);

  // Issues the loads of steps [s0, s0 + kBatch) of the warp's rows starting at row0.
  Frag f[kBatch][kMembersPerGroup][kR];
  auto load = [&](int row0, int s0) {
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int ul = lane + 32 * (s0 + b);
#pragma unroll
      for (int j = 0; j < kMembersPerGroup; ++j) {
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (s0 + b < kSteps && ul < n_units && row0 + r < kRows[kM]) {
            f[b][j][r] = W::Load(wbase[j] + (row0 + r) * kRowStride, u0 + ul);
          }
        }
      }
    }
  };
  if (first * kTileRows < kRows[kM]) load(first * kTileRows + warp * kR, 0);  // in flight while x is staged

  // Stage this group's columns of x in unit order, normalized if asked (once per CTA).
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

  for (int tile = first; tile * kTileRows < kRows[kM]; tile += stride) {
    const int row0 = tile * kTileRows + warp * kR;  // member-local
    float acc[kMembersPerGroup][kR];
#pragma unroll
    for (int j = 0; j < kMembersPerGroup; ++j) {
#pragma unroll
      for (int r = 0; r < kR; ++r) acc[j][r] = 0.f;
    }
#pragma unroll 1
    for (int s0 = 0; s0 < kSteps; s0 += kBatch) {
      if (s0 > 0) load(row0, s0);
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int ul = lane + 32 * (s0 + b);  // unit within this split
        if (s0 + b >= kSteps || ul >= n_units) continue;
        float4 xv[W::kParts];
#pragma unroll
        for (int p = 0; p < W::kParts; ++p) xv[p] = xs[p * kMaxUnits + ul];
#pragma unroll
        for (int j = 0; j < kMembersPerGroup; ++j) {
#pragma unroll
          for (int r = 0; r < kR; ++r) {
            if (row0 + r < kRows[kM]) {
              acc[j][r] += UnitDot<T, kK>(f[b][j][r], xv, u0 + ul, wbase[j] + (row0 + r) * kRowStride);
            }
          }
        }
      }
    }
    // The next tile's first loads go out before this tile's reductions and stores.
    const int next = tile + stride;
    if (next * kTileRows < kRows[kM]) load(next * kTileRows + warp * kR, 0);

    float sums[kMembersPerGroup][kR];
#pragma unroll
    for (int j = 0; j < kMembersPerGroup; ++j) {
#pragma unroll
      for (int r = 0; r < kR; ++r) sums[j][r] = jllm_warp_sum(acc[j][r]);
    }
    auto epilogue = [&](int row, const float (&v)[kMembersPerGroup]) {
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
            float v[kMembersPerGroup];
#pragma unroll
            for (int j = 0; j < kMembersPerGroup; ++j) v[j] = sums[j][r];
            epilogue(row0 + r, v);
          }
        }
      }
    } else {
      // Partial sums of this split; the tile's last split to finish adds them in order.
      if (lane == 0) {
#pragma unroll
        for (int j = 0; j < kMembersPerGroup; ++j) {
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
      if (ticket == kKsplit - 1) {
        __threadfence();
        for (int i = threadIdx.x; i < kTileRows; i += kThreads) {
          const int row = tile * kTileRows + i;
          if (row >= kRows[kM]) continue;
          float v[kMembersPerGroup];
#pragma unroll
          for (int j = 0; j < kMembersPerGroup; ++j) {
            float part[kKsplit];
#pragma unroll
            for (int k = 0; k < kKsplit; ++k) {
              part[k] = jllm_load_l2_f32(args.partials + k * kTotalRows + RowBegin(kM + j) + row);
            }
            float t = 0.f;
#pragma unroll
            for (int k = 0; k < kKsplit; ++k) t += part[k];
            v[j] = t;
          }
          epilogue(row, v);
        }
        if (threadIdx.x == 0) args.counters[tile_id] = 0;
      }
    }
  }
}

}  // namespace

JLLM_KERNEL(gemv, jllm::cuda::GemvArgs, kThreads, 2) {
  JLLM_DYNAMIC_SMEM(float4, xs);
  // Group g (member-group g / KSPLIT, split g % KSPLIT) gets CTAs [begin(g), begin(g + 1)):
  // one each, the rest in proportion to its tiles. The host launches at least kGroups CTAs.
  const int G = gridDim.x, b = blockIdx.x;
  constexpr int kTotal = TotalGroupTiles();
  int g = 0, prefix = 0, begin = 0, end = 0;
  for (; g < kGroups; ++g) {
    const int tiles = Tiles(g / kKsplit);
    begin = g + static_cast<int>(static_cast<long long>(G - kGroups) * prefix / kTotal);
    end = g + 1 + static_cast<int>(static_cast<long long>(G - kGroups) * (prefix + tiles) / kTotal);
    if (b < end) break;
    prefix += tiles;
  }
  if (g >= kGroups) return;
  const int mg = g / kKsplit, split = g % kKsplit;
  const int first = b - begin, stride = end - begin;
  if (mg == 0) {
    RunGroup<0>(args, split, first, stride, xs);
  } else if (mg == 1) {
    if constexpr (kMemberGroups >= 2) RunGroup<1>(args, split, first, stride, xs);
  } else {
    if constexpr (kMemberGroups >= 3) RunGroup<2>(args, split, first, stride, xs);
  }
}
