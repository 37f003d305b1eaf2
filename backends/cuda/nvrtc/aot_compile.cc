#include "backends/cuda/nvrtc/aot_compile.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backends/cuda/nvrtc/nvrtc_compiler.h"
#include "ir/status.h"

namespace jllm::cuda {

absl::StatusOr<CubinsByArch> CompileAheadOfTime(const std::map<std::string, std::vector<KernelSpec>>& specs_by_arch,
                                                const std::function<void(size_t, size_t)>& progress) {
  std::vector<std::pair<const KernelSpec*, const std::string*>> jobs;  // (spec, arch)
  for (const auto& [arch, specs] : specs_by_arch) {
    RETURN_IF_ERROR(ValidateArch(arch));
    for (const KernelSpec& s : specs) jobs.emplace_back(&s, &arch);
  }
  std::vector<absl::StatusOr<CompiledCubin>> results(jobs.size(), absl::UnknownError("not run"));
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mu;
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      NvrtcOptions o;
      o.arch = *jobs[i].second;
      o.defines = jobs[i].first->DefineList();
      results[i] = CompileKernel(jobs[i].first->source, o);
      const size_t d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        progress(d, jobs.size());
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 16));
  for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  CubinsByArch out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const KernelSpec& spec = *jobs[i].first;
    const std::string& arch = *jobs[i].second;
    if (!results[i].ok()) {
      return absl::Status(results[i].status().code(),
                          absl::StrCat("kernel spec '", spec.label, "' for ", arch, ": ", results[i].status().message()));
    }
    out[arch][spec.ModuleKey()] = std::move(results[i]->cubin);
  }
  return out;
}

}  // namespace jllm::cuda
