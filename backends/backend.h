// The one interface the runtime sees backends through. A backend executes a lowered ir::Graph:
// it owns the weights in its own memory, the KV cache storage (element type per layer from
// graph.kv_dtypes), the scratch space and the context's tokens, and runs one step at a time.
//
//   ASSIGN_OR_RETURN(auto be, CreateBackend("auto"));          // runtime/backend_factory.h
//   RETURN_IF_ERROR(be->Load(graph, weights, {.max_context = 4096}));
//   const SamplingParams greedy{.temperature = 0};
//   ASSIGN_OR_RETURN(int32_t next, be->Step(prompt_ids, /*pos0=*/0, {.sampling = &greedy}));
//   ASSIGN_OR_RETURN(next, be->Step({next}, prompt_ids.size(), {.sampling = &greedy}));
//
// A step that samples returns only the token id: logits reach the host only when asked for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/sampling_params.h"
#include "ir/graph.h"

namespace jllm {

// Where a backend gets weight bytes: the GGUF data blob (memory-mapped by the runtime).
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // The bytes of `w` (exactly w.nbytes); an error if they are not available.
  virtual absl::StatusOr<absl::Span<const uint8_t>> Bytes(const ir::WeightRef& w) const = 0;
  // The backend is done with bytes [begin, end) of `w` (it copied them to its own memory): the
  // source may drop them from memory (a Jetson's one memory pool holds CPU and GPU data alike).
  virtual void Release(const ir::WeightRef& /*w*/, uint64_t /*begin*/, uint64_t /*end*/) const {}
};

// A WeightSource over one contiguous blob in memory (weights addressed by WeightRef::offset).
class BlobWeightSource : public WeightSource {
 public:
  explicit BlobWeightSource(absl::Span<const uint8_t> blob) : blob_(blob) {}
  absl::StatusOr<absl::Span<const uint8_t>> Bytes(const ir::WeightRef& w) const override;

 private:
  absl::Span<const uint8_t> blob_;
};

inline constexpr int64_t kDefaultBackendContext = 4096;

struct BackendOptions {
  int64_t max_context = 4096;     // KV cache positions to allocate
  int64_t max_step_tokens = 512;  // the most tokens one Step may take (the prefill chunk)
  int n_threads = 0;              // CPU threads (0: all cores)
};

enum class LogitsRows { kLast, kAll };

struct StepOptions {
  // Sample the next token from the last row with these settings (null: do not sample). The
  // repetition penalty looks at the last repeat_last_n tokens of the context the backend holds.
  const SamplingParams* sampling = nullptr;
  // Copy logits to the host: the last row (kLast) or every row (kAll) of the step.
  std::vector<float>* logits = nullptr;
  LogitsRows rows = LogitsRows::kLast;
};

// One graph input for Evaluate, by name: f32 data for an f32 input, i32 for an i32 one.
struct NamedInput {
  std::string name;
  std::vector<float> f32;
  std::vector<int32_t> i32;
};

// What a device probe measured (Backend::Probe): a table, one row per configuration, its first
// column a label.
struct ProbeTable {
  std::string title;                 // one line: what was measured, how
  std::vector<std::string> columns;  // the label's column first
  struct Row {
    std::string label;
    std::vector<double> values;  // one per column after the label's
  };
  std::vector<Row> rows;
};

// Time spent in one kernel (or op) during a profiled step.
struct KernelTiming {
  std::string name;
  int64_t calls = 0;
  double microseconds = 0;
  int64_t bytes = 0;  // bytes moved by all calls (the cost model's count)
  int64_t flops = 0;
  // In the step as its captured graph runs it, summed over calls (the CUDA backend with
  // JLLM_TRACE=1 at load; 0 otherwise): from the previous kernel's end to this one's (its cost on
  // the step's critical path); from the previous end to its first CTA past the grid wait; a CTA's
  // mean time from the wait to its mark (the GEMV: x staged), from there to its last warp's last
  // weight step (the GEMV's stream) and from there to its end (the GEMV's cut items and results);
  // its last CTA's end after its median one's (of the CTAs that reached their mark: an idle CTA,
  // such as an attention split past a short context, leaves before it).
  double step_us = 0, release_us = 0, staged_us = 0, stream_us = 0, tail_us = 0, spread_us = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // Prepares to run `graph`: checks it (ir::Verify), takes the weights it references, allocates
  // the KV cache for options.max_context positions. Ops it cannot run are an error naming them.
  virtual absl::Status Load(const ir::Graph& graph, const WeightSource& weights,
                            const BackendOptions& options) = 0;

