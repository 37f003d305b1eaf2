// A DeviceApi that runs the CUDA backend on the CPU: memory is host memory, every KernelSpec is
// compiled from the embedded kernel sources with g++ (JLLM_EMULATE, emu_cuda_shim.h) into a
// shared object and launched there, a capture records launches and a replay runs them again.
// Slow (a host thread per CUDA thread) but exact about indexing, so the executor and every
// kernel are checked against cpu_ref in CI, which has no GPU. Not a model of timing, memory
// coherence or races: the gpu tests and compute-sanitizer are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cuda/exec/device_api.h"

namespace jllm::cuda::emu {

struct EmuOptions {
  int64_t memory_bytes = int64_t{8} << 30;  // what FreeBytes reports before allocations
  std::string cache_dir;                    // compiled kernels; empty: $JLLM_EMU_CACHE or build dir
  int64_t shared_per_block_optin = 227 * 1024;  // what one CTA may take (sm_90's; sm_86's is 99 KiB)
  int sm_count = 4;  // few: a persistent kernel's CTAs each take several items
  // CTAs of a launch run interleaved, this many at a time (emu_cuda_shim.h, emu_launch): 1, one
  // after another; more let a kernel whose CTAs wait on each other run, and interleave the
  // cross-CTA protocols (tickets, last-CTA merges) of every kernel.
  int resident_ctas = 1;
  // A CTA's warps run one at a time, each until all its threads wait at a CTA barrier or on
  // memory or are done, in a shuffled order (emu_cuda_shim.h, emu_launch), instead of every
  // thread a step a round: a warp reading what another warp writes without a barrier between
  // them reads it before the write whenever the reader's turn comes first — a race the
  // round-robin schedule can order benignly.
  bool warps_in_turn = false;
  // Kernel sources by name that LoadKernel takes besides the embedded ones (test kernels).
  std::map<std::string, std::string> extra_sources;
};

class EmuDevice : public DeviceApi {
 public:
  explicit EmuDevice(EmuOptions options = {});
  ~EmuDevice() override;

  // Compiles these specs now, several g++ processes at a time (LoadKernel then finds them).
  absl::Status Prepare(absl::Span<const KernelSpec> specs) override;

  const DeviceProperties& properties() const override { return props_; }
  absl::StatusOr<int64_t> FreeBytes() override;
  absl::StatusOr<void*> Allocate(size_t bytes, std::string_view what) override;
  void Free(void* p) override;
  absl::StatusOr<void*> AllocateHost(size_t bytes, std::string_view what) override;
  void FreeHost(void* p) override;
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override;
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override;
  absl::Status Fill(void* dst, uint8_t value, size_t bytes) override;
  absl::StatusOr<KernelHandle> LoadKernel(const KernelSpec& spec, std::string_view cubin) override;
  absl::StatusOr<int> MaxActiveBlocksPerSm(KernelHandle, int, size_t) override { return 1; }
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
  // Every launch has run when it returns: an event has always passed.
  absl::Status WaitEvent(EventHandle, std::string_view, double) override { return absl::OkStatus(); }
  absl::Status Synchronize(std::string_view, double) override { return absl::OkStatus(); }

  int64_t launches() const { return launches_; }
  // The module keys (KernelSpec::ModuleKey) of the kernels loaded so far, in load order.
  std::vector<std::string> loaded_keys() const {
    std::vector<std::string> keys;
    for (const Kernel& k : kernels_) keys.push_back(k.key);
    return keys;
  }
  // Captured graphs not destroyed yet.
  int live_graphs() const { return static_cast<int>(std::count(graph_live_.begin(), graph_live_.end(), true)); }

 private:
  struct Kernel {
    void* library = nullptr;
    void (*entry)(const void*, uint64_t*) = nullptr;
    int (*launch)(void (*)(const void*, uint64_t*), unsigned, unsigned, unsigned, unsigned, size_t, const void*,
                  uint64_t*, unsigned, unsigned) = nullptr;
    std::string label, key;
    int64_t max_smem = 0;
  };
  struct Recorded {
    KernelHandle kernel;
    Dim3 grid, block;
    size_t smem;
    std::vector<uint8_t> args;
    uint64_t* trace;  // SetTraceBuffer's, at the launch
  };
  absl::StatusOr<std::string> CompiledPath(const KernelSpec& spec);
  absl::Status Run(const Recorded& r);

  EmuOptions options_;
  DeviceProperties props_;
  std::string source_dir_;
  std::map<void*, size_t> allocations_;
  int64_t allocated_ = 0;
  std::vector<Kernel> kernels_;
  std::map<std::string, std::string> compiled_;  // module key -> .so path
  bool capturing_ = false;
  uint64_t* trace_ = nullptr;
  std::vector<Recorded> capture_;
  std::vector<std::vector<Recorded>> graphs_;
  std::vector<bool> graph_live_;  // by handle: captured and not destroyed
  std::vector<double> events_;
  int64_t launches_ = 0;
};

}  // namespace jllm::cuda::emu
