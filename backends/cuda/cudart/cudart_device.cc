#include "backends/cuda/cudart/cudart_device.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/cudart/cuda_status.h"
#include "backends/cuda/nvrtc/nvrtc_compiler.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::cuda {

namespace {

// JLLM_SMEM_CARVEOUT (an A/B switch, docs/PERF.md): the percent of each SM's L1/shared storage
// every kernel asks to be shared memory, the same for all so that consecutive kernels never make
// an SM drain and reconfigure between them; unset: the driver's choice per kernel (-1).
int SharedCarveoutSwitch() {
  const char* v = std::getenv("JLLM_SMEM_CARVEOUT");
  if (v == nullptr || *v == '\0') return -1;
  int percent = 0;
  if (absl::SimpleAtoi(v, &percent) && percent >= 0 && percent <= 100) return percent;
  std::fprintf(stderr, "jllm: JLLM_SMEM_CARVEOUT=%s ignored: a percent 0..100 of the L1/shared storage, or unset\n", v);
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudartDevice>> CudartDevice::Open(int ordinal, CubinCache cache) {
  std::unique_ptr<CudartDevice> d(new CudartDevice(ordinal, std::move(cache)));
  JLLM_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal), absl::StrCat("selecting device ", ordinal));
  cudaDeviceProp prop{};
  JLLM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal), "reading the device's properties");
  d->props_.name = prop.name;
  d->props_.arch = absl::StrCat("sm_", prop.major, prop.minor);
  d->props_.sm_count = prop.multiProcessorCount;
  d->props_.total_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  d->props_.shared_per_block_optin = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  d->props_.l2_bytes = prop.l2CacheSize;
  if (prop.major < 8) {
    return absl::FailedPreconditionError(absl::StrCat(
        prop.name, " is ", d->props_.arch, "; jllm's kernels need sm_80 or newer"));
  }
  const char* pdl = std::getenv("JLLM_PDL");
  d->props_.pdl = prop.major >= 9 && !(pdl != nullptr && std::string_view(pdl) == "0");
  d->props_.tensor_copies = prop.major >= 9;
  d->carveout_ = SharedCarveoutSwitch();
  JLLM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&d->stream_, cudaStreamNonBlocking), "creating a stream");
  JLLM_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&d->sync_event_, cudaEventDisableTiming),
                            "creating an event");
  return d;
}

CudartDevice::~CudartDevice() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (cudaGraphExec_t g : graphs_) {
    if (g != nullptr) cudaGraphExecDestroy(g);
  }
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  if (sync_event_ != nullptr) cudaEventDestroy(sync_event_);
  kernels_.clear();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::StatusOr<int64_t> CudartDevice::FreeBytes() {
  size_t free_bytes = 0, total = 0;
  JLLM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total), "reading free device memory");
  return static_cast<int64_t>(free_bytes);
}

absl::StatusOr<void*> CudartDevice::Allocate(size_t bytes, std::string_view what) {
  void* p = nullptr;
  JLLM_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, bytes), absl::StrCat("allocating ", bytes, " bytes for ", Sv(what)));
  return p;
}

void CudartDevice::Free(void* p) {
  if (p != nullptr) cudaFree(p);
}

absl::StatusOr<void*> CudartDevice::AllocateHost(size_t bytes, std::string_view what) {
  void* p = nullptr;
  JLLM_CUDA_RETURN_IF_ERROR(cudaMallocHost(&p, bytes),
                            absl::StrCat("allocating ", bytes, " bytes of pinned host memory for ", Sv(what)));
  return p;
}

void CudartDevice::FreeHost(void* p) {
  if (p != nullptr) cudaFreeHost(p);
}

absl::Status CudartDevice::CopyToDevice(void* dst, const void* src, size_t bytes) {
  return CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "copying to the GPU");
}

absl::Status CudartDevice::CopyToHost(void* dst, const void* src, size_t bytes) {
  return CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "copying from the GPU");
}

absl::Status CudartDevice::Fill(void* dst, uint8_t value, size_t bytes) {
  return CudaStatus(cudaMemsetAsync(dst, value, bytes, stream_), "filling device memory");
}

absl::Status CudartDevice::Prepare(absl::Span<const KernelSpec> specs) {
  if (!cache_.enabled() || specs.size() < 2) return absl::OkStatus();
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < specs.size(); i = next++) {
      NvrtcOptions options;
      options.arch = props_.arch;
      options.defines = specs[i].DefineList();
      bool hit = false;
      if (cache_.GetOrCompile(specs[i].source, options, &hit).ok() && !hit) ++compiled_;
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 16));
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return absl::OkStatus();
}

