#include "passes/kv_dtype.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::passes {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

absl::StatusOr<int64_t> PositiveInt(const PassOptions& options, std::string_view key) {
  ASSIGN_OR_RETURN(int64_t v, options.Int(key, 0));
  if (v < 1 || v > (int64_t{1} << 40)) {
    return options.Error(key, absl::StrCat(v, " must be a positive number"));
  }
  return v;
}

}  // namespace

absl::StatusOr<KvDTypeOptions> ParseKvDTypeOptions(const PassOptions& options) {
  KvDTypeOptions out;
  ASSIGN_OR_RETURN(std::string dtype, options.String("dtype", "f16"));
  if (dtype == "f16") {
    out.dtype = KvDTypeOptions::Choice::kF16;
  } else if (dtype == "int8") {
    out.dtype = KvDTypeOptions::Choice::kInt8;
  } else if (dtype == "f32") {
    out.dtype = KvDTypeOptions::Choice::kF32;
  } else if (dtype == "auto") {
    out.dtype = KvDTypeOptions::Choice::kAuto;
  } else {
    return options.Error("dtype", absl::StrCat("'", dtype, "' is not one of f16, int8, f32, auto"));
  }
  if (options.Has("memory_budget_mib")) {
    ASSIGN_OR_RETURN(out.memory_budget_mib, PositiveInt(options, "memory_budget_mib"));
  }
  if (options.Has("context_length")) {
    ASSIGN_OR_RETURN(out.context_length, PositiveInt(options, "context_length"));
  }
  if (out.dtype == KvDTypeOptions::Choice::kAuto && !out.memory_budget_mib) {
    return options.Error("dtype", "auto needs the option memory_budget_mib (the KV cache budget)");
  }
  if (out.dtype == KvDTypeOptions::Choice::kAuto && !out.context_length) {
    // Not the model's maximum (40960 for Qwen3, ten times jllm-run's default): the choice must
    // be made for the context that will actually run.
    return options.Error("dtype",
                         "auto needs the option context_length (the tokens the cache must hold, "
                         "as jllm-run -c; jllm-run's default is 4096)");
  }
  ASSIGN_OR_RETURN(PassOptions::Map layers, options.GetMap("layers"));
  for (const auto& [key, value] : layers) {
    int64_t layer = -1;
    if (!absl::SimpleAtoi(key, &layer) || layer < 0) {
      return options.Error("layers", absl::StrCat("'", key, "' is not a layer index"));
    }
    const auto t = ir::ParseKvDType(value);
    if (!t) {
      return options.Error("layers", absl::StrCat("layer ", layer, ": '", value,
                                                  "' is not one of f16, int8, f32"));
    }
    out.layers[layer] = *t;
  }
  return out;
}

absl::Status CheckKvDTypeOptions(const PassOptions& options) {
  return ParseKvDTypeOptions(options).status();
}

int64_t KvCacheBytes(const ir::ModelConfig& config, ir::KvDType t, int64_t tokens) {
  return ir::KvBytesPerTokenPerLayer(config, t) * config.n_layer * tokens;
}

absl::StatusOr<PassResult> RunKvDType(ir::Graph& g, const PassOptions& options) {
  ASSIGN_OR_RETURN(KvDTypeOptions opts, ParseKvDTypeOptions(options));
  const int64_t n_layer = static_cast<int64_t>(g.kv_dtypes.size());
  std::string why;
  ir::KvDType base = ir::KvDType::kF16;
  if (opts.dtype == KvDTypeOptions::Choice::kInt8) {
    base = ir::KvDType::kInt8;
  } else if (opts.dtype == KvDTypeOptions::Choice::kF32) {
    base = ir::KvDType::kF32;
  } else if (opts.dtype == KvDTypeOptions::Choice::kAuto) {
    const int64_t tokens = *opts.context_length;
    const int64_t f16_bytes = KvCacheBytes(g.config, ir::KvDType::kF16, tokens);
    const int64_t int8_bytes = KvCacheBytes(g.config, ir::KvDType::kInt8, tokens);
    const int64_t budget = *opts.memory_budget_mib * kMiB;
    const double int8_mib = static_cast<double>(int8_bytes) / kMiB;
    if (int8_bytes > budget) {
      const int64_t per_token = KvCacheBytes(g.config, ir::KvDType::kInt8, 1);
      return options.Error(
          "memory_budget_mib",
          absl::StrFormat("%d MiB cannot hold a KV cache of context_length %d tokens even in "
                          "int8 (%.1f MiB); lower context_length to at most %d or raise the "
                          "budget to at least %d MiB",
                          *opts.memory_budget_mib, tokens, int8_mib,
                          per_token > 0 ? budget / per_token : 0,
                          (int8_bytes + kMiB - 1) / kMiB));
    }
    base = f16_bytes <= budget ? ir::KvDType::kF16 : ir::KvDType::kInt8;
    why = absl::StrFormat(" (auto: %d tokens take %.1f MiB in f16, %.1f MiB in int8; budget %d MiB)",
                          tokens, static_cast<double>(f16_bytes) / kMiB, int8_mib,
                          *opts.memory_budget_mib);
  }
  std::vector<ir::KvDType> want(n_layer, base);
  for (const auto& [layer, t] : opts.layers) {
    if (layer >= n_layer) {
      return options.Error("layers", absl::StrCat("layer ", layer, " does not exist (the model has ",
                                                  n_layer, " layers)"));
    }
    want[layer] = t;
  }
  bool changed = false;
  int64_t n_of[3] = {0, 0, 0};  // layers per KvDType, indexed by its value
  for (int64_t l = 0; l < n_layer; ++l) {
    if (g.kv_dtypes[l] != want[l]) {
      g.SetKvDType(l, want[l]);
      changed = true;
    }
    ++n_of[static_cast<int>(want[l])];
  }
  const int64_t n_f16 = n_of[static_cast<int>(ir::KvDType::kF16)];
  const int64_t n_int8 = n_of[static_cast<int>(ir::KvDType::kInt8)];
  const int64_t n_f32 = n_of[static_cast<int>(ir::KvDType::kF32)];
  std::string report;
  if (n_f16 == n_layer || n_int8 == n_layer || n_f32 == n_layer) {
    report = absl::StrCat("kv cache ", Sv(ir::KvDTypeName(want.empty() ? base : want[0])), " in all ",
                          n_layer, " layers");
  } else if (n_f32 == 0) {
    report = absl::StrCat("kv cache int8 in ", n_int8, " of ", n_layer, " layers, f16 in the rest");
  } else {
    report = absl::StrCat("kv cache f16 in ", n_f16, ", int8 in ", n_int8, ", f32 in ", n_f32,
                          " of ", n_layer, " layers");
  }
  return PassResult{changed, report + why};
}

}  // namespace jllm::passes
