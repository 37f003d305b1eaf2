#include "backends/cuda/exec/graph_runner.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "backends/cuda/device_layout.h"
#include "backends/cuda/exec/step_trace.h"
#include "backends/cuda/kernels/launch_geometry.h"
#include "backends/cuda/kernels/kernel_trace.h"
#include "backends/cuda/lowering/weight_repack.h"
#include "backends/sampling.h"
#include "fileio/output_file.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

// Weights stream up through two halves of this much pinned memory (peak host memory while
// loading is this plus what the weight source maps, which it drops behind the copy).
constexpr int64_t kStagingHalf = int64_t{16} << 20;

std::string GB(int64_t bytes) { return absl::StrFormat("%.2f GB", static_cast<double>(bytes) / 1e9); }

}  // namespace

GraphRunner::GraphRunner(const ir::Graph& graph, DeviceApi& device, const RunnerOptions& options)
    : graph_(graph), device_(device), options_(options) {}

GraphRunner::~GraphRunner() {
  if (ahead_.in_flight) (void)device_.Synchronize("the decode step run ahead", options_.step_timeout_seconds);
  if (trace_ != nullptr) device_.SetTraceBuffer(nullptr);
  for (void* p : allocations_) device_.Free(p);
  if (host_state_ != nullptr) device_.FreeHost(host_state_);
  if (host_steps_ != nullptr) device_.FreeHost(host_steps_);
  if (host_params_ != nullptr) device_.FreeHost(host_params_);
  if (host_inputs_ != nullptr) device_.FreeHost(host_inputs_);
}

absl::StatusOr<std::unique_ptr<GraphRunner>> GraphRunner::Create(const ir::Graph& graph,
                                                                 DeviceApi& device,
                                                                 const WeightSource& weights,
                                                                 const RunnerOptions& options) {
  std::unique_ptr<GraphRunner> r(new GraphRunner(graph, device, options));
  ASSIGN_OR_RETURN(r->lowered_, LowerGraph(graph, options.tuning, options.target));
  ASSIGN_OR_RETURN(r->plan_, PlanMemory(graph, r->lowered_, options.max_context, options.max_step_tokens));
  // Check the plan against what the device has before allocating anything.
  ASSIGN_OR_RETURN(const int64_t free_bytes, device.FreeBytes());
  if (r->plan_.total_bytes() + options.reserve_bytes > free_bytes) {
    ASSIGN_OR_RETURN(const int64_t fits,
                     LargestContextThatFits(graph, r->lowered_, options.max_step_tokens, free_bytes,
                                            options.reserve_bytes, options.max_context));
    std::string advice =
        fits > 0 ? absl::StrCat("a context of up to ", fits, " positions fits (-c ", fits, ")")
                 : "the weights alone do not fit";
    const bool f16 = !r->plan_.kv_layers.empty() && r->plan_.kv_layers[0].type == ir::KvDType::kF16;
    if (f16) {
      absl::StrAppend(&advice, "; an int8 KV cache (jllm-compile --passes with kv-dtype: {dtype: int8}) "
                               "needs about half the cache memory");
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "the model does not fit on ", device.properties().name, ": it needs ",
        r->plan_.Summary(), " (plus ", GB(options.reserve_bytes), " kept free) but ",
        GB(free_bytes), " are free; ", advice));
  }
  RETURN_IF_ERROR(r->LoadKernels());
  RETURN_IF_ERROR(r->Allocate());
  RETURN_IF_ERROR(r->UploadWeights(weights));
  RETURN_IF_ERROR(r->Finish("loading the weights"));
  return r;
}

void* GraphRunner::Alloc(size_t bytes, std::string_view what, absl::Status* status) {
  if (!status->ok() || bytes == 0) return nullptr;
  absl::StatusOr<void*> p = device_.Allocate(bytes, what);
  if (!p.ok()) {
    *status = p.status();
    return nullptr;
  }
  allocations_.push_back(*p);
  return *p;
}

void GraphRunner::Release(void* p) {
  if (p == nullptr) return;
  allocations_.erase(std::remove(allocations_.begin(), allocations_.end(), p), allocations_.end());
  device_.Free(p);
}