absl::StatusOr<KernelHandle> CudartDevice::LoadKernel(const KernelSpec& spec, std::string_view cubin) {
  if (spec.smem > props_.shared_per_block_optin) {
    return absl::ResourceExhaustedError(absl::StrCat(spec.label, " needs ", spec.smem,
                                                     " bytes of shared memory per block; ", props_.name,
                                                     " allows ", props_.shared_per_block_optin));
  }
  std::string image;
  if (!cubin.empty() && LooksLikeCubin(cubin)) {
    image = std::string(cubin);
    ++from_plan_;
  } else {
    NvrtcOptions options;
    options.arch = props_.arch;
    options.defines = spec.DefineList();
    bool hit = false;
    absl::StatusOr<std::string> compiled = cache_.GetOrCompile(spec.source, options, &hit);
    if (!compiled.ok()) {
      return absl::Status(compiled.status().code(),
                          absl::StrCat("compiling kernel spec '", spec.label, "': ", compiled.status().message()));
    }
    image = *std::move(compiled);
    if (!hit) ++compiled_;
  }
  ASSIGN_OR_RETURN(CudaLibrary library, CudaLibrary::Load(image, spec.label));
  ASSIGN_OR_RETURN(cudaKernel_t kernel, library.Kernel(spec.kernel));
  // The default limit on dynamic shared memory is 48 KiB less the kernel's static shared memory:
  // a spec just under 48 KiB fails to launch without this too (stop 18: 0.6b's QKV with q4_K
  // pairs, 48,832 dynamic + 512 static bytes). Raised to what the spec needs, always.
  if (spec.smem > 0) {
    JLLM_CUDA_RETURN_IF_ERROR(
        cudaKernelSetAttributeForDevice(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(spec.smem), ordinal_),
        absl::StrCat("raising the shared memory limit of ", spec.label));
  }
  if (carveout_ >= 0) {
    JLLM_CUDA_RETURN_IF_ERROR(cudaKernelSetAttributeForDevice(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                                              carveout_, ordinal_),
                              absl::StrCat("setting the shared memory carveout of ", spec.label,
                                           " (JLLM_SMEM_CARVEOUT)"));
  }
  // JLLM_KERNEL_INFO=1: each kernel's registers, spills (local memory) and shared memory as
  // this GPU's driver loaded it — register budgets differ between the NVRTC here and a local
  // nvcc (docs/PERF.md), so this is where a kernel change's budget is read.
  if (const char* info = std::getenv("JLLM_KERNEL_INFO"); info != nullptr && std::string_view(info) == "1") {
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(kernel)) == cudaSuccess) {
      std::fprintf(stderr, "jllm: kernel %s: %d registers, %zu bytes local, %zu + %lld bytes shared, %d threads\n",
                   spec.label.c_str(), a.numRegs, a.localSizeBytes, a.sharedSizeBytes,
                   static_cast<long long>(spec.smem), static_cast<int>(spec.threads));
    }
  }
  kernels_.push_back({std::move(library), kernel, spec.label});
  return static_cast<KernelHandle>(kernels_.size() - 1);
}

absl::StatusOr<int> CudartDevice::MaxActiveBlocksPerSm(KernelHandle k, int threads, size_t dynamic_smem) {
  int n = 0;
  JLLM_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                &n, reinterpret_cast<const void*>(kernels_[k].kernel), threads, dynamic_smem),
                            absl::StrCat("occupancy of ", kernels_[k].label));
  return n;
}

absl::Status CudartDevice::EncodeTileMap(const TileBox& box, TileMap* out) {
  static_assert(sizeof(CUtensorMap) == sizeof(TileMap) && alignof(CUtensorMap) <= alignof(TileMap),
                "kernel_args.h's TileMap holds a CUtensorMap");
  if (encode_tiled_ == nullptr) {
    cudaDriverEntryPointQueryResult found{};
    JLLM_CUDA_RETURN_IF_ERROR(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &encode_tiled_, 12000, cudaEnableDefault, &found),
        "looking up the driver's cuTensorMapEncodeTiled");
    if (found != cudaDriverEntryPointSuccess || encode_tiled_ == nullptr) {
      encode_tiled_ = nullptr;
      return absl::UnimplementedError("the driver has no cuTensorMapEncodeTiled (a CUDA 12 driver or newer has)");
    }
  }
  // A matrix of 8-byte elements: row_bytes / 8 a row, `rows` rows row_stride bytes apart; boxes
  // of box_bytes / 8 × box_rows, dense in shared memory, zeros out of bounds.
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(box.row_bytes / 8), static_cast<cuuint64_t>(box.rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(box.row_stride)};
  const cuuint32_t boxes[2] = {static_cast<cuuint32_t>(box.box_bytes / 8), static_cast<cuuint32_t>(box.box_rows)};
  const cuuint32_t steps[2] = {1, 1};
  const CUresult r = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(encode_tiled_)(
      reinterpret_cast<CUtensorMap*>(out), CU_TENSOR_MAP_DATA_TYPE_UINT64, 2, const_cast<void*>(box.base), dims,
      strides, boxes, steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cuTensorMapEncodeTiled failed (CUresult %d) for %lld rows of %lld bytes, stride %lld, boxes of %d x %d",
        static_cast<int>(r), box.rows, box.row_bytes, box.row_stride, box.box_bytes, box.box_rows));
  }
  return absl::OkStatus();
}

