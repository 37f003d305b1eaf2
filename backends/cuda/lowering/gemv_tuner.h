// The search behind `jllm-compile --tune`: per decode GEMV shape, which knob values (tuning.h)
// make the whole decode step fastest on this GPU. Whole steps are timed, not kernels alone: a
// GEMV's shape changes how its neighbours overlap with it under programmatic dependent launch
// (docs/PERF.md, "K splits for balance, and 16 warps a CTA": the parts did not add up to the
// whole). Plain logic over the lowering: the caller supplies the timer that runs a step on the
// GPU, so the search is tested on the CPU with a model of the costs.
//
// Coordinate descent: shapes in order of the weight bytes a step reads through them; for each,
// each dimension of GemvTuneDimensions() in turn, each choice applied on top of the shape's best
// so far, kept when the step gets faster by more than `min_gain`. A choice that lowers to the
// same kernels as the current best is not timed; one the GPU cannot run (too much shared memory,
// a compile error) is skipped, and said so.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/lowering/lowering.h"
#include "backends/cuda/lowering/tuning.h"
#include "ir/graph.h"

namespace jllm::cuda {

struct GemvTuneShape {
  std::string key;           // GemvShapeKey
  int64_t step_bytes = 0;    // weight bytes a decode step reads through GEMVs of this shape
  int launches = 0;          // decode GEMVs of this shape a step
};

// The decode GEMV shapes of `lowered`, the most bytes a step first (ties: by key).
std::vector<GemvTuneShape> DecodeGemvShapes(const LoweredGraph& lowered);

// What the search tries for a shape: dimensions of alternative knob settings.
struct GemvTuneDimension {
  std::string_view name;
  std::vector<GemvKnobValues> choices;
};
const std::vector<GemvTuneDimension>& GemvTuneDimensions();

// Seconds per decode step with `table`; an error means the GPU cannot run that lowering.
using DecodeStepTimer = std::function<absl::StatusOr<double>(const TuningTable& table)>;

struct GemvTuneOptions {
  double min_gain = 0.01;  // a choice must save at least this fraction of the step
  int max_shapes = 0;      // tune only the N shapes with the most bytes (0: all)
  std::function<void(const std::string& line)> progress;  // a line per timing (may be empty)
  LoweringTarget target;   // the GPU the timer runs on (its shared memory bounds the choices)
};

struct GemvTuneResult {
  TuningTable table;       // the shapes whose best choice is not the heuristics'
  double heuristic_s = 0;  // seconds per step without a table (timed last, beside tuned_s)
  double tuned_s = 0;      // with `table`
  int timed = 0;           // candidate lowerings timed
  int skipped = 0;         // candidates the GPU could not run
  std::vector<std::string> log;  // what was tried, one line each
};

// Tunes the decode GEMVs of `graph` for the GPU `device` (DeviceIdentity; recorded in the
// table). Errors: the graph does not lower, or the timer fails on the heuristics themselves.
absl::StatusOr<GemvTuneResult> TuneDecodeGemvs(const ir::Graph& graph, const std::string& device,
                                               const DecodeStepTimer& timer, const GemvTuneOptions& options);

}  // namespace jllm::cuda