absl::Status GraphRunner::Relower(const TuningTable* tuning) {
  RETURN_IF_ERROR(broken_);  // its scratch is gone: only a new load helps
  RETURN_IF_ERROR(DrainAhead());  // its kernels and scratch are about to change
  ASSIGN_OR_RETURN(LoweredGraph lowered, LowerGraph(graph_, tuning, options_.target));
  ASSIGN_OR_RETURN(MemoryPlan plan, PlanMemory(graph_, lowered, options_.max_context, options_.max_step_tokens));
  if (plan.weight_offset != plan_.weight_offset || plan.weight_bytes != plan_.weight_bytes ||
      plan.kv_bytes != plan_.kv_bytes) {
    return absl::InternalError("cuda: lowering again moved the weights or the KV cache; load the model again");
  }
  RETURN_IF_ERROR(Finish("finishing the steps before lowering again"));
  // Scratch that must grow is checked against the free memory before anything changes.
  auto growth = [](int64_t now, int64_t then, int64_t unit) { return then > now ? then * unit : 0; };
  const int64_t grow = growth(plan_.arena_bytes, plan.arena_bytes, 1) +
                       growth(plan_.workspace_floats, plan.workspace_floats, 4) +
                       growth(plan_.workspace_counters, plan.workspace_counters, 4);
  if (grow > 0) {
    ASSIGN_OR_RETURN(const int64_t free_bytes, device_.FreeBytes());
    if (grow + options_.reserve_bytes > free_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("cuda: lowering again needs ", GB(grow), " more scratch but ",
                                                       GB(free_bytes), " are free"));
    }
  }
  // The new kernels first (a spec that cannot load leaves the old ones running), then their
  // scratch where it grew.
  std::vector<KernelHandle> old_kernels = std::move(kernels_);
  std::vector<unsigned> old_grid = std::move(persistent_grid_);
  LoweredGraph old_lowered = std::move(lowered_);
  lowered_ = std::move(lowered);
  kernels_.clear();
  persistent_grid_.clear();
  if (absl::Status st = LoadKernels(); !st.ok()) {
    lowered_ = std::move(old_lowered);
    kernels_ = std::move(old_kernels);
    persistent_grid_ = std::move(old_grid);
    return st;
  }
  absl::Status st;
  if (plan.arena_bytes > plan_.arena_bytes) {
    Release(buffers_.arena);
    buffers_.arena = static_cast<uint8_t*>(Alloc(plan.arena_bytes, "activations", &st));
  }
  if (plan.workspace_floats > plan_.workspace_floats) {
    Release(buffers_.workspace);
    buffers_.workspace = static_cast<float*>(Alloc(plan.workspace_floats * 4, "workspace", &st));
  }
  if (plan.workspace_counters > plan_.workspace_counters) {
    Release(buffers_.counters);
    buffers_.counters = static_cast<unsigned*>(Alloc(plan.workspace_counters * 4, "counters", &st));
    if (st.ok()) st = device_.Fill(buffers_.counters, 0, plan.workspace_counters * 4);
  }
  if (!st.ok()) {  // (the check above makes this rare) the old scratch is gone: no more steps
    broken_ = absl::Status(st.code(), absl::StrCat(st.message(), " (lowering again); load the model again"));
    return broken_;
  }
  plan_.value_offset = std::move(plan.value_offset);
  plan_.temp_offset = std::move(plan.temp_offset);
  plan_.arena_bytes = std::max(plan_.arena_bytes, plan.arena_bytes);
  plan_.workspace_floats = std::max(plan_.workspace_floats, plan.workspace_floats);
  plan_.workspace_counters = std::max(plan_.workspace_counters, plan.workspace_counters);
  plan_.other_bytes = std::max(plan_.other_bytes, plan.other_bytes);
  // The captured steps launch the old kernels: freed, and captured again at the next step.
  for (int& g : graphs_) {
    if (g >= 0) device_.DestroyGraph(g);
    g = -1;
  }
  return absl::OkStatus();
}

absl::Status GraphRunner::LoadKernels() {
  std::vector<KernelSpec> to_compile;
  for (const KernelSpec& spec : lowered_.specs) {
    if (options_.cubins == nullptr || options_.cubins->count(spec.ModuleKey()) == 0) to_compile.push_back(spec);
  }
  RETURN_IF_ERROR(device_.Prepare(to_compile));
  for (const KernelSpec& spec : lowered_.specs) {
    std::string_view cubin;
    if (options_.cubins != nullptr) {
      auto it = options_.cubins->find(spec.ModuleKey());
      if (it != options_.cubins->end()) cubin = it->second;
    }
    ASSIGN_OR_RETURN(KernelHandle k, device_.LoadKernel(spec, cubin));
    kernels_.push_back(k);
    unsigned grid = static_cast<unsigned>(spec.grid_x);
    if (spec.persistent) {
      ASSIGN_OR_RETURN(const int per_sm, device_.MaxActiveBlocksPerSm(k, static_cast<int>(spec.threads),
                                                                       static_cast<size_t>(spec.smem)));
      if (per_sm < 1) {
        return absl::ResourceExhaustedError(absl::StrCat(spec.label, " cannot run one CTA per SM on ",
                                                         device_.properties().name));
      }
      grid = static_cast<unsigned>(spec.PersistentGridX(per_sm, device_.properties().sm_count));
    }
    persistent_grid_.push_back(grid);
  }
  return absl::OkStatus();
}