  // One line on what Load set up (device, memory), for a tool's stderr; may be empty.
  virtual std::string Describe() const { return ""; }

  // The context (KV cache positions) to allocate when the user names none: what this backend
  // can hold for `graph` with the rest of `options`, at most the model's context. The default is
  // min(model, kDefaultBackendContext); a GPU backend answers from the memory actually free.
  virtual absl::StatusOr<int64_t> DefaultContext(const ir::Graph& graph, const BackendOptions& options);

  // Runs `tokens` at positions pos0, pos0+1, …; the cache must hold positions [0, pos0) from
  // earlier steps (later positions are overwritten). pos0 + tokens.size() <= max_context and
  // tokens.size() <= max_step_tokens. Returns the sampled token, or -1 without sampling.
  virtual absl::StatusOr<int32_t> Step(absl::Span<const int32_t> tokens, int64_t pos0,
                                       const StepOptions& options) = 0;

  // Waits for work the backend runs ahead of the host — the CUDA backend's next decode step,
  // replayed before the host read the last token (RunnerOptions::decode_ahead) —, so that what
  // follows (a timer's start) does not pay for it; a step waited for this way is dropped (the
  // next Step runs it again). Nothing to wait for by default.
  virtual absl::Status Wait() { return absl::OkStatus(); }

  // Step without sampling, the logits to `logits` (f32 [rows × n_vocab]).
  absl::Status Forward(absl::Span<const int32_t> tokens, int64_t pos0, LogitsRows rows,
                       std::vector<float>* logits);

  // For op tests: runs every node of the loaded graph once for a step of n_tokens tokens after
  // pos0 cached positions (T = n_tokens, S = pos0 + n_tokens), with the graph inputs given by
  // name (each exactly once), and returns the named values' elements (f32, row-major).
  // KV caches persist across calls, as across Steps; a cache value itself cannot be read.
  virtual absl::StatusOr<std::vector<std::vector<float>>> Evaluate(
      int64_t n_tokens, int64_t pos0, absl::Span<const NamedInput> inputs,
      absl::Span<const std::string> outputs) = 0;

  // The memory read bandwidth this backend's device sustains with streaming loads (GB/s), the
  // denominator of the decode ceiling (jllm-bench).
  virtual absl::StatusOr<double> ReadBandwidthGBs() {
    return absl::UnimplementedError(std::string(name()) + " cannot measure its read bandwidth");
  }

  // A measuring aid (jllm-bench --probe NAME): a microbenchmark of the device itself, needing no
  // loaded model. ProbeNames lists the names Probe takes.
  virtual std::vector<std::string> ProbeNames() const { return {}; }
  virtual absl::StatusOr<ProbeTable> Probe(std::string_view probe) {
    (void)probe;
    return absl::UnimplementedError(std::string(name()) + " has no device probes (try --backend cuda)");
  }

  // Backend-specific kernel choices applied to the loaded graph, keeping its weights and KV cache
  // (the CUDA backend: a tuning table as the plan's TUNE section holds it, YAML;
  // backends/cuda/lowering/tuning.h; empty: the built-in choices). jllm-compile --tune times one
  // candidate after another this way instead of loading the model for each.
  virtual absl::Status Retune(std::string_view tuning) {
    (void)tuning;
    return absl::UnimplementedError(std::string(name()) + " has no kernel choices to tune");
  }

  // Runs a step like Step and returns where its time went, by kernel. `sampling`: the draw the
  // step ends with, as StepOptions::sampling (a greedy step may run other kernels than a sampled
  // one: the CUDA backend's logits GEMV then draws the token); null: none, the logits only.
  virtual absl::StatusOr<std::vector<KernelTiming>> Profile(absl::Span<const int32_t> tokens, int64_t pos0,
                                                            const SamplingParams* sampling) {
    (void)tokens, (void)pos0, (void)sampling;
    return absl::UnimplementedError(std::string(name()) + " cannot profile");
  }
};

}  // namespace jllm
