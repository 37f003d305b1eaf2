#include "backends/cuda/lowering/gemv_tuner.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

std::string KnobText(const GemvKnobValues& knobs) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : knobs) parts.push_back(absl::StrCat(name, "=", value));
  return absl::StrJoin(parts, " ");
}

std::string Ms(double s) { return absl::StrFormat("%.4f ms", s * 1e3); }

// The kernels (specs, with their grids) the decode step runs for GEMVs of shape `key`.
absl::StatusOr<std::vector<KernelSpec>> ShapeKernels(const ir::Graph& graph, const TuningTable& table,
                                                     const std::string& key, const LoweringTarget& target) {
  ASSIGN_OR_RETURN(LoweredGraph lg, LowerGraph(graph, &table, target));
  std::vector<KernelSpec> out;
  for (const NodeLowering& nl : lg.nodes) {
    for (const Launch& l : nl.decode) {
      if (l.tune_key == key) out.push_back(lg.specs[l.spec]);
    }
  }
  return out;
}

}  // namespace

std::vector<GemvTuneShape> DecodeGemvShapes(const LoweredGraph& lowered) {
  std::map<std::string, GemvTuneShape> by_key;
  for (const NodeLowering& nl : lowered.nodes) {
    for (const Launch& l : nl.decode) {
      if (l.kind != LaunchKind::kGemv) continue;
      GemvTuneShape& s = by_key[l.tune_key];
      s.key = l.tune_key;
      s.step_bytes += lowered.specs[l.spec].weight_bytes;
      ++s.launches;
    }
  }
  std::vector<GemvTuneShape> out;
  for (auto& [key, s] : by_key) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(),
                   [](const GemvTuneShape& a, const GemvTuneShape& b) { return a.step_bytes > b.step_bytes; });
  return out;
}

const std::vector<GemvTuneDimension>& GemvTuneDimensions() {
  // The choices that measured differently per shape on the H200 (docs/PERF.md): warps a CTA and
  // CTAs an SM (16 in one won on 14b's feed-forward GEMVs and lost on 4b's attention projections),
  // the ring's depth (a small GEMV is ~3 ring steps a warp: a ring that holds them all has one
  // memory latency in its critical path instead of two; a big one pays for deep rings in CTAs an
  // SM) and registers instead, rows an item, unit pairs (lost on 0.6b's small GEMVs), and the K
  // split (won on 0.6b, lost on 4b).
  static const std::vector<GemvTuneDimension> dims = {
      // The last two leave half of each SM to the next kernel (per_sm): its CTAs start beside
      // this one's and fill their rings while it streams, at half the registers a thread.
      {"warps",
       {{{"nw", 8}, {"minb", 2}, {"per_sm", 0}},
        {{"nw", 16}, {"minb", 1}, {"per_sm", 0}},
        {{"nw", 4}, {"minb", 4}, {"per_sm", 0}},
        {{"nw", 16}, {"minb", 2}, {"per_sm", 1}},
        {{"nw", 8}, {"minb", 4}, {"per_sm", 2}}}},
      {"ring", {{{"ring", 2}}, {{"ring", 3}}, {{"ring", 4}}, {{"ring", 6}}, {{"ring", 8}}, {{"ring", 0}}}},
      // Steps a ring slot holds (one bulk copy a row of them): fewer copy instructions a byte.
      {"chunk", {{{"chunk", 1}}, {{"chunk", 2}}, {{"chunk", 4}}}},
      {"rows", {{{"r", 1}}, {{"r", 2}}}},
      {"pairs", {{{"pairs", 0}}, {{"pairs", 3}, {"pairs_min_mib", 0}}}},
      {"split", {{{"ksplit", 1}}, {{"ksplit", 2}}, {{"ksplit", 4}}}},
  };
  return dims;
}