absl::Status GraphRunner::Allocate() {
  absl::Status st;
  const int64_t vocab = lowered_.logits >= 0 ? graph_.type_of(lowered_.logits).shape.dims.back() : 0;
  const int64_t n_ctx = options_.max_context, n_step = options_.max_step_tokens;
  buffers_.weights = static_cast<uint8_t*>(Alloc(plan_.weight_bytes, "weights", &st));
  buffers_.arena = static_cast<uint8_t*>(Alloc(std::max<int64_t>(plan_.arena_bytes, kDeviceAlign), "activations", &st));
  buffers_.caches.resize(graph_.kv_dtypes.size());
  for (const KvLayerShape& l : plan_.kv_layers) {
    LayerCache& c = buffers_.caches[l.layer];
    const size_t bytes = l.n_head_kv * n_ctx * l.head_dim * l.ElementBytes();
    c.k = Alloc(bytes, absl::StrCat("K cache of layer ", l.layer), &st);
    c.v = Alloc(bytes, absl::StrCat("V cache of layer ", l.layer), &st);
    if (l.type == ir::KvDType::kInt8) {
      c.k_scales = static_cast<unsigned short*>(Alloc(l.n_head_kv * n_ctx * 2, "K cache scales", &st));
      c.v_scales = static_cast<unsigned short*>(Alloc(l.n_head_kv * n_ctx * 2, "V cache scales", &st));
    }
  }
  buffers_.tokens = static_cast<int*>(Alloc(n_step * 4, "step tokens", &st));
  buffers_.positions = static_cast<int*>(Alloc(n_step * 4, "step positions", &st));
  buffers_.state = static_cast<StepState*>(Alloc(sizeof(StepState), "step state", &st));
  buffers_.context_tokens = static_cast<int*>(Alloc(n_ctx * 4, "context tokens", &st));
  if (vocab > 0) {
    buffers_.logits_row = static_cast<float*>(Alloc(vocab * 4, "logits", &st));
    buffers_.sample_work = static_cast<float*>(Alloc(vocab * 4, "sampler logits", &st));
    buffers_.sample_weights = static_cast<double*>(Alloc(vocab * 8, "sampler weights", &st));
    buffers_.sample_stamps =
        static_cast<unsigned*>(Alloc((vocab + geometry::kSampleStampsExtra) * 4, "sampler stamps", &st));
    buffers_.sample_params = Alloc(sizeof(SamplingParams), "sampler settings", &st);
  }
  buffers_.workspace = static_cast<float*>(Alloc(plan_.workspace_floats * 4, "workspace", &st));
  buffers_.counters = static_cast<unsigned*>(Alloc(plan_.workspace_counters * 4, "counters", &st));
  buffers_.max_context = static_cast<int>(n_ctx);
  if (!lowered_.specs.empty() && absl::StrContains(lowered_.specs[0].defines, "JLLM_TRACE=")) {
    // JLLM_TRACE (a measuring aid): every launch passes the trace buffer; Profile reads it.
    trace_ = static_cast<uint64_t*>(Alloc((kTraceRecords + 1) * trace::kWords * 8, "trace", &st));
    device_.SetTraceBuffer(trace_);
  }
  RETURN_IF_ERROR(st);
  // Zero what kernels rely on being zero: counters, stamps, state, context.
  if (buffers_.counters) RETURN_IF_ERROR(device_.Fill(buffers_.counters, 0, plan_.workspace_counters * 4));
  if (buffers_.sample_stamps) {
    RETURN_IF_ERROR(device_.Fill(buffers_.sample_stamps, 0, (vocab + geometry::kSampleStampsExtra) * 4));
  }
  RETURN_IF_ERROR(device_.Fill(buffers_.state, 0, sizeof(StepState)));
  if (trace_ != nullptr) RETURN_IF_ERROR(device_.Fill(trace_, 0, trace::kWords * 8));  // no record until asked
  RETURN_IF_ERROR(device_.Fill(buffers_.context_tokens, 0, n_ctx * 4));
  ASSIGN_OR_RETURN(void* hs, device_.AllocateHost(sizeof(StepState), "step state"));
  host_state_ = static_cast<StepState*>(hs);
  *host_state_ = StepState{};
  ASSIGN_OR_RETURN(void* hd, device_.AllocateHost(2 * sizeof(StepState), "decode step states"));
  host_steps_ = static_cast<StepState*>(hd);
  host_steps_[0] = host_steps_[1] = StepState{};
  for (EventHandle& event : step_copied_) {
    ASSIGN_OR_RETURN(event, device_.CreateEvent());
  }
  ASSIGN_OR_RETURN(void* hp, device_.AllocateHost(sizeof(SamplingParams), "sampler settings"));
  host_params_ = static_cast<SamplingParams*>(hp);
  ASSIGN_OR_RETURN(void* hi, device_.AllocateHost(2 * n_step * 4, "step inputs"));
  host_inputs_ = static_cast<int32_t*>(hi);
  return absl::OkStatus();
}