absl::Status CudartDevice::Launch(KernelHandle k, Dim3 grid, Dim3 block, size_t dynamic_smem,
                                  const void* args, size_t /*args_bytes*/) {
  // A kernel reads as many arguments as it has: the trace buffer only where built with JLLM_TRACE.
  void* params[] = {const_cast<void*>(args), &trace_};
  const Kernel& kernel = kernels_[k];
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid.x, grid.y, grid.z);
  config.blockDim = dim3(block.x, block.y, block.z);
  config.dynamicSmemBytes = dynamic_smem;
  config.stream = stream_;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = props_.pdl ? 1 : 0;
  JLLM_CUDA_RETURN_IF_ERROR(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernel.kernel), params),
                            absl::StrCat("launching ", kernel.label));
  return CudaStatus(cudaGetLastError(), absl::StrCat("after launching ", kernel.label));
}

absl::Status CudartDevice::BeginCapture() {
  return CudaStatus(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "starting a graph capture");
}

absl::StatusOr<GraphHandle> CudartDevice::EndCapture() {
  cudaGraph_t graph = nullptr;
  JLLM_CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream_, &graph), "ending the graph capture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  JLLM_CUDA_RETURN_IF_ERROR(err, "instantiating the decode graph");
  graphs_.push_back(exec);
  return static_cast<GraphHandle>(graphs_.size() - 1);
}

absl::Status CudartDevice::Replay(GraphHandle g) {
  if (g < 0 || g >= static_cast<GraphHandle>(graphs_.size()) || graphs_[g] == nullptr) {
    return absl::InvalidArgumentError("cuda: replaying a graph that was destroyed or never captured");
  }
  return CudaStatus(cudaGraphLaunch(graphs_[g], stream_), "launching the decode graph");
}

void CudartDevice::DestroyGraph(GraphHandle g) {
  if (g < 0 || g >= static_cast<GraphHandle>(graphs_.size()) || graphs_[g] == nullptr) return;
  cudaGraphExecDestroy(graphs_[g]);
  graphs_[g] = nullptr;
}

absl::StatusOr<EventHandle> CudartDevice::CreateEvent() {
  cudaEvent_t e = nullptr;
  JLLM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e), "creating an event");
  events_.push_back(e);
  return static_cast<EventHandle>(events_.size() - 1);
}

absl::Status CudartDevice::Record(EventHandle e) {
  return CudaStatus(cudaEventRecord(events_[e], stream_), "recording an event");
}

absl::StatusOr<float> CudartDevice::ElapsedMs(EventHandle from, EventHandle to) {
  float ms = 0;
  JLLM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, events_[from], events_[to]), "timing events");
  return ms;
}

absl::Status CudartDevice::Synchronize(std::string_view what, double timeout_seconds) {
  JLLM_CUDA_RETURN_IF_ERROR(cudaEventRecord(sync_event_, stream_), absl::StrCat("waiting for ", Sv(what)));
  return Poll(sync_event_, what, timeout_seconds);
}

absl::Status CudartDevice::WaitEvent(EventHandle e, std::string_view what, double timeout_seconds) {
  if (e < 0 || e >= static_cast<EventHandle>(events_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("cuda: waiting for ", Sv(what), " on an event never created"));
  }
  return Poll(events_[e], what, timeout_seconds);
}

// Spins on the event (a blocking wait's wake-up is tens of microseconds, a decode step's
// fraction) until it has passed, failed, or the deadline is gone.
absl::Status CudartDevice::Poll(cudaEvent_t event, std::string_view what, double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (true) {
    const cudaError_t err = cudaEventQuery(event);
    if (err == cudaSuccess) return absl::OkStatus();
    if (err != cudaErrorNotReady) return CudaStatus(err, what);
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s did not finish within %.0f s on %s (a kernel that never ends?)", Sv(what), timeout_seconds,
          props_.name));
    }
    std::this_thread::yield();
  }
}

}  // namespace jllm::cuda
