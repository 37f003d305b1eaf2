// jllm-convert: a Hugging Face Qwen3 checkpoint folder (config.json, *.safetensors, tokenizer
// files) to a GGUF file, optionally quantized. All logic is in frontends/gguf/hf_import.*.
//
//   jllm-convert ~/Qwen3-0.6B --type q4_k_m -o qwen3-0.6b-q4_k_m.gguf
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "CLI/CLI.hpp"
#include "frontends/gguf/hf_import.h"
#include "tools/support/flag_checks.h"
#include "tools/support/progress.h"
#include "tools/support/tool_main.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"Converts a Hugging Face Qwen3 checkpoint folder to a GGUF file."};
  jllm::gguf::HfImportOptions options;
  std::string type = "f32", out;
  int64_t threads = 0;
  app.add_option("dir", options.dir, "checkpoint folder (config.json, *.safetensors)")->required();
  std::string types;
  for (const auto& n : jllm::gguf::SynthWeightsNames()) types += (types.empty() ? "" : "|") + n;
  app.add_option("--type", type,
                 "matrix type: " + types + " (q4_k_m: llama-quantize's Q4_K_M mix); norms stay f32")
      ->capture_default_str();
  app.add_option("--name", options.name, "general.name (default: the folder's name)");
  app.add_option("--threads", threads, "worker threads (0: all cores)")
      ->check(jllm::tools::IntRange(0, jllm::tools::kNoMax, "0 = all cores"))
      ->capture_default_str();
  app.add_flag("--allow-no-tokenizer", options.allow_no_tokenizer,
               "without tokenizer.json in the folder, write a placeholder vocabulary (256 byte "
               "tokens; prompts only as jllm-run --prompt-ids) instead of refusing");
  app.add_option("-o,--output", out, "output .gguf path")->required();
  CLI11_PARSE(app, argc, argv);

  options.threads = jllm::tools::CapThreads("--threads", threads);
  auto weights = jllm::gguf::ParseSynthWeights(type);
  if (!weights.ok()) return jllm::tools::Fail("--type: " + std::string(weights.status().message()));
  options.weights = *weights;
  jllm::tools::Progress progress("writing " + out, jllm::tools::Progress::Unit::kBytes);
  options.progress = [&progress](uint64_t done, uint64_t total) { progress.Update(done, total); };
  const auto start = std::chrono::steady_clock::now();
  auto summary = jllm::gguf::ImportHfCheckpoint(options, out);
  progress.Finish();
  if (!summary.ok()) return jllm::tools::Fail(summary.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto& c = summary->plan.config;
  std::printf("wrote %s (%llu bytes) in %.1f s from %zu shard(s) of %s\n", out.c_str(),
              static_cast<unsigned long long>(summary->file_bytes), seconds,
              summary->shard_files.size(), options.dir.c_str());
  std::printf("  shape      E %u, layers %u, heads %u/%u x %u, ffn %u, vocab %lld, ctx %u%s\n",
              c.n_embd, c.n_layer, c.n_head, c.n_head_kv, c.head_dim, c.n_ff,
              static_cast<long long>(c.n_vocab), c.context_length,
              c.tied_embeddings ? ", tied embeddings" : "");
  std::printf("  tokenizer  %s\n", summary->tokenizer_imported
                                       ? "imported from tokenizer.json"
                                       : "placeholder (256 byte tokens + unused slots; use --prompt-ids)");
  if (!summary->tokenizer_imported) {
    jllm::tools::Warn("no tokenizer.json in " + options.dir +
                      ": wrote a placeholder vocabulary (--allow-no-tokenizer)");
  }
  std::map<std::string, int> per_type;
  for (const auto& t : summary->plan.tensors) per_type[std::string(jllm::GgmlTypeName(t.type))]++;
  for (const auto& [name, count] : per_type) std::printf("  %-8s   %d tensors\n", name.c_str(), count);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-convert", argc, argv, Main); }
