// Runs a lowered graph on a DeviceApi: plans and allocates device memory (refusing what does
// not fit, with the numbers), streams the weights up through a small staging buffer, loads the
// kernels, and executes steps:
//   - decode (one token): replays a captured graph of the step's launches and the sampler;
//     the token and position live in device memory (StepState), so the graph replays unchanged
//     and the host only uploads 16 bytes when it feeds something else than the last sample;
//   - prefill (a chunk): launches directly, with T as an argument.
// A step copies back the 16-byte state (the sampled token) and logits only when asked.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/backend.h"
#include "backends/cuda/exec/device_api.h"
#include "backends/cuda/exec/kernel_binder.h"
#include "backends/cuda/exec/memory_plan.h"
#include "backends/cuda/lowering/lowering.h"
#include "ir/graph.h"

namespace jllm::cuda {

struct RunnerOptions {
  int64_t max_context = 4096;
  int64_t max_step_tokens = 512;
  // Device memory left unplanned (other processes, driver growth).
  int64_t reserve_bytes = int64_t{256} << 20;
  double step_timeout_seconds = 120;
  // Synchronize and check after every launch, naming the kernel that faulted, and run decode
  // without a graph ($JLLM_CUDA_SYNC=1; slow, for finding faults).
  bool debug_sync = false;
  // CUBINs compiled ahead of time for this device, by KernelSpec::ModuleKey().
  const std::map<std::string, std::string>* cubins = nullptr;
  // A measuring aid, never for results: launches whose label contains one of these are left
  // out of every step, so a benchmark shows what they cost inside the captured step
  // ($JLLM_OMIT=head_ops,attention_rows). The outputs are wrong while any is set.
  std::vector<std::string> omit_kernels;
  // With JLLM_TRACE=1 at load: where the traced decode step's per-CTA stamps go (a tab-separated
  // file, scripts/trace_ctas.py reads it; $JLLM_TRACE_DUMP); empty: nowhere.
  std::string trace_dump;
  // After a sampled decode step, the next one is replayed at once on the token its sampler left
  // in the device state, before the host has read that token: the GPU does not idle while the
  // host waits, reads and launches again. A call that does not continue from it (another token
  // or position, other sampler settings, logits asked for, anything but a decode step) lets it
  // finish and runs as without; its cache row lies past the filled positions until claimed.
  // ($JLLM_DECODE_AHEAD=0: off.)
  bool decode_ahead = true;
  // The GPU the kernels are lowered for (its shared memory per CTA; lowering_target.h).
  LoweringTarget target;
  // Per-shape GEMV knobs (lowering/tuning.h; null or empty: the heuristics).
  const TuningTable* tuning = nullptr;
};

class GraphRunner {
 public:
  static absl::StatusOr<std::unique_ptr<GraphRunner>> Create(const ir::Graph& graph, DeviceApi& device,
                                                             const WeightSource& weights,
                                                             const RunnerOptions& options);
  ~GraphRunner();
  GraphRunner(const GraphRunner&) = delete;
  GraphRunner& operator=(const GraphRunner&) = delete;

  // Lowers the graph again with another tuning table (null: the heuristics) and runs with those
  // kernels from the next step on, keeping the weights and the KV cache where they are (a table
  // changes kernels and their scratch, never the weights' layout): what jllm-compile --tune does
  // per candidate without uploading the model again. On an error nothing has changed.
  absl::Status Relower(const TuningTable* tuning);

  const MemoryPlan& plan() const { return plan_; }
  const LoweredGraph& lowered() const { return lowered_; }

  absl::StatusOr<int32_t> Step(absl::Span<const int32_t> tokens, int64_t pos0, const StepOptions& options);
  absl::StatusOr<std::vector<std::vector<float>>> Evaluate(int64_t n_tokens, int64_t pos0,
                                                           absl::Span<const NamedInput> inputs,
                                                           absl::Span<const std::string> outputs);
  absl::StatusOr<std::vector<KernelTiming>> Profile(absl::Span<const int32_t> tokens, int64_t pos0,
                                                    const SamplingParams* sampling);
  // Waits for the decode step run ahead, if one is in flight (Backend::Wait).
  absl::Status Wait() { return DrainAhead(); }