absl::Status GraphRunner::UploadWeights(const WeightSource& weights) {
  if (plan_.weight_bytes == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(void* staging_raw, device_.AllocateHost(2 * kStagingHalf, "weight staging"));
  uint8_t* staging = static_cast<uint8_t*>(staging_raw);
  absl::Status st;
  int half = 0;
  bool pending[2] = {false, false};
  for (size_t wid = 0; wid < graph_.weights.size() && st.ok(); ++wid) {
    if (plan_.weight_offset[wid] < 0) continue;
    const ir::WeightRef& w = graph_.weights[wid];
    absl::StatusOr<absl::Span<const uint8_t>> src = weights.Bytes(w);
    if (!src.ok()) {
      st = src.status();
      break;
    }
    const int64_t rows = w.dim(1) * w.dim(2) * w.dim(3);
    const int64_t src_row = RowBytes(w.type, w.dim(0));
    ASSIGN_OR_RETURN(const int64_t device_bytes, DeviceWeightBytes(w));
    const int64_t dst_row = device_bytes / rows;
    const int64_t chunk_rows = std::max<int64_t>(1, kStagingHalf / dst_row);
    if (dst_row > kStagingHalf) {
      st = absl::UnimplementedError(absl::StrCat("weight '", w.name, "': a row of ", dst_row,
                                                 " bytes exceeds the staging buffer"));
      break;
    }
    for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
      const int64_t n = std::min(chunk_rows, rows - r0);
      if (pending[half]) {
        // The copy out of this half must be done before it is refilled.
        st = device_.Synchronize(absl::StrCat("uploading weight '", w.name, "'"));
        if (!st.ok()) break;
        pending[0] = pending[1] = false;
      }
      uint8_t* buf = staging + half * kStagingHalf;
      st = RepackRows(w, r0, n, src->subspan(r0 * src_row, n * src_row),
                      absl::MakeSpan(buf, n * dst_row));
      if (!st.ok()) break;
      weights.Release(w, r0 * src_row, (r0 + n) * src_row);
      st = device_.CopyToDevice(buffers_.weights + plan_.weight_offset[wid] + r0 * dst_row, buf, n * dst_row);
      if (!st.ok()) break;
      pending[half] = true;
      half ^= 1;
    }
  }
  const absl::Status sync = device_.Synchronize("uploading the weights");
  device_.FreeHost(staging);
  RETURN_IF_ERROR(st);
  return sync;
}

absl::Status GraphRunner::EnsureAllLogits() {
  if (buffers_.logits_all != nullptr || lowered_.logits < 0) return absl::OkStatus();
  const int64_t vocab = graph_.type_of(lowered_.logits).shape.dims.back();
  const int64_t bytes = vocab * options_.max_step_tokens * 4;
  ASSIGN_OR_RETURN(const int64_t free_bytes, device_.FreeBytes());
  if (bytes + options_.reserve_bytes > free_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the logits of every row of a ", options_.max_step_tokens, "-token step need ", GB(bytes),
        " on the GPU but ", GB(free_bytes), " are free; use a smaller prefill chunk"));
  }
  absl::Status st;
  buffers_.logits_all = static_cast<float*>(Alloc(bytes, "logits of every row", &st));
  return st;
}

absl::Status GraphRunner::CheckStep(int64_t n, int64_t pos0) const {
  RETURN_IF_ERROR(broken_);
  if (n < 1) return absl::InvalidArgumentError("cuda: a step with no tokens");
  if (n > options_.max_step_tokens) {
    return absl::InvalidArgumentError(absl::StrCat("cuda: a step of ", n, " tokens exceeds the ",
                                                   options_.max_step_tokens, " it was loaded for"));
  }
  if (pos0 < 0 || pos0 > filled_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cuda: pos0 = ", pos0, ", but the KV cache holds positions [0, ", filled_,
        ") only; a step must continue from them"));
  }
  if (pos0 > options_.max_context - n) {
    return absl::OutOfRangeError(absl::StrCat("cuda: ", n, " tokens at position ", pos0,
                                              " exceed the context of ", options_.max_context,
                                              " positions"));
  }
  return absl::OkStatus();
}

absl::Status GraphRunner::UploadState(int32_t token, int64_t pos) {
  host_state_->token = token;
  host_state_->pos = static_cast<int>(pos);
  host_state_->error = 0;
  RETURN_IF_ERROR(device_.CopyToDevice(buffers_.state, host_state_, sizeof(StepState)));
  state_valid_ = true;
  return absl::OkStatus();
}

absl::Status GraphRunner::CheckSampleable(const SamplingParams* params) const {
  if (params != nullptr && lowered_.sample.spec < 0) {
    return absl::FailedPreconditionError("cuda: the graph has no %logits output to sample from");
  }
  return absl::OkStatus();
}

absl::Status GraphRunner::UploadSampling(const SamplingParams& params) {
  RETURN_IF_ERROR(ValidateSamplingParams(params));
  if (params_valid_ && *host_params_ == params) return absl::OkStatus();
  // The previous step synchronized, so the pinned copy is free to change.
  *host_params_ = params;
  RETURN_IF_ERROR(device_.CopyToDevice(buffers_.sample_params, host_params_, sizeof(SamplingParams)));
  params_valid_ = true;
  return absl::OkStatus();
}

GraphRunner::Draw GraphRunner::DrawOf(const SamplingParams* params, int64_t n) const {
  if (params == nullptr || lowered_.sample.spec < 0) return Draw::kNone;
  const bool greedy_gemv = n == 1 && lowered_.greedy_logits.spec >= 0 && params->GreedyWithoutPenalties();
  return greedy_gemv ? Draw::kGreedyLogits : Draw::kSampler;
}

