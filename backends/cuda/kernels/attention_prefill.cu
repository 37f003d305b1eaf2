// Prefill attention: causal GQA over the layer's cache for the T tokens of a chunk (their keys
// and values were appended just before), out [T, H·D]. Token t sees positions 0..pos[t].
//
// CTA (kv head, block of QT tokens) holds its QT·G query rows in shared memory and walks the
// positions in tiles of 32, staging each K and V tile once (as f32) for all of its rows; each
// warp owns some rows: lane j scores position tile + j, an online softmax keeps (max, sum), and
// every lane accumulates its D/32 dimensions of V. A plain SIMT kernel (prefill is bound by
// arithmetic); tensor cores are a later variant.
//
// Constants (-D): JLLM_D, JLLM_H, JLLM_HK, JLLM_KV, JLLM_QT, JLLM_NW.
#include "kernel_args.h"
#include "kv_cache.cuh"
#include "launch_geometry.h"

namespace {

using namespace jllm_kernels;
namespace geo = jllm::cuda::geometry;

constexpr int kD = JLLM_D;
constexpr int kH = JLLM_H;
constexpr int kHk = JLLM_HK;
constexpr int kG = kH / kHk;
constexpr int kKv = JLLM_KV;
constexpr int kQt = JLLM_QT;
constexpr int kNw = JLLM_NW;
constexpr int kRows = kQt * kG;                   // query rows per CTA
constexpr int kRowsPerWarp = (kRows + kNw - 1) / kNw;
constexpr int kPer = kD / 32;
constexpr int kTile = geo::kAttnKeyTile;
constexpr int kPitch = kD + 1;

static_assert(kH % kHk == 0 && kD % 32 == 0, "shape");
static_assert(kTile == 32, "one position per lane");

}  // namespace

JLLM_KERNEL(attention_prefill, jllm::cuda::AttentionArgs, 32 * kNw, 1) {
  JLLM_GRID_WAIT();  // everything it reads comes from the kernels before
  JLLM_LAUNCH_DEPENDENTS();
  JLLM_DYNAMIC_SMEM(float, smem);
  float* qs = smem;                    // [kRows][kD]
  float* ks = qs + kRows * kD;         // [kTile][kPitch]
  float* vs = ks + kTile * kPitch;     // [kTile][kPitch]
  __shared__ int max_pos;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int hk = blockIdx.x;
  const int t0 = blockIdx.y * kQt;
  const int n_tok = min(kQt, args.n_tokens - t0);

  for (int i = threadIdx.x; i < kRows * kD; i += blockDim.x) {
    const int r = i / kD, d = i % kD, tl = r / kG, g = r % kG;
    qs[i] = tl < n_tok ? args.q[(static_cast<long long>(t0 + tl) * kH + hk * kG + g) * kD + d] : 0.f;
  }
  if (threadIdx.x == 0) {
    int mp = 0;
    for (int tl = 0; tl < n_tok; ++tl) mp = max(mp, args.pos[t0 + tl]);
    max_pos = mp;
  }
  __syncthreads();

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kPer];
  int my_pos[kRowsPerWarp];
#pragma unroll
  for (int k = 0; k < kRowsPerWarp; ++k) {
    m[k] = JLLM_NEG_INF;
    l[k] = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[k][i] = 0.f;
    const int r = warp + kNw * k;
    my_pos[k] = (r < kRows && r / kG < n_tok) ? args.pos[t0 + r / kG] : -1;  // -1: no row
  }

  for (int base = 0; base <= max_pos; base += kTile) {
    for (int i = threadIdx.x; i < kTile * (kD / 8); i += blockDim.x) {
      const int j = i / (kD / 8), d0 = 8 * (i % (kD / 8));
      const int p = base + j;
      float kv[8], vv[8];
      if (p <= max_pos) {
        KvLoad8<kKv>(KvRow<kKv, kD>(args.k_cache, args.max_ctx, hk, p), d0,
                     KvScalePtr<kKv>(args.k_scales, args.max_ctx, hk, p), kv);
        KvLoad8<kKv>(KvRow<kKv, kD>(args.v_cache, args.max_ctx, hk, p), d0,
                     KvScalePtr<kKv>(args.v_scales, args.max_ctx, hk, p), vv);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) kv[e] = vv[e] = 0.f;
      }
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        ks[j * kPitch + d0 + e] = kv[e];
        vs[j * kPitch + d0 + e] = vv[e];
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kRowsPerWarp; ++k) {
      if (my_pos[k] < base) continue;  // warp-uniform: this row sees none of the tile
      const float* qrow = qs + (warp + kNw * k) * kD;
      const int p = base + lane;
      const bool valid = p <= my_pos[k];
      float s = 0.f;
      for (int d = 0; d < kD; ++d) s = fmaf(qrow[d], ks[lane * kPitch + d], s);
      const float sg = valid ? s * args.scale : JLLM_NEG_INF;
      const float m_new = fmaxf(m[k], jllm_warp_max(sg));
      const float corr = m[k] == JLLM_NEG_INF ? 0.f : expf(m[k] - m_new);
      const float pj = valid ? expf(sg - m_new) : 0.f;
      l[k] = l[k] * corr + jllm_warp_sum(pj);
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[k][i] *= corr;
      m[k] = m_new;
      const int n_valid = min(kTile, my_pos[k] - base + 1);
      for (int j = 0; j < n_valid; ++j) {
        const float w = __shfl_sync(0xffffffffu, pj, j);
#pragma unroll
        for (int i = 0; i < kPer; ++i) acc[k][i] = fmaf(w, vs[j * kPitch + lane + 32 * i], acc[k][i]);
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int k = 0; k < kRowsPerWarp; ++k) {
    if (my_pos[k] < 0) continue;
    const int r = warp + kNw * k, tl = r / kG, g = r % kG;
    float* out = args.out + (static_cast<long long>(t0 + tl) * kH + hk * kG + g) * kD;
#pragma unroll
    for (int i = 0; i < kPer; ++i) out[lane + 32 * i] = acc[k][i] / l[k];
  }
}
