// jllm-compile --tune's clock: seconds per decode step of a plan on this machine's GPU with a
// candidate tuning table (backends/cuda/lowering/gemv_tuner.h, DecodeStepTimer). The plan is
// loaded once on the CUDA backend; each call lowers it again with the table (Backend::Retune: the
// weights stay on the GPU, kernels the cubin cache holds are not compiled again), runs a few
// steps to capture the decode graph, then times greedy decode steps: the median of several runs.
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
  // Loads `plan` (without its CUBINs and tuning: they were made for other choices) with `weights`
  // on the GPU. FailedPrecondition naming the reason where no GPU is usable.
  static absl::StatusOr<std::unique_ptr<GpuStepTimer>> Open(const runtime::Plan& plan, const WeightSource& weights);

  // The GPU, as a tuning table records it (cuda::DeviceIdentity).
  const std::string& device() const { return device_; }

  // Seconds per decode step with `table`; an error when the GPU cannot run that lowering.
  absl::StatusOr<double> operator()(const cuda::TuningTable& table);

 private:
  explicit GpuStepTimer(runtime::Plan plan) : plan_(std::move(plan)) {}
  runtime::Plan plan_;
  std::unique_ptr<Backend> backend_;
  std::string device_;
};

}  // namespace jllm::tools