std::vector<GraphRunner::Planned> GraphRunner::StepLaunches(int64_t n, Draw draw, bool all_rows) const {
  std::vector<Planned> out;
  const Phase phase = n == 1 ? Phase::kDecode : Phase::kPrefill;
  const bool greedy_gemv = draw == Draw::kGreedyLogits && phase == Phase::kDecode;
  auto add = [&](const Launch& l, int node, Phase ph) {
    const std::string& label = lowered_.specs[l.spec].label;
    for (const std::string& omit : options_.omit_kernels) {
      if (!omit.empty() && absl::StrContains(label, omit)) return;
    }
    out.push_back({&l, node, ph});
  };
  for (size_t i = 0; i < lowered_.nodes.size(); ++i) {
    const NodeLowering& nl = lowered_.nodes[i];
    if (greedy_gemv && static_cast<int>(i) == lowered_.greedy_node) {
      add(lowered_.greedy_logits, static_cast<int>(i), phase);  // draws the token itself
      continue;
    }
    for (const Launch& l : phase == Phase::kDecode ? nl.decode : nl.prefill) add(l, static_cast<int>(i), phase);
    if (all_rows) {
      for (const Launch& l : nl.prefill_all_rows) add(l, static_cast<int>(i), Phase::kPrefillAllRows);
    }
  }
  if (draw != Draw::kNone && !greedy_gemv) add(lowered_.sample, -1, phase);
  return out;
}

absl::Status GraphRunner::Run(const Planned& p, int64_t n) {
  const KernelSpec& spec = lowered_.specs[p.launch->spec];
  ASSIGN_OR_RETURN(std::vector<uint8_t> args,
                   BindArgs(graph_, plan_, buffers_, p.node, *p.launch, p.phase, n,
                            [this](const TileBox& box, TileMap* out) { return device_.EncodeTileMap(box, out); }));
  const unsigned grid_x = spec.persistent ? persistent_grid_[p.launch->spec] : static_cast<unsigned>(spec.GridX(n));
  const Dim3 grid{grid_x, static_cast<unsigned>(spec.GridY(n)), 1};
  const Dim3 block{static_cast<unsigned>(spec.threads), 1, 1};
  const std::string what = p.node >= 0 ? absl::StrCat(spec.label, " (node ", p.node, ")") : spec.label;
  absl::Status st = device_.Launch(kernels_[p.launch->spec], grid, block, static_cast<size_t>(spec.smem),
                                   args.data(), args.size());
  if (!st.ok()) return absl::Status(st.code(), absl::StrCat(what, ": ", st.message()));
  if (options_.debug_sync) return device_.Synchronize(what, options_.step_timeout_seconds);
  return absl::OkStatus();
}

absl::Status GraphRunner::RunAll(const std::vector<Planned>& launches, int64_t n) {
  for (const Planned& p : launches) RETURN_IF_ERROR(Run(p, n));
  return absl::OkStatus();
}

absl::Status GraphRunner::CopyStateToSlot(int slot) {
  RETURN_IF_ERROR(device_.CopyToHost(&host_steps_[slot], buffers_.state, sizeof(StepState)));
  return device_.Record(step_copied_[slot]);
}

absl::Status GraphRunner::DrainAhead() {
  if (!ahead_.in_flight) return absl::OkStatus();
  ahead_.in_flight = false;
  state_valid_ = false;
  RETURN_IF_ERROR(Finish("the decode step run ahead"));
  *host_state_ = host_steps_[ahead_.slot];  // what the device state holds now
  state_valid_ = (host_state_->error & kStepErrorTokenRange) == 0;
  return absl::OkStatus();
}

absl::Status GraphRunner::Finish(std::string_view what) {
  absl::Status st = device_.Synchronize(what, options_.step_timeout_seconds);
  if (!st.ok() && !options_.debug_sync) {
    return absl::Status(st.code(), absl::StrCat(st.message(), " (set JLLM_CUDA_SYNC=1 to find the kernel)"));
  }
  return st;
}

absl::StatusOr<GraphHandle> GraphRunner::DecodeGraph(Draw draw) {
  int& graph = graphs_[static_cast<int>(draw)];
  if (graph < 0) {
    RETURN_IF_ERROR(device_.BeginCapture());
    absl::Status st = RunAll(StepLaunches(1, draw, false), 1);
    absl::StatusOr<GraphHandle> g = device_.EndCapture();
    RETURN_IF_ERROR(st);
    RETURN_IF_ERROR(g.status());
    graph = *g;
  }
  return graph;
}

