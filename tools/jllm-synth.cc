// jllm-synth: writes a Qwen3-architecture GGUF with seeded random weights for tests and
// benchmarks, so the project never downloads weights. All logic is in frontends/gguf/synth_*.
//
//   jllm-synth --preset 4b --tokenizer .deps/qwen3-tokenizer -o /tmp/4b.gguf
#include <chrono>
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "frontends/gguf/synth_model.h"
#include "tools/support/flag_checks.h"
#include "tools/support/progress.h"
#include "tools/support/tool_main.h"

namespace {

using jllm::gguf::SynthFill;
using jllm::gguf::SynthOptions;
using jllm::gguf::SynthSummary;
using jllm::tools::HumanBytes;

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : "|") + s;
  return out;
}

void PrintSummary(const SynthOptions& options, const SynthSummary& s, const std::string& path,
                  double seconds) {
  const auto& c = s.plan.config;
  std::printf("wrote %s in %.1f s\n", path.c_str(), seconds);
  std::printf("  preset      %s (%s), %s, seed %llu, %s weights\n", c.preset.c_str(),
              c.name.c_str(), std::string(SynthWeightsName(s.plan.weights)).c_str(),
              static_cast<unsigned long long>(options.seed),
              s.pooled ? "pooled random" : "exact random");
  std::printf("  shape       E %u, layers %u, heads %u/%u x %u, ffn %u, vocab %lld, ctx %u%s\n",
              c.n_embd, c.n_layer, c.n_head, c.n_head_kv, c.head_dim, c.n_ff,
              static_cast<long long>(c.n_vocab), c.context_length,
              c.tied_embeddings ? ", tied embeddings" : "");
  std::printf("  tokenizer   %s\n", options.tokenizer_dir.empty() ? "byte-level (built in)"
                                                                  : options.tokenizer_dir.c_str());
  std::printf("  params      %.3f B in %zu tensors, file_type %u\n", s.plan.n_params() / 1e9,
              s.plan.tensors.size(), s.plan.file_type);
  std::printf("  file size   %s (%llu bytes)\n",
              HumanBytes(static_cast<double>(s.file_bytes)).c_str(),
              static_cast<unsigned long long>(s.file_bytes));
  for (const auto& [type, bytes] : s.bytes_per_type) {
    std::printf("  %-6s      %4d tensors %12s\n", std::string(jllm::GgmlTypeName(type)).c_str(),
                s.tensors_per_type.at(type), HumanBytes(static_cast<double>(bytes)).c_str());
  }
}

int Main(int argc, char** argv) {
  CLI::App app{"Writes a Qwen3-architecture GGUF with seeded random weights."};
  SynthOptions options;
  std::string preset = "tiny", type = "q4_k_m", out, fill = "auto";
  int64_t threads = 0;
  app.add_option("--preset", preset, "model shape: " + Join(jllm::gguf::SynthPresetNames()))
      ->capture_default_str();
  app.add_option("--type", type,
                 "q4_k_m (llama-quantize's Q4_K_M mix) or one type for every matrix; one of " +
                     Join(jllm::gguf::SynthWeightsNames()))
      ->capture_default_str();
  app.add_option("--tokenizer", options.tokenizer_dir,
                 "Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json); "
                 "required except for --preset tiny")
      ->check(jllm::tools::NonEmpty("a folder"));
  app.add_option("--seed", options.seed, "random seed")
      ->check(jllm::tools::IntRange(0, jllm::tools::kNoMax))
      ->capture_default_str();
  app.add_option("--fill", fill,
                 "auto|exact|pool: quantize every weight, or pick from a quantized random pool "
                 "(auto: exact up to 100M parameters)")
      ->capture_default_str();
  app.add_option("--threads", threads, "worker threads (0: all cores)")
      ->check(jllm::tools::IntRange(0, jllm::tools::kNoMax, "0 = all cores"))
      ->capture_default_str();
  app.add_option("-o,--output", out, "output .gguf path")->required();
  CLI11_PARSE(app, argc, argv);

  options.preset = preset;
  options.threads = jllm::tools::CapThreads("--threads", threads);
  auto weights = jllm::gguf::ParseSynthWeights(type);
  if (!weights.ok()) return jllm::tools::Fail("--type: " + std::string(weights.status().message()));
  options.weights = *weights;
  if (fill == "auto") {
    options.fill = SynthFill::kAuto;
  } else if (fill == "exact") {
    options.fill = SynthFill::kExact;
  } else if (fill == "pool") {
    options.fill = SynthFill::kPool;
  } else {
    return jllm::tools::Fail("--fill must be auto, exact or pool, not '" + fill + "'");
  }
  jllm::tools::Progress progress("writing " + out, jllm::tools::Progress::Unit::kBytes);
  options.progress = [&progress](uint64_t done, uint64_t total) { progress.Update(done, total); };

  const auto start = std::chrono::steady_clock::now();
  auto summary = jllm::gguf::WriteSynthModel(options, out);
  progress.Finish();
  if (!summary.ok()) return jllm::tools::Fail(summary.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PrintSummary(options, *summary, out, seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-synth", argc, argv, Main); }