 private:
  GraphRunner(const ir::Graph& graph, DeviceApi& device, const RunnerOptions& options);
  absl::Status Allocate();
  absl::Status UploadWeights(const WeightSource& weights);
  absl::Status LoadKernels();
  absl::Status EnsureAllLogits();
  absl::Status CheckStep(int64_t n, int64_t pos0) const;
  absl::Status UploadState(int32_t token, int64_t pos);
  // A draw asked of a graph without a sampler (no %logits output) is an error; null asks none.
  absl::Status CheckSampleable(const SamplingParams* params) const;
  absl::Status UploadSampling(const SamplingParams& params);
  // The launches of a step, in order; `all_rows`: logits of every row too.
  struct Planned {
    const Launch* launch;
    int node;
    Phase phase;
  };
  // How a step draws its token: not at all (logits only), by the sampler after the logits, or
  // (a decode step, greedy without penalties, LoweredGraph::greedy_logits) by the logits GEMV.
  enum class Draw { kNone, kSampler, kGreedyLogits };
  Draw DrawOf(const SamplingParams* params, int64_t n) const;
  std::vector<Planned> StepLaunches(int64_t n, Draw draw, bool all_rows) const;
  absl::Status Run(const Planned& p, int64_t n);
  // The captured decode step drawing as `draw` does, capturing it on first use.
  absl::StatusOr<GraphHandle> DecodeGraph(Draw draw);
  // JLLM_TRACE: replays `launches` (a decode step's) as the decode graph, traced, and adds each
  // kernel's times on the step's timeline to its timing.
  absl::Status TraceDecodeStep(const std::vector<Planned>& launches, Draw draw, int32_t token, int64_t pos,
                               std::vector<KernelTiming>& timings);
  absl::Status RunAll(const std::vector<Planned>& launches, int64_t n);
  absl::Status Finish(std::string_view what);
  // Decode ahead: waits for the step in flight, if any, and takes the device state it left as
  // the host's (the next call that does not continue from it runs after it, as without).
  absl::Status DrainAhead();
  // Enqueues the state's copy into pinned slot `slot` and the event behind it.
  absl::Status CopyStateToSlot(int slot);
  void* Alloc(size_t bytes, std::string_view what, absl::Status* status);
  // Frees an allocation of Alloc's (null: nothing).
  void Release(void* p);

  ir::Graph graph_;
  DeviceApi& device_;
  RunnerOptions options_;
  LoweredGraph lowered_;
  MemoryPlan plan_;
  DeviceBuffers buffers_;
  std::vector<void*> allocations_;
  std::vector<KernelHandle> kernels_;  // by spec
  std::vector<unsigned> persistent_grid_;  // by spec: the grid x of a persistent kernel
  // Pinned host mirrors of the small things a step exchanges.
  StepState* host_state_ = nullptr;
  SamplingParams* host_params_ = nullptr;
  int32_t* host_inputs_ = nullptr;  // tokens then positions, 2 x max_step_tokens
  bool params_valid_ = false;
  bool state_valid_ = false;
  // Decode ahead (RunnerOptions::decode_ahead): the step replayed before the host read its
  // token — its position, the token it runs on, the pinned slot its state lands in.
  struct Ahead {
    bool in_flight = false;
    int64_t pos = 0;
    int32_t token = 0;
    int slot = 0;
  };
  Ahead ahead_;
  StepState* host_steps_ = nullptr;      // pinned: two decode steps' states, this one's and the one ahead
  EventHandle step_copied_[2] = {-1, -1};  // recorded behind each slot's copy
  int graphs_[3] = {-1, -1, -1};  // by Draw
  // JLLM_TRACE: the step's trace buffer (kernels/kernel_trace.h), records for a 14b step and more.
  static constexpr uint64_t kTraceRecords = uint64_t{1} << 17;
  uint64_t* trace_ = nullptr;
  int64_t filled_ = 0;
  // Set when Relower lost scratch it had freed (no memory for the larger one): every step after
  // fails with it instead of launching kernels on freed memory.
  absl::Status broken_;
};

}  // namespace jllm::cuda
