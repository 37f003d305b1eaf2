// Launch geometry the host (lowering) and the kernels must agree on: grid sizes and shared
// memory as functions of a kernel's constants. Compiled by host C++ and by NVRTC.
#pragma once

#include "backends/cuda/device_layout.h"

namespace jllm::cuda::geometry {

constexpr int CeilDiv(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// gemv.cu: x staged once per distinct member type ("slot"): all K columns as f32 plus a float2
// of run sums per 32 columns (or, as int8, less).
constexpr int GemvSlotFloat4(long long k) { return static_cast<int>(k / 4 + k / 64); }
constexpr int GemvSmemBytes(long long k, int slots) { return slots * GemvSlotFloat4(k) * 16; }
// 16-byte units of quant data per 256 elements of a row of ggml type `type` (weight_types.cuh).
constexpr int GemvUnits256(int type) {
  return type == layout::kQ8_0                                              ? 16
         : type == layout::kQ4_K || type == layout::kQ5_K || type == layout::kQ6_K ? 8
         : type == layout::kF32                                             ? 64
                                                                            : 32;  // f16, bf16
}

// gemv.cu's shared-memory ring (JLLM_RING > 0): a step is 32 units of one row; its bytes, copied
// verbatim (a whole number of blocks, 16-byte aligned), are the row's body bytes of 32 units.
constexpr int GemvStepBytes(int type) {
  return static_cast<int>(32LL * layout::BodyBytes(type) * 256 / layout::BlockElems(type) / GemvUnits256(type));
}
// Each warp owns `ring` slots; a slot holds one step of R rows of every matrix an item reads
// (`matrices`: 2 for gate+up, else 1), for the widest type: `stage_bytes` is the largest
// GemvStageBytes over the group's item kinds.
constexpr int GemvStageBytes(int type, int rows, int matrices) { return matrices * rows * GemvStepBytes(type); }
// Behind the slots, one 8-byte mbarrier per slot (used by the bulk copies).
constexpr int GemvRingBytes(int stage_bytes, int ring, int warps) { return (stage_bytes + 8) * ring * warps; }

// gemm.cu: BM weight rows x BN tokens per CTA, K consumed BK = 32 at a time; both tiles f32 in
// shared memory, padded by 4 floats a row (keeps 16-byte alignment, spreads banks), or by 8 for
// the tensor cores (a pitch of 8 mod 32 floats: a fragment's 32 loads hit 32 banks).
inline constexpr int kGemmBk = 32;
constexpr int GemmPad(bool mma) { return mma ? 8 : 4; }
constexpr int GemmSmemBytes(int bm, int bn, bool mma) {
  return kGemmBk * ((bm + GemmPad(mma)) + (bn + GemmPad(mma))) * 4;
}

// attention_decode.cu: one CTA per (kv head, split); partials of [D] acc + max + sum per head.
constexpr int AttentionPartialFloats(int head_dim) { return head_dim + 2; }

// attention_prefill.cu: the CTA's query rows (QT tokens x G heads) plus a K and a V tile of
// 32 positions, all f32, K/V rows padded by one float (conflict-free column reads).
inline constexpr int kAttnKeyTile = 32;
constexpr int AttentionPrefillSmemBytes(int query_rows, int head_dim) {
  return (query_rows * head_dim + 2 * kAttnKeyTile * (head_dim + 1)) * 4;
}

// sample.cu: one CTA of this many threads.
inline constexpr int kSampleThreads = 1024;

}  // namespace jllm::cuda::geometry