absl::StatusOr<int32_t> GraphRunner::Step(absl::Span<const int32_t> tokens, int64_t pos0,
                                          const StepOptions& options) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  RETURN_IF_ERROR(CheckStep(n, pos0));
  RETURN_IF_ERROR(CheckSampleable(options.sampling));
  const bool sample = options.sampling != nullptr;
  const Draw draw = DrawOf(options.sampling, n);
  // The step in flight ahead is this one if it continues from the last: the token the last
  // step sampled at the next position, with the same sampler settings and no logits to copy.
  const bool claims_ahead = ahead_.in_flight && n == 1 && sample && options.logits == nullptr &&
                            pos0 == ahead_.pos && tokens[0] == ahead_.token && params_valid_ &&
                            *host_params_ == *options.sampling;
  if (ahead_.in_flight && !claims_ahead) RETURN_IF_ERROR(DrainAhead());
  if (sample) RETURN_IF_ERROR(UploadSampling(*options.sampling));
  const bool all_rows = options.logits != nullptr && options.rows == LogitsRows::kAll && n > 1;
  if (all_rows) RETURN_IF_ERROR(EnsureAllLogits());
  filled_ = std::min(filled_, pos0);  // the step overwrites the cache from pos0 on

  if (n == 1) {
    int slot = 0;  // the pinned slot this step's state lands in
    if (claims_ahead) {
      slot = ahead_.slot;
      ahead_.in_flight = false;
    } else {
      // Decode: the state already holds the token and position when the host feeds back the
      // last sample (the common case); otherwise 16 bytes go up first.
      if (!state_valid_ || host_state_->token != tokens[0] || host_state_->pos != pos0) {
        RETURN_IF_ERROR(UploadState(tokens[0], pos0));
      }
      state_valid_ = false;  // the step moves the device state on (known again once it is read)
      if (options_.debug_sync) {
        RETURN_IF_ERROR(RunAll(StepLaunches(1, draw, false), 1));
      } else {
        ASSIGN_OR_RETURN(const GraphHandle graph, DecodeGraph(draw));
        RETURN_IF_ERROR(device_.Replay(graph));
      }
      RETURN_IF_ERROR(CopyStateToSlot(slot));
    }
    if (options.logits != nullptr) {  // (never with a step ahead: it would overwrite the row)
      const int64_t vocab = graph_.type_of(lowered_.logits).shape.dims.back();
      options.logits->resize(vocab);
      RETURN_IF_ERROR(device_.CopyToHost(options.logits->data(), buffers_.logits_row, vocab * 4));
    }
    // The next step, on whatever token this one samples, while the host reads it.
    if (options_.decode_ahead && sample && options.logits == nullptr && !options_.debug_sync &&
        pos0 + 1 <= options_.max_context - 1) {
      ASSIGN_OR_RETURN(const GraphHandle graph, DecodeGraph(draw));
      RETURN_IF_ERROR(device_.Replay(graph));
      RETURN_IF_ERROR(CopyStateToSlot(slot ^ 1));
      ahead_ = Ahead{true, pos0 + 1, 0, slot ^ 1};
    }
    absl::Status st = device_.WaitEvent(step_copied_[slot], "a decode step", options_.step_timeout_seconds);
    if (!st.ok()) {
      ahead_.in_flight = false;
      state_valid_ = false;
      return absl::Status(st.code(), absl::StrCat(st.message(), " (set JLLM_CUDA_SYNC=1 to find the kernel)"));
    }
    *host_state_ = host_steps_[slot];
    state_valid_ = !ahead_.in_flight;  // with a step ahead the device state moves on
    ahead_.token = host_state_->token;
    if (host_state_->error & kStepErrorTokenRange) {
      RETURN_IF_ERROR(DrainAhead());
      state_valid_ = false;
      return absl::OutOfRangeError("cuda: a token id of the step is outside the vocabulary");
    }
    filled_ = pos0 + 1;
    return sample ? host_state_->token : -1;
  } else {
    for (int64_t t = 0; t < n; ++t) {
      host_inputs_[t] = tokens[t];
      host_inputs_[options_.max_step_tokens + t] = static_cast<int32_t>(pos0 + t);
    }
    RETURN_IF_ERROR(device_.CopyToDevice(buffers_.tokens, host_inputs_, n * 4));
    RETURN_IF_ERROR(device_.CopyToDevice(buffers_.positions, host_inputs_ + options_.max_step_tokens, n * 4));
    RETURN_IF_ERROR(UploadState(tokens[n - 1], pos0 + n - 1));
    RETURN_IF_ERROR(RunAll(StepLaunches(n, draw, all_rows), n));
  }
  RETURN_IF_ERROR(device_.CopyToHost(host_state_, buffers_.state, sizeof(StepState)));
  if (options.logits != nullptr) {
    const int64_t vocab = graph_.type_of(lowered_.logits).shape.dims.back();
    const int64_t rows = all_rows ? n : 1;
    options.logits->resize(rows * vocab);
    RETURN_IF_ERROR(device_.CopyToHost(options.logits->data(), all_rows ? buffers_.logits_all : buffers_.logits_row,
                                       rows * vocab * 4));
  }
  RETURN_IF_ERROR(Finish(n == 1 ? "a decode step" : absl::StrCat("a prefill step of ", n, " tokens")));
  state_valid_ = true;
  if (host_state_->error & kStepErrorTokenRange) {
    state_valid_ = false;
    return absl::OutOfRangeError("cuda: a token id of the step is outside the vocabulary");
  }
  filled_ = pos0 + n;
  return sample ? host_state_->token : -1;
}

