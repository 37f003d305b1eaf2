// What the lowering fits its kernels to: the GPU they will run on. One fact so far — the shared
// memory one CTA may take, static and dynamic together (cudaDevAttrMaxSharedMemoryPerBlockOptin)
// — which bounds the GEMV's and decode attention's rings and the prefill GEMM's token tiles.
// Lowered for sm_90 (227 KiB), 4b's feed-forward GEMV takes 119 KiB: more than an sm_86 or sm_89
// card allows (99 KiB), so the lowering must know the card.
#pragma once

#include <cstdint>
#include <string_view>

namespace jllm::cuda {

inline constexpr int64_t kSmemPerBlockSm90 = 232448;  // sm_90, sm_100: 227 KiB
inline constexpr int64_t kSmemPerBlockSm80 = 166912;  // sm_80, sm_87 (the Orin): 163 KiB
inline constexpr int64_t kSmemPerBlockSm86 = 101376;  // sm_86, sm_89, sm_120 and unknown ones: 99 KiB

struct LoweringTarget {
  int64_t smem_per_block = kSmemPerBlockSm90;
};

// The target of an NVRTC architecture name ("sm_86", "sm_90a"; jllm-compile --arch): its compute
// capability's CTA shared memory (an unknown one, or a malformed name, gets the smallest).
LoweringTarget TargetForArch(std::string_view arch);

}  // namespace jllm::cuda
