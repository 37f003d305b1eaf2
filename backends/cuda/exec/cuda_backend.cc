#include "backends/cuda/exec/cuda_backend.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/exec/device_probes.h"
#include "backends/cuda/exec/graph_runner.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/exec/memory_plan.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

class CudaBackend : public Backend {
 public:
  CudaBackend(std::unique_ptr<DeviceApi> device, CudaBackendOptions options)
      : device_(std::move(device)), options_(std::move(options)) {}

  std::string_view name() const override { return "cuda"; }

  absl::Status Load(const ir::Graph& graph, const WeightSource& weights,
                    const BackendOptions& options) override {
    runner_.reset();
    RunnerOptions ro;
    ro.max_context = options.max_context;
    ro.max_step_tokens = options.max_step_tokens;
    ro.debug_sync = options_.debug_sync;
    ro.decode_ahead = options_.decode_ahead;
    ro.omit_kernels = options_.omit_kernels;
    ro.trace_dump = options_.trace_dump;
    ro.cubins = &options_.cubins;
    ro.tuning = &options_.tuning;
    ro.target = Target();
    ASSIGN_OR_RETURN(runner_, GraphRunner::Create(graph, *device_, weights, ro));
    return absl::OkStatus();
  }

  absl::Status Retune(std::string_view tuning) override {
    if (!runner_) return absl::FailedPreconditionError("cuda: Retune before Load");
    TuningTable table;
    if (!tuning.empty()) {
      ASSIGN_OR_RETURN(table, ParseTuningYaml(tuning, "the tuning table"));
    }
    const std::string here = DeviceIdentity(device_->properties());
    if (!table.device.empty() && table.device != here) {
      return absl::InvalidArgumentError(
          absl::StrCat("the tuning table was measured on ", table.device, "; this GPU is ", here));
    }
    TuningTable old = std::move(options_.tuning);
    options_.tuning = std::move(table);
    if (absl::Status st = runner_->Relower(&options_.tuning); !st.ok()) {
      options_.tuning = std::move(old);
      return st;
    }
    return absl::OkStatus();
  }

  // The kernels fit this GPU's shared memory per CTA and its SMs (a device that does not say:
  // the H200's).
  LoweringTarget Target() const {
    LoweringTarget t;
    if (const int64_t smem = device_->properties().shared_per_block_optin; smem > 0) t.smem_per_block = smem;
    if (const int sms = device_->properties().sm_count; sms > 0) t.sms = sms;
    t.tensor_copies = device_->properties().tensor_copies;
    return t;
  }

  std::string Describe() const override {
    const DeviceProperties& p = device_->properties();
    std::string out = absl::StrFormat("%s (%s, %d SMs%s)", p.name, p.arch, p.sm_count, p.pdl ? ", PDL" : "");
    if (runner_) absl::StrAppend(&out, "; ", runner_->plan().Summary());
    if (!options_.tuning.empty() && UseTuning()) {
      absl::StrAppend(&out, "; GEMV choices tuned for ", options_.tuning.gemv.size(), " shapes");
    }
    return out;
  }

  absl::StatusOr<int64_t> DefaultContext(const ir::Graph& graph, const BackendOptions& options) override {
    ASSIGN_OR_RETURN(LoweredGraph lowered, LowerGraph(graph, &options_.tuning, Target()));
    ASSIGN_OR_RETURN(const int64_t free_bytes, device_->FreeBytes());
    const RunnerOptions defaults;
    ASSIGN_OR_RETURN(const int64_t fits,
                     LargestContextThatFits(graph, lowered, options.max_step_tokens, free_bytes,
                                            defaults.reserve_bytes, graph.config.context_length));
    // What does not fit is reported by Load with the numbers; here just never ask for 0.
    return std::max<int64_t>(1, fits);
  }

  absl::StatusOr<double> ReadBandwidthGBs() override { return MeasureReadBandwidth(*device_); }

  std::vector<std::string> ProbeNames() const override { return {"l2-prefetch"}; }
  absl::StatusOr<ProbeTable> Probe(std::string_view probe) override {
    if (probe == "l2-prefetch") return MeasureL2Prefetch(*device_);
    return absl::InvalidArgumentError(absl::StrCat("cuda: no device probe named '", std::string(probe), "' (probes: l2-prefetch)"));
  }

  absl::StatusOr<int32_t> Step(absl::Span<const int32_t> tokens, int64_t pos0,
                               const StepOptions& options) override {
    if (!runner_) return absl::FailedPreconditionError("cuda: Step before Load");
    return runner_->Step(tokens, pos0, options);
  }

  absl::Status Wait() override { return runner_ ? runner_->Wait() : absl::OkStatus(); }

  absl::StatusOr<std::vector<std::vector<float>>> Evaluate(
      int64_t n_tokens, int64_t pos0, absl::Span<const NamedInput> inputs,
      absl::Span<const std::string> outputs) override {
    if (!runner_) return absl::FailedPreconditionError("cuda: Evaluate before Load");
    return runner_->Evaluate(n_tokens, pos0, inputs, outputs);
  }

  absl::StatusOr<std::vector<KernelTiming>> Profile(absl::Span<const int32_t> tokens, int64_t pos0,
                                                    const SamplingParams* sampling) override {
    if (!runner_) return absl::FailedPreconditionError("cuda: Profile before Load");
    return runner_->Profile(tokens, pos0, sampling);
  }

 private:
  std::unique_ptr<DeviceApi> device_;  // outlives the runner
  CudaBackendOptions options_;
  std::unique_ptr<GraphRunner> runner_;
};

}  // namespace

std::string DeviceIdentity(const DeviceProperties& p) {
  return absl::StrFormat("%s (%s, %d SMs)", p.name, p.arch, p.sm_count);
}

std::unique_ptr<Backend> CreateCudaBackendOn(std::unique_ptr<DeviceApi> device,
                                             CudaBackendOptions options) {
  return std::make_unique<CudaBackend>(std::move(device), std::move(options));
}

}  // namespace jllm::cuda