absl::StatusOr<std::vector<std::vector<float>>> GraphRunner::Evaluate(
    int64_t n_tokens, int64_t pos0, absl::Span<const NamedInput> inputs,
    absl::Span<const std::string> outputs) {
  RETURN_IF_ERROR(DrainAhead());
  RETURN_IF_ERROR(CheckStep(n_tokens, pos0));
  filled_ = std::min(filled_, pos0);
  const Phase phase = n_tokens == 1 ? Phase::kDecode : Phase::kPrefill;
  int32_t token = 0, pos = static_cast<int32_t>(pos0);
  for (const NamedInput& in : inputs) {
    const std::optional<ir::ValueId> v = graph_.FindValue(in.name);
    if (!v) return absl::NotFoundError(absl::StrCat("cuda: no graph input %", in.name));
    const bool is_tokens = in.name == ir::kTokensInput, is_pos = in.name == ir::kPositionsInput;
    if (is_tokens || is_pos) {
      if (static_cast<int64_t>(in.i32.size()) != n_tokens) {
        return absl::InvalidArgumentError(absl::StrCat("cuda: %", in.name, " needs ", n_tokens, " ids"));
      }
      std::copy(in.i32.begin(), in.i32.end(), host_inputs_ + (is_pos ? options_.max_step_tokens : 0));
      (is_tokens ? token : pos) = in.i32.back();
      RETURN_IF_ERROR(device_.CopyToDevice(is_tokens ? buffers_.tokens : buffers_.positions,
                                           host_inputs_ + (is_pos ? options_.max_step_tokens : 0),
                                           n_tokens * 4));
      continue;
    }
    if (plan_.value_offset[*v] < 0) return absl::InvalidArgumentError(absl::StrCat("cuda: %", in.name, " cannot be fed"));
    RETURN_IF_ERROR(device_.CopyToDevice(buffers_.arena + plan_.value_offset[*v], in.f32.data(), in.f32.size() * 4));
  }
  RETURN_IF_ERROR(UploadState(token, pos));
  std::vector<Planned> launches;
  for (size_t i = 0; i < lowered_.nodes.size(); ++i) {
    const NodeLowering& nl = lowered_.nodes[i];
    const bool logits_node = !nl.prefill_all_rows.empty();
    const std::vector<Launch>& ls = phase == Phase::kDecode ? nl.decode : logits_node ? nl.prefill_all_rows : nl.prefill;
    const Phase ph = phase == Phase::kPrefill && logits_node ? Phase::kPrefillAllRows : phase;
    for (const Launch& l : ls) launches.push_back({&l, static_cast<int>(i), ph});
  }
  if (phase == Phase::kPrefill && lowered_.logits >= 0) RETURN_IF_ERROR(EnsureAllLogits());
  RETURN_IF_ERROR(RunAll(launches, n_tokens));
  RETURN_IF_ERROR(Finish("evaluating the graph"));
  std::vector<std::vector<float>> out;
  for (const std::string& name : outputs) {
    const std::optional<ir::ValueId> v = graph_.FindValue(name);
    if (!v) return absl::NotFoundError(absl::StrCat("cuda: no value named %", name));
    int64_t elems = 1;
    for (int64_t d : graph_.type_of(*v).shape.dims) elems *= d == ir::kDimT ? n_tokens : d;
    const void* src = nullptr;
    if (*v == lowered_.logits) {
      src = phase == Phase::kDecode ? static_cast<const void*>(buffers_.logits_row) : buffers_.logits_all;
    } else if (plan_.value_offset[*v] >= 0) {
      src = buffers_.arena + plan_.value_offset[*v];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("cuda: %", name, " cannot be read"));
    }
    std::vector<float> host(elems);
    RETURN_IF_ERROR(device_.CopyToHost(host.data(), src, elems * 4));
    RETURN_IF_ERROR(Finish("reading results"));
    out.push_back(std::move(host));
  }
  filled_ = pos0 + n_tokens;
  state_valid_ = false;
  return out;
}

