// Per-shape launch choices for the decode GEMVs (issue 11, "per-shape tuning"): which knob
// values gemv.cu is lowered with, per GEMV shape, measured on one GPU (`jllm-compile --tune`)
// or written by hand (`jllm-compile --tuning FILE`), and carried in the plan's TUNE section so
// that the backend lowers exactly what was measured. A shape the table does not name keeps the
// lowering's heuristics (lowering.cc); environment variables still override both for A/B runs,
// and JLLM_TUNING=0 ignores the table.
//
// The text form is YAML:
//
//   device: "NVIDIA H200 (sm_90, 132 SMs)"     # where it was measured; empty: any GPU
//   gemv:
//     "q4_K+q4_K 9728+9728x2560 +norm +swiglu": {nw: 16, minb: 1}
//     "q6_K 151936x2560": {ring: 4}
//
// A shape key is the GEMV's member types, rows and columns and its fusions (GemvShapeKey); a
// knob is one of GemvKnobs().
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace jllm::cuda {

// A decode GEMV knob: its name in a tuning table, the environment variable that overrides it
// (the A/B switch of docs/PERF.md), and the values gemv.cu takes: [min, max] less `hole`.
struct GemvKnob {
  std::string_view name;
  std::string_view env;
  int64_t min = 0;
  int64_t max = 0;
  int64_t hole = -1;  // a value inside [min, max] that is not allowed (-1: none)
  std::string_view meaning;
  bool Allows(int64_t v) const { return v >= min && v <= max && v != hole; }
  std::string Range() const;  // "in 0 or 2..16", "in 1..32", ">= 1": for messages
};

// Every knob, in the order tables print them.
const std::vector<GemvKnob>& GemvKnobs();
// The knob called `name`, or null.
const GemvKnob* FindGemvKnob(std::string_view name);

// The key of a GEMV in a table: "q4_K+q4_K+q6_K 4096+1024+1024x2560 +norm" — member types,
// member rows x columns, then the fusions (+norm, +residual, +swiglu). No knob changes it.
std::string GemvShapeKey(const std::vector<std::string>& types, const std::vector<int64_t>& rows,
                         int64_t cols, bool norm, bool residual, bool swiglu);

using GemvKnobValues = std::map<std::string, int64_t>;  // knob name -> value

struct TuningTable {
  std::string device;  // DeviceIdentity() of the GPU it was measured on; empty: any
  std::map<std::string, GemvKnobValues> gemv;  // shape key -> knobs
  bool empty() const { return gemv.empty(); }
  bool operator==(const TuningTable&) const = default;
};

// The YAML text above (deterministic: keys sorted).
std::string TuningToYaml(const TuningTable& table);
// Parses the YAML text; `source` names it in errors ("tuning.yaml", "the plan's TUNE section").
// Unknown keys or knobs, values outside a knob's range and repeated entries are errors naming
// the shape and the knob.
absl::StatusOr<TuningTable> ParseTuningYaml(std::string_view text, std::string_view source);

}  // namespace jllm::cuda
