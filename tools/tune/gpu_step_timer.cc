#include "tools/tune/gpu_step_timer.h"

#include <algorithm>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/status.h"
#include "runtime/backend_factory.h"
#include "runtime/decode_timer.h"

namespace jllm::tools {
namespace {

// Steps to capture the decode graph and settle the clocks, then runs of steps timed; the median
// run is the answer (at ~2 ms a 4b step, ~0.5 s a candidate besides loading it).
constexpr int64_t kWarmupSteps = 8, kStepsPerRun = 48, kRuns = 5;
constexpr int64_t kContext = kWarmupSteps + kStepsPerRun * kRuns;

}  // namespace

absl::StatusOr<std::unique_ptr<GpuStepTimer>> GpuStepTimer::Open(const runtime::Plan& plan,
                                                                 const WeightSource& weights) {
  runtime::Plan copy = plan;
  copy.sections.erase(std::string(runtime::kCubinsSection));
  copy.sections.erase(std::string(runtime::kTuningSection));
  std::unique_ptr<GpuStepTimer> t(new GpuStepTimer(std::move(copy)));
  if (const std::string reason = runtime::GpuUnavailableReason(); !reason.empty()) {
    return absl::FailedPreconditionError(reason);
  }
  ASSIGN_OR_RETURN(runtime::BackendChoice choice, runtime::CreateBackend({.name = "cuda", .plan = &t->plan_}));
  t->device_ = choice.device;
  t->backend_ = std::move(choice.backend);
  RETURN_IF_ERROR(t->backend_->Load(t->plan_.graph, weights, {.max_context = kContext, .max_step_tokens = 1}));
  return t;
}

absl::StatusOr<double> GpuStepTimer::operator()(const cuda::TuningTable& table) {
  RETURN_IF_ERROR(backend_->Retune(table.empty() ? std::string() : cuda::TuningToYaml(table)));
  Backend& backend = *backend_;
  std::mt19937 rng(7);
  const int32_t first = static_cast<int32_t>(rng() % static_cast<uint32_t>(plan_.graph.config.n_vocab));
  RETURN_IF_ERROR(runtime::TimeGreedyDecode(backend, first, kWarmupSteps, 0).status());
  std::vector<double> runs;
  for (int64_t r = 0; r < kRuns; ++r) {
    ASSIGN_OR_RETURN(const double s, runtime::TimeGreedyDecode(backend, first, kStepsPerRun,
                                                               kWarmupSteps + r * kStepsPerRun));
    runs.push_back(s / kStepsPerRun);
  }
  std::nth_element(runs.begin(), runs.begin() + kRuns / 2, runs.end());
  return runs[kRuns / 2];
}

}  // namespace jllm::tools