absl::StatusOr<GemvTuneResult> TuneDecodeGemvs(const ir::Graph& graph, const std::string& device,
                                               const DecodeStepTimer& timer, const GemvTuneOptions& options) {
  GemvTuneResult out;
  auto say = [&](std::string line) {
    if (options.progress) options.progress(line);
    out.log.push_back(std::move(line));
  };
  ASSIGN_OR_RETURN(LoweredGraph base, LowerGraph(graph, nullptr, options.target));
  std::vector<GemvTuneShape> shapes = DecodeGemvShapes(base);
  if (options.max_shapes > 0 && static_cast<int>(shapes.size()) > options.max_shapes) shapes.resize(options.max_shapes);

  TuningTable best;
  best.device = device;
  absl::StatusOr<double> t0 = timer(best);
  if (!t0.ok()) {
    return absl::Status(t0.status().code(),
                        absl::StrCat("tuning: the step with the built-in choices fails: ", t0.status().message()));
  }
  say(absl::StrCat("built-in choices: ", Ms(*t0), " a step"));
  ++out.timed;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemvTuneShape& shape = shapes[i];
    // The step drifts (clocks, heat): each shape starts from a fresh time of the best so far.
    double best_s = *t0;
    if (i > 0) {
      absl::StatusOr<double> again = timer(best);
      if (!again.ok()) return again.status();
      best_s = *again;
      ++out.timed;
    }
    say(absl::StrCat("shape ", i + 1, "/", shapes.size(), " '", shape.key, "' (", shape.launches, " a step, ",
                     absl::StrFormat("%.1f", shape.step_bytes / 1e6), " MB): ", Ms(best_s)));
    for (const GemvTuneDimension& dim : GemvTuneDimensions()) {
      GemvKnobValues kept;  // the dimension's winner, if any
      ASSIGN_OR_RETURN(const std::vector<KernelSpec> now, ShapeKernels(graph, best, shape.key, options.target));
      std::vector<std::vector<KernelSpec>> tried = {now};  // the dimension's lowerings timed (or running)
      for (const GemvKnobValues& choice : dim.choices) {
        TuningTable trial = best;
        GemvKnobValues& knobs = trial.gemv[shape.key];
        for (const auto& [name, value] : choice) knobs[name] = value;
        ASSIGN_OR_RETURN(std::vector<KernelSpec> then, ShapeKernels(graph, trial, shape.key, options.target));
        // The same kernels as running, or as a choice timed already (a ring deeper than the GPU's
        // shared memory takes lowers as the deepest that fits): nothing to time.
        if (std::find(tried.begin(), tried.end(), then) != tried.end()) continue;
        tried.push_back(std::move(then));
        absl::StatusOr<double> t = timer(trial);
        ++out.timed;
        if (!t.ok()) {
          ++out.skipped;
          say(absl::StrCat("  ", Sv(dim.name), " ", KnobText(choice), ": cannot run (", t.status().message(), ")"));
          continue;
        }
        const bool better = *t < best_s * (1 - options.min_gain);
        say(absl::StrCat("  ", Sv(dim.name), " ", KnobText(choice), ": ", Ms(*t), better ? " (kept)" : ""));
        if (better) {
          best_s = *t;
          kept = choice;
        }
      }
      for (const auto& [name, value] : kept) best.gemv[shape.key][name] = value;
    }
  }
  // The two answers side by side, timed last.
  TuningTable none;
  none.device = device;
  ASSIGN_OR_RETURN(out.heuristic_s, timer(none));
  ASSIGN_OR_RETURN(out.tuned_s, timer(best));
  out.timed += 2;
  out.table = std::move(best);
  say(absl::StrCat("built-in choices ", Ms(out.heuristic_s), ", tuned ", Ms(out.tuned_s), " a step (",
                   absl::StrFormat("%+.1f %%", 100 * (out.heuristic_s / out.tuned_s - 1)), " tok/s)"));
  return out;
}

}  // namespace jllm::cuda
