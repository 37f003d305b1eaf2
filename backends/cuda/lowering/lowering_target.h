// What the lowering fits its kernels to: the GPU they will run on. Two facts:
//  - the shared memory one CTA may take, static and dynamic together
//    (cudaDevAttrMaxSharedMemoryPerBlockOptin), which bounds the GEMV's and decode attention's
//    rings and the prefill GEMM's token tiles. Lowered for sm_90 (227 KiB), 4b's feed-forward
//    GEMV takes 119 KiB: more than an sm_86 or sm_89 card allows (99 KiB);
//  - its SMs, which the heuristics that fill a GPU count with: a decode GEMV's K split (enough
//    items for every warp) and the prefill GEMM's token tile and gate+up pairing (enough CTAs).
//    The H200's 132 split 0.6b's attention projections in three; on the Orin Nano's 8 every
//    CTA has dozens of items already, and a split would only add its ticket round trip.
#pragma once

#include <cstdint>
#include <string_view>

namespace jllm::cuda {

inline constexpr int64_t kSmemPerBlockSm90 = 232448;  // sm_90, sm_100: 227 KiB
inline constexpr int64_t kSmemPerBlockSm80 = 166912;  // sm_80, sm_87 (the Orin): 163 KiB
inline constexpr int64_t kSmemPerBlockSm86 = 101376;  // sm_86, sm_89, sm_120 and unknown ones: 99 KiB

inline constexpr int kSmsH200 = 132;      // sm_90 (H100 SXM and H200), and architectures naming no one GPU
inline constexpr int kSmsA100 = 108;      // sm_80
inline constexpr int kSmsOrinNano = 8;    // sm_87: the Jetson Orin Nano (and NX; AGX Orin has 16)

struct LoweringTarget {
  int64_t smem_per_block = kSmemPerBlockSm90;
  int sms = kSmsH200;
  bool tensor_copies = true;  // the copy engine takes tensor maps (sm_90 on: the GEMV's JLLM_TMA)
};

// The target of an NVRTC architecture name ("sm_86", "sm_90a"; jllm-compile --arch): its compute
// capability's CTA shared memory (an unknown one, or a malformed name, gets the smallest) and the
// SMs of the GPU the architecture means here (the backend lowers with the device's own count at
// load: a GPU with other counts compiles its kernels then instead of taking the plan's CUBINs).
LoweringTarget TargetForArch(std::string_view arch);

// The target a device identity names ("NVIDIA H200 (sm_90, 132 SMs)", DeviceIdentity): its
// architecture's, with the SMs it gives; the default where it names no architecture.
LoweringTarget TargetForDevice(std::string_view identity);

}  // namespace jllm::cuda
