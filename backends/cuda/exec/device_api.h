// What the CUDA executor needs from a device, as an interface without CUDA headers: memory,
// copies, kernel loading and launch, stream-ordered capture and replay (a CUDA graph), events.
//
// backends/cuda/cudart/ implements it with the CUDA runtime; tests/cuda/emu/ implements it on
// the CPU, compiling the same kernel sources with g++ and running each CUDA thread as a host
// thread, so that the executor and every kernel are tested where there is no GPU (CI).
//
// All operations are ordered on one stream; Synchronize waits for them and reports a fault of
// any of them (naming what was running, as far as the device can tell).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/lowering/kernel_spec.h"

namespace jllm::cuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct DeviceProperties {
  std::string name;          // "NVIDIA H200"
  std::string arch;          // "sm_90": the NVRTC architecture that runs natively
  int sm_count = 0;
  int64_t total_bytes = 0;
  int64_t shared_per_block_optin = 0;  // the most dynamic shared memory one block may request
  int64_t l2_bytes = 0;
  // Kernels launch with programmatic dependent launch (sm_90 and newer unless JLLM_PDL=0): each
  // may start while its predecessor finishes (kernels/jllm_common.cuh, JLLM_GRID_WAIT).
  bool pdl = false;
  // The copy engine takes tensor maps (sm_90 and newer; EncodeTileMap).
  bool tensor_copies = false;
};

// "NVIDIA H200 (sm_90, 132 SMs)": what a tuning table names as the GPU it was measured on.
std::string DeviceIdentity(const DeviceProperties& p);

using KernelHandle = int;  // index into the device's loaded kernels
using GraphHandle = int;
using EventHandle = int;

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  virtual const DeviceProperties& properties() const = 0;
  // Bytes free on the device now.
  virtual absl::StatusOr<int64_t> FreeBytes() = 0;

  virtual absl::StatusOr<void*> Allocate(size_t bytes, std::string_view what) = 0;
  virtual void Free(void* p) = 0;
  // Host memory the device copies from asynchronously (pinned where that exists).
  virtual absl::StatusOr<void*> AllocateHost(size_t bytes, std::string_view what) = 0;
  virtual void FreeHost(void* p) = 0;

  // Stream-ordered copies and fills. `src` of CopyToDevice must stay valid until the stream
  // passes the copy (a Synchronize, or the next copy from the same staging buffer after one).
  virtual absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual absl::Status CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual absl::Status Fill(void* dst, uint8_t value, size_t bytes) = 0;

  // Makes the coming LoadKernel calls for `specs` fast: compiles them ahead, several at a time,
  // into the device's cache. Optional; errors surface again at LoadKernel.
  virtual absl::Status Prepare(absl::Span<const KernelSpec> /*specs*/) { return absl::OkStatus(); }

  // Compiles (or takes from a cache, or from `cubin` when it is for this device) and loads a
  // kernel; sets its dynamic shared memory limit to what the spec asks.
  virtual absl::StatusOr<KernelHandle> LoadKernel(const KernelSpec& spec, std::string_view cubin) = 0;
  // CTAs per SM the kernel can run with `threads` and `dynamic_smem` (persistent grids).
  virtual absl::StatusOr<int> MaxActiveBlocksPerSm(KernelHandle k, int threads, size_t dynamic_smem) = 0;
  // The copy engine's descriptor of `box` (kernel_args.h), written into a kernel's arguments: a
  // device without tensor-map copies says so (the lowering asks only for sm_90 and newer).
  virtual absl::Status EncodeTileMap(const TileBox& /*box*/, TileMap* /*out*/) {
    return absl::UnimplementedError("this device has no tensor-map copies (JLLM_GEMV_TMA needs sm_90 or newer)");
  }
  // `args` points at the kernel's argument struct (kernels/kernel_args.h), args_bytes its size.
  virtual absl::Status Launch(KernelHandle k, Dim3 grid, Dim3 block, size_t dynamic_smem,
                              const void* args, size_t args_bytes) = 0;
  // The step's trace buffer (kernels/kernel_trace.h) that the launches after this pass to kernels
  // built with JLLM_TRACE as their second argument (others take one); null: none.
  virtual void SetTraceBuffer(uint64_t* trace) = 0;

  // Records what is launched between the two calls instead of running it; replays it later.
  virtual absl::Status BeginCapture() = 0;
  virtual absl::StatusOr<GraphHandle> EndCapture() = 0;
  virtual absl::Status Replay(GraphHandle g) = 0;
  // Frees a captured graph (a runner lowered again captures new ones); its handle is not reused.
  virtual void DestroyGraph(GraphHandle g) = 0;

  virtual absl::StatusOr<EventHandle> CreateEvent() = 0;
  virtual absl::Status Record(EventHandle e) = 0;
  // Milliseconds between two recorded events (after a Synchronize).
  virtual absl::StatusOr<float> ElapsedMs(EventHandle from, EventHandle to) = 0;
  // Waits until event e, recorded on the stream, has passed (what the stream ran before it is
  // done; what came after may still run), at most timeout_seconds; `what` names the wait.
  virtual absl::Status WaitEvent(EventHandle e, std::string_view what, double timeout_seconds) = 0;

  // Waits for everything on the stream; a fault becomes an error naming `what`. Gives up with
  // DeadlineExceeded after `timeout_seconds` instead of hanging on a kernel that never ends.
  virtual absl::Status Synchronize(std::string_view what, double timeout_seconds = 60) = 0;
};

}  // namespace jllm::cuda
