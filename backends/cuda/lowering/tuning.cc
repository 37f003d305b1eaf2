#include "backends/cuda/lowering/tuning.h"

#include <yaml-cpp/yaml.h>

#include <limits>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"

namespace jllm::cuda {
namespace {

constexpr int64_t kAny = std::numeric_limits<int32_t>::max();

absl::Status TuningError(std::string_view source, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", Sv(what)));
}

std::string Where(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return m.line < 0 ? "" : absl::StrCat(" (line ", m.line + 1, ")");
}

std::string KnobNames() {
  std::vector<std::string> names;
  for (const GemvKnob& k : GemvKnobs()) names.emplace_back(k.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

std::string GemvKnob::Range() const {
  if (max == kAny) return absl::StrCat(">= ", min);  // (no knob with a hole is unbounded)
  if (hole == min) return absl::StrCat("in ", min + 1, "..", max);
  if (hole > min) {
    return absl::StrCat("in ", min, hole - 1 > min ? absl::StrCat("..", hole - 1) : "", " or ", hole + 1,
                        hole + 1 < max ? absl::StrCat("..", max) : "");
  }
  return absl::StrCat("in ", min, "..", max);
}

const std::vector<GemvKnob>& GemvKnobs() {
  // The ranges are what gemv.cu's static_asserts and the lowering accept.
  static const std::vector<GemvKnob> knobs = {
      {"nw", "JLLM_GEMV_NW", 1, 32, -1, "warps a CTA"},
      {"minb", "JLLM_GEMV_MINB", 1, 32, -1, "CTAs an SM the registers are capped for"},
      {"r", "JLLM_GEMV_R", 1, 8, -1, "rows a warp item reads (16-byte units; pairs take 4)"},
      {"ring", "JLLM_GEMV_RING", 0, 16, 1, "shared-memory slots a warp (0: registers)"},
      {"deep_ring_min_mib", "JLLM_GEMV_DEEP_RING_MIN_MIB", 0, 1 << 20, -1,
       "a ring of 4 on GEMVs this large (ring unset; with the size rule)"},
      {"chunk", "JLLM_GEMV_CHUNK", 1, 8, -1, "unit steps a ring slot holds, one copy a row (ring > 0)"},
      {"early_slots", "JLLM_GEMV_EARLY_SLOTS", 0, 15, -1,
       "ring chunks a warp issues before the grid wait, the rest after its loads of x (ring > 0; at most ring - 1)"},
      {"ahead", "JLLM_GEMV_AHEAD", 1, 15, -1,
       "ring chunks a warp keeps in flight once it streams (ring > 0; at most ring - 1; fewer: the rest fill at the start)"},
      {"l2_early", "JLLM_GEMV_L2_EARLY", 0, 15, -1,
       "ring chunks past the early ones asked of L2 before the grid wait (tensor maps)"},
      {"tail_prefetch", "JLLM_GEMV_TAIL_PREFETCH", 0, 1, -1,
       "the ring chunks' scale-tail lines (q8_0, q6_K) asked into L1 as they are issued"},
      {"d_ahead", "JLLM_GEMV_D_AHEAD", 0, 1, -1,
       "the scale-tail d values (q8_0, q6_K) of a warp's next unit step loaded during this step's dots (ring > 0)"},
      {"depth", "JLLM_GEMV_DEPTH", 1, 8, -1, "steps ahead in registers (ring 0)"},
      {"bulk", "JLLM_GEMV_BULK", 0, 1, -1, "ring filled by bulk copies (sm_90) or cp.async"},
      {"tma", "JLLM_GEMV_TMA", 0, 1, -1, "bulk copies through a tensor map, one a matrix a slot (sm_90)"},
      {"spread", "JLLM_GEMV_SPREAD", 0, 1, -1, "warps take equal step ranges (1) or whole items"},
      {"weighted", "JLLM_GEMV_WEIGHTED", 0, 1, -1, "CTA ranges of equal bytes (1) or items, in groups of several types"},
      {"aligned", "JLLM_GEMV_ALIGNED", 0, 1, -1,
       "CTA ranges inside one member each, CTAs shared among the members by bytes (1; no K split)"},
      {"slot_skip", "JLLM_GEMV_SLOT_SKIP", 0, 1, -1,
       "x staged only in the slots of the member types a CTA reads (1; groups of several types)"},
      {"late_norm", "JLLM_GEMV_LATE_NORM", 0, 1, -1, "the RMS scale applied to the results"},
      {"gamma_early", "JLLM_GEMV_GAMMA_EARLY", 0, 1, -1, "the norm's gamma loaded before the grid wait"},
      {"lazy_scale", "JLLM_GEMV_LAZY_SCALE", 0, 1, -1, "the RMS scale computed at a warp's first result (late_norm)"},
      {"x_lanes", "JLLM_GEMV_X_LANES", 1, 4, 3, "lanes a run of 16 quantized columns of x is staged by"},
      {"pairs", "JLLM_GEMV_PAIRS", 0, 3, -1, "mask of the K-quants read as 64-element pairs"},
      {"pairs_min_mib", "JLLM_GEMV_PAIRS_MIN_MIB", 0, 1 << 20, -1, "pairs only on GEMVs this large"},
      {"items", "JLLM_GEMV_ITEMS", 1, kAny, -1, "items a warp x 10 the K split aims at"},
      {"ksplit", "JLLM_GEMV_KSPLIT", 1, kAny, -1, "column splits (clamped to K / 256)"},
      {"grid", "JLLM_GEMV_GRID", 0, 1 << 20, -1, "CTAs at most (0: as many as fit)"},
      {"per_sm", "JLLM_GEMV_PER_SM", 0, 32, -1, "CTAs an SM at most, the rest left to the next kernel (0: all that fit)"},
  };
  return knobs;
}

const GemvKnob* FindGemvKnob(std::string_view name) {
  for (const GemvKnob& k : GemvKnobs()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string GemvShapeKey(const std::vector<std::string>& types, const std::vector<int64_t>& rows,
                         int64_t cols, bool norm, bool residual, bool swiglu) {
  return absl::StrCat(absl::StrJoin(types, "+"), " ", absl::StrJoin(rows, "+"), "x", cols, norm ? " +norm" : "",
                      residual ? " +residual" : "", swiglu ? " +swiglu" : "");
}

std::string TuningToYaml(const TuningTable& table) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "device" << YAML::Value << YAML::DoubleQuoted << table.device;
  out << YAML::Key << "gemv" << YAML::Value << YAML::BeginMap;
  for (const auto& [shape, knobs] : table.gemv) {
    out << YAML::Key << YAML::DoubleQuoted << shape << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const GemvKnob& k : GemvKnobs()) {  // the table's order, not the alphabet's
      if (auto it = knobs.find(std::string(k.name)); it != knobs.end()) {
        out << YAML::Key << std::string(k.name) << YAML::Value << it->second;
      }
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  return absl::StrCat("# jllm decode tuning: knob values per GEMV shape (jllm-compile --tune)\n", out.c_str(), "\n");
}

absl::StatusOr<TuningTable> ParseTuningYaml(std::string_view text, std::string_view source) {
  TuningTable table;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (root.IsNull()) return table;
    if (!root.IsMap()) return TuningError(source, "expected a map with the keys 'device' and 'gemv'");
    std::set<std::string> top_seen;
    for (const auto& top : root) {
      const std::string key = top.first.IsScalar() ? top.first.Scalar() : "";
      if (key != "device" && key != "gemv") {
        return TuningError(source, absl::StrCat("unknown key '", key, "'", Where(top.first), " (valid: device, gemv)"));
      }
      if (!top_seen.insert(key).second) return TuningError(source, absl::StrCat("'", key, "' is given twice"));
      if (key == "device") {
        if (!top.second.IsScalar() && !top.second.IsNull()) {
          return TuningError(source, absl::StrCat("'device' must be a string", Where(top.second)));
        }
        table.device = top.second.IsNull() ? "" : top.second.Scalar();
        continue;
      }
      if (top.second.IsNull()) continue;
      if (!top.second.IsMap()) {
        return TuningError(source, absl::StrCat("'gemv' must map GEMV shapes to knobs", Where(top.second)));
      }
      for (const auto& entry : top.second) {
        const std::string shape = entry.first.IsScalar() ? entry.first.Scalar() : "";
        if (shape.empty()) return TuningError(source, absl::StrCat("a GEMV shape must be a string", Where(entry.first)));
        if (table.gemv.count(shape) != 0) {
          return TuningError(source, absl::StrCat("GEMV shape '", shape, "' is given twice"));
        }
        GemvKnobValues& knobs = table.gemv[shape];
        if (!entry.second.IsMap()) {
          return TuningError(source, absl::StrCat("GEMV shape '", shape, "': expected a map of knobs (",
                                                  KnobNames(), ")", Where(entry.second)));
        }
        for (const auto& kv : entry.second) {
          const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
          const GemvKnob* knob = FindGemvKnob(name);
          if (knob == nullptr) {
            return TuningError(source, absl::StrCat("GEMV shape '", shape, "': unknown knob '", name, "'",
                                                    Where(kv.first), " (valid: ", KnobNames(), ")"));
          }
          if (knobs.count(name) != 0) {
            return TuningError(source, absl::StrCat("GEMV shape '", shape, "': knob '", name, "' is given twice"));
          }
          int64_t value = 0;
          if (!kv.second.IsScalar() || !absl::SimpleAtoi(kv.second.Scalar(), &value) || !knob->Allows(value)) {
            return TuningError(source, absl::StrCat("GEMV shape '", shape, "': knob '", name, "' must be an integer ",
                                                    knob->Range(), " (", Sv(knob->meaning), ")", Where(kv.second)));
          }
          knobs[name] = value;
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return TuningError(source, absl::StrCat("bad YAML: ", e.what()));
  }
  return table;
}

}  // namespace jllm::cuda
