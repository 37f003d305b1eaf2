// jllm-compile --tune's clock: seconds per decode step of a plan on this machine's GPU with a
// candidate tuning table (backends/cuda/lowering/gemv_tuner.h, DecodeStepTimer). Each call loads
// the plan afresh on the CUDA backend with the table in its TUNE section (kernels the cubin cache
// already holds are not compiled again), runs a few steps to capture the decode graph, then
// times greedy decode steps: the median of several runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "backends/cuda/lowering/tuning.h"
#include "runtime/plan_file.h"

namespace jllm::tools {

class GpuStepTimer {
 public:
  // A copy of `plan` (without CUBINs: they were compiled for other choices) and the weights it
  // runs with. FailedPrecondition naming the reason where no GPU is usable.
  static absl::StatusOr<std::unique_ptr<GpuStepTimer>> Open(const runtime::Plan& plan, const WeightSource& weights);

  // The GPU, as a tuning table records it (cuda::DeviceIdentity).
  const std::string& device() const { return device_; }

  // Seconds per decode step with `table`; an error when the GPU cannot load or run it.
  absl::StatusOr<double> operator()(const cuda::TuningTable& table);

 private:
  // The weights as the plan's source gives them, but kept in memory: every candidate loads them
  // again, so the pages a load would release (PlanWeights::Release) are read once, not per load.
  class KeptWeights : public WeightSource {
   public:
    explicit KeptWeights(const WeightSource& source) : source_(source) {}
    absl::StatusOr<absl::Span<const uint8_t>> Bytes(const ir::WeightRef& w) const override { return source_.Bytes(w); }

   private:
    const WeightSource& source_;
  };
  GpuStepTimer(runtime::Plan plan, const WeightSource& weights) : plan_(std::move(plan)), weights_(weights) {}
  runtime::Plan plan_;
  KeptWeights weights_;
  std::string device_;
};

}  // namespace jllm::tools