absl::StatusOr<std::vector<KernelTiming>> GraphRunner::Profile(absl::Span<const int32_t> tokens, int64_t pos0,
                                                              const SamplingParams* sampling) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  RETURN_IF_ERROR(DrainAhead());
  RETURN_IF_ERROR(CheckStep(n, pos0));
  RETURN_IF_ERROR(CheckSampleable(sampling));
  if (sampling != nullptr) RETURN_IF_ERROR(UploadSampling(*sampling));
  filled_ = std::min(filled_, pos0);
  if (n == 1) {
    RETURN_IF_ERROR(UploadState(tokens[0], pos0));
  } else {
    for (int64_t t = 0; t < n; ++t) {
      host_inputs_[t] = tokens[t];
      host_inputs_[options_.max_step_tokens + t] = static_cast<int32_t>(pos0 + t);
    }
    RETURN_IF_ERROR(device_.CopyToDevice(buffers_.tokens, host_inputs_, n * 4));
    RETURN_IF_ERROR(device_.CopyToDevice(buffers_.positions, host_inputs_ + options_.max_step_tokens, n * 4));
    RETURN_IF_ERROR(UploadState(tokens[n - 1], pos0 + n - 1));
  }
  const Draw draw = DrawOf(sampling, n);
  const std::vector<Planned> launches = StepLaunches(n, draw, false);
  // A warm-up pass first: a kernel's first launch loads its module (CUDA loads lazily), which
  // is not the kernel's time.
  RETURN_IF_ERROR(RunAll(launches, n));
  RETURN_IF_ERROR(Finish("warming up the profiled step"));
  std::vector<EventHandle> events;
  ASSIGN_OR_RETURN(EventHandle e0, device_.CreateEvent());
  events.push_back(e0);
  RETURN_IF_ERROR(device_.Record(e0));
  for (const Planned& p : launches) {
    RETURN_IF_ERROR(Run(p, n));
    ASSIGN_OR_RETURN(EventHandle e, device_.CreateEvent());
    RETURN_IF_ERROR(device_.Record(e));
    events.push_back(e);
  }
  RETURN_IF_ERROR(device_.CopyToHost(host_state_, buffers_.state, sizeof(StepState)));
  RETURN_IF_ERROR(Finish("a profiled step"));
  state_valid_ = true;
  filled_ = pos0 + n;
  // Positions a token of this step attends to, summed over its tokens.
  const int64_t attended = n * pos0 + n * (n + 1) / 2;
  std::vector<KernelTiming> out;
  for (size_t i = 0; i < launches.size(); ++i) {
    const KernelSpec& spec = lowered_.specs[launches[i].launch->spec];
    ASSIGN_OR_RETURN(const float ms, device_.ElapsedMs(events[i], events[i + 1]));
    auto it = std::find_if(out.begin(), out.end(), [&](const KernelTiming& t) { return t.name == spec.label; });
    if (it == out.end()) it = out.insert(out.end(), KernelTiming{spec.label});
    ++it->calls;
    it->microseconds += ms * 1000.0;
    it->bytes += spec.weight_bytes + spec.bytes_per_token * n + spec.kv_bytes_per_position * attended;
    it->flops += spec.flops_per_token * n;
  }
  if (trace_ != nullptr && n == 1 && !options_.debug_sync) {
    RETURN_IF_ERROR(TraceDecodeStep(launches, draw, tokens[0], pos0, out));
  }
  return out;
}

absl::Status GraphRunner::TraceDecodeStep(const std::vector<Planned>& launches, Draw draw, int32_t token,
                                          int64_t pos, std::vector<KernelTiming>& timings) {
  // The step again as the decode graph replays it (programmatic dependent launch overlapping its
  // kernels), every CTA stamping its record.
  ASSIGN_OR_RETURN(const GraphHandle graph, DecodeGraph(draw));
  RETURN_IF_ERROR(UploadState(token, pos));
  const uint64_t header[2] = {0, kTraceRecords};
  RETURN_IF_ERROR(device_.CopyToDevice(trace_, header, sizeof(header)));
  RETURN_IF_ERROR(device_.Replay(graph));
  std::vector<uint64_t> buffer((kTraceRecords + 1) * trace::kWords);
  RETURN_IF_ERROR(device_.CopyToHost(buffer.data(), trace_, buffer.size() * 8));
  RETURN_IF_ERROR(device_.Fill(trace_, 0, trace::kWords * 8));  // no capacity: the steps after write none
  RETURN_IF_ERROR(Finish("a traced decode step"));
  state_valid_ = false;
  std::vector<TracedLaunch> traced;
  for (const Planned& p : launches) {
    const KernelSpec& spec = lowered_.specs[p.launch->spec];
    const int64_t x = spec.persistent ? persistent_grid_[p.launch->spec] : spec.GridX(1);
    traced.push_back({p.launch->spec + 1, static_cast<int>(x * spec.GridY(1))});
  }
  ASSIGN_OR_RETURN(const std::vector<LaunchTrace> t, ReadStepTrace(buffer, traced));
  for (size_t i = 0; i < launches.size(); ++i) {
    const std::string& label = lowered_.specs[launches[i].launch->spec].label;
    auto it = std::find_if(timings.begin(), timings.end(), [&](const KernelTiming& k) { return k.name == label; });
    if (it == timings.end()) continue;
    it->step_us += t[i].step / 1000;
    it->release_us += std::max(0.0, t[i].release) / 1000;
    it->staged_us += std::max(0.0, t[i].staged) / 1000;
    it->stream_us += std::max(0.0, t[i].stream) / 1000;
    it->tail_us += std::max(0.0, t[i].tail) / 1000;
    it->spread_us += (t[i].last_exit - t[i].median_exit) / 1000;
  }
  if (options_.trace_dump.empty()) return absl::OkStatus();
  std::string rows = "launch\tlabel\tx\ty\tsm\tentry_ns\twait_ns\tmark_ns\tstreamed_ns\texit_ns\n";
  for (size_t i = 0; i < launches.size(); ++i) {
    const std::string& label = lowered_.specs[launches[i].launch->spec].label;
    for (const CtaTrace& c : t[i].ctas) {
      absl::StrAppendFormat(&rows, "%d\t%s\t%d\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", i, label, c.x, c.y, c.sm,
                            c.entry, c.wait, c.mark, c.streamed, c.exit);
    }
  }
  absl::Status st = fileio::WriteFileAtomically(options_.trace_dump, rows);
  if (!st.ok()) return absl::Status(st.code(), absl::StrCat("JLLM_TRACE_DUMP: ", st.message()));
  return absl::OkStatus();
}

}  // namespace jllm::cuda
