// The in-step trace (JLLM_TRACE=1, a measuring aid): kernels built with JLLM_TRACE=<tag> take the
// step's trace buffer as a second argument and each CTA fills one record of it — when it entered,
// passed its grid wait, reached its mark (the GEMV: x staged), had streamed (the GEMV: its last
// warp's last unit step) and left — with %globaltimer nanoseconds. Compiled by host C++ (the runner reads the records) and by NVRTC (jllm_common.cuh
// writes them); includes no header.
//
// Buffer: word 0 counts the records taken (a CTA takes one with an atomic add), word 1 is the
// capacity in records, record r is the kWords words at kWords · (r + 1).
#pragma once

namespace jllm::cuda::trace {

inline constexpr int kWords = 8;  // 64-bit words a record (and the header) takes
// Word of a record; a time 0: never reached. kSm: the SM the CTA ran on (%smid), which says
// whether a late CTA waited for the SM's previous CTA to leave.
enum Field { kId, kEntry, kWait, kMark, kExit, kStreamed, kSm };
// kId: the kernel's tag (its spec's index + 1) << kTagShift | blockIdx.y << kYShift | blockIdx.x.
inline constexpr int kTagShift = 40, kYShift = 20;

}  // namespace jllm::cuda::trace
