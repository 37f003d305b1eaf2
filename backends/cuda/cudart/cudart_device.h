// The DeviceApi over the CUDA runtime: one device, one stream, kernels compiled by NVRTC (or
// taken from the plan's CUBINs / the on-disk cache) and loaded with cudaLibraryLoadData,
// decode captured as a CUDA graph. Synchronize polls an event with a deadline, so a kernel
// that never finishes is an error, not a hang.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "absl/status/statusor.h"
#include "backends/cuda/cudart/cuda_library.h"
#include "backends/cuda/exec/device_api.h"
#include "backends/cuda/nvrtc/cubin_cache.h"

namespace jllm::cuda {

class CudartDevice : public DeviceApi {
 public:
  // Selects device `ordinal` and creates its stream.
  static absl::StatusOr<std::unique_ptr<CudartDevice>> Open(int ordinal, CubinCache cache);
  ~CudartDevice() override;

  const DeviceProperties& properties() const override { return props_; }
  absl::StatusOr<int64_t> FreeBytes() override;
  absl::StatusOr<void*> Allocate(size_t bytes, std::string_view what) override;
  void Free(void* p) override;
  absl::StatusOr<void*> AllocateHost(size_t bytes, std::string_view what) override;
  void FreeHost(void* p) override;
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override;
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override;
  absl::Status Fill(void* dst, uint8_t value, size_t bytes) override;
  absl::Status Prepare(absl::Span<const KernelSpec> specs) override;
  absl::StatusOr<KernelHandle> LoadKernel(const KernelSpec& spec, std::string_view cubin) override;
  absl::StatusOr<int> MaxActiveBlocksPerSm(KernelHandle k, int threads, size_t dynamic_smem) override;
  absl::Status EncodeTileMap(const TileBox& box, TileMap* out) override;
  absl::Status Launch(KernelHandle k, Dim3 grid, Dim3 block, size_t dynamic_smem, const void* args,
                      size_t args_bytes) override;
  void SetTraceBuffer(uint64_t* trace) override { trace_ = trace; }
  absl::Status BeginCapture() override;
  absl::StatusOr<GraphHandle> EndCapture() override;
  absl::Status Replay(GraphHandle g) override;
  void DestroyGraph(GraphHandle g) override;
  absl::StatusOr<EventHandle> CreateEvent() override;
  absl::Status Record(EventHandle e) override;
  absl::StatusOr<float> ElapsedMs(EventHandle from, EventHandle to) override;
  absl::Status WaitEvent(EventHandle e, std::string_view what, double timeout_seconds) override;
  absl::Status Synchronize(std::string_view what, double timeout_seconds) override;

  int ordinal() const { return ordinal_; }
  int compiled() const { return compiled_; }     // kernels NVRTC compiled (cache misses)
  int from_plan() const { return from_plan_; }  // kernels taken from the plan's CUBINs

 private:
  absl::Status Poll(cudaEvent_t event, std::string_view what, double timeout_seconds);
  CudartDevice(int ordinal, CubinCache cache) : ordinal_(ordinal), cache_(std::move(cache)) {}
  struct Kernel {
    CudaLibrary library;
    cudaKernel_t kernel;
    std::string label;
  };
  int ordinal_;
  void* encode_tiled_ = nullptr;  // the driver's cuTensorMapEncodeTiled, looked up on first use
  int carveout_ = -1;  // JLLM_SMEM_CARVEOUT: every kernel's preferred shared-memory percent, or -1
  CubinCache cache_;
  DeviceProperties props_;
  cudaStream_t stream_ = nullptr;
  uint64_t* trace_ = nullptr;  // the second argument of every launch (JLLM_TRACE kernels read it)
  std::vector<Kernel> kernels_;
  std::vector<cudaGraphExec_t> graphs_;
  std::vector<cudaEvent_t> events_;
  cudaEvent_t sync_event_ = nullptr;
  std::atomic<int> compiled_{0};
  int from_plan_ = 0;
};

}  // namespace jllm::cuda
