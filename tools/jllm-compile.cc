// jllm-compile: GGUF model -> plan.bin. Builds the Qwen3 graph, runs the YAML-configured pass
// pipeline (printing what each pass did), fingerprints the GGUF and writes the plan file.
//
//   jllm-compile model.gguf -o plan.bin [--passes passes.yaml] [--dump-ir] [--dump-ir-after NAME]
//   jllm-compile model.gguf -o plan.bin --arch sm_87,sm_90    with ahead-of-time CUBINs
//   jllm-compile model.gguf -o plan.bin --tune                tuned on this machine's GPU
//   jllm-compile model.gguf -o plan.bin --tuning tuning.yaml  with per-shape choices from a file
//
// The plan always records the CUDA backend's kernel specs; with --arch it also carries CUBINs
// for those GPUs, compiled here with NVRTC (no GPU needed). With --tune (a GPU needed) or
// --tuning it carries per-shape GEMV choices (backends/cuda/lowering/tuning.h), and the specs
// and CUBINs are lowered with them.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "backends/cuda/lowering/gemv_tuner.h"
#include "backends/cuda/lowering/kernel_plan_io.h"
#include "backends/cuda/lowering/lowering.h"
#include "backends/cuda/lowering/tuning.h"
#if JLLM_HAVE_NVRTC
#include "backends/cuda/nvrtc/aot_compile.h"
#endif
#include "fileio/read_file.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/qwen3_graph.h"
#include "frontends/gguf/tokenizer_data.h"
#include "ir/text.h"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "runtime/plan_file.h"
#include "runtime/plan_check.h"
#include "runtime/plan_weights.h"
#include "tools/support/flag_checks.h"
#include "tools/support/tool_main.h"
#include "tools/tune/gpu_step_timer.h"

namespace {

using Clock = std::chrono::steady_clock;

using jllm::tools::Fail;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int Main(int argc, char** argv) {
  CLI::App app{"Compiles a Qwen3 GGUF model into a jllm plan file."};
  std::string model, out, passes_file, dump_after, arch_list, tuning_file;
  bool dump_ir = false, tune = false;
  int64_t tune_shapes = 0;
  app.add_option("model", model, "the GGUF model file")->required();
  app.add_option("-o,--output", out, "the plan file to write")->required();
  app.add_option("--passes", passes_file,
                 "YAML pass configuration (default: every pass on, KV cache f16); passes: " +
                     jllm::passes::ValidPassNames());
  app.add_flag("--dump-ir", dump_ir, "print the final (lowered) IR to stdout");
  app.add_option("--dump-ir-after", dump_after, "print the IR after the pass NAME to stdout");
  app.add_option("--arch", arch_list,
                 "GPU architectures to compile the CUDA kernels for ahead of time, comma-separated "
                 "(e.g. sm_87,sm_90); at run time other GPUs compile with NVRTC");
  auto* tune_flag = app.add_flag("--tune", tune,
                                 "measure per-shape GEMV choices on this machine's GPU (the one the plan will run "
                                 "on; minutes) and store them in the plan");
  app.add_option("--tune-shapes", tune_shapes, "with --tune: only the N GEMV shapes with the most bytes (0: all)")
      ->check(jllm::tools::IntRange(0, 1 << 20, "0 = all"))
      ->needs(tune_flag);
  app.add_option("--tuning", tuning_file, "per-shape GEMV choices from a YAML file (as --tune writes them)")
      ->excludes(tune_flag);
  CLI11_PARSE(app, argc, argv);

  const auto start = Clock::now();
  std::fprintf(stderr, "jllm-compile: reading %s\n", model.c_str());
  auto file = jllm::gguf::GgufFile::Open(model);
  if (!file.ok()) return Fail(file.status());
  auto graph = jllm::gguf::BuildQwen3Graph(**file);
  if (!graph.ok()) return Fail(graph.status());
  auto tokenizer = jllm::gguf::ReadTokenizerData(**file);
  if (!tokenizer.ok()) return Fail(tokenizer.status());
  const auto& c = graph->config;
  std::fprintf(stderr,
               "jllm-compile: %s: %lld layers, E %lld, heads %lld/%lld x %lld, ffn %lld, vocab "
               "%lld; graph of %zu nodes, %zu weights\n",
               c.arch.c_str(), (long long)c.n_layer, (long long)c.n_embd, (long long)c.n_head,
               (long long)c.n_head_kv, (long long)c.head_dim, (long long)c.n_ff,
               (long long)c.n_vocab, graph->nodes.size(), graph->weights.size());

  auto config = passes_file.empty() ? absl::StatusOr<jllm::passes::PipelineConfig>(
                                          jllm::passes::DefaultPipelineConfig())
                                    : jllm::passes::LoadPipelineConfig(passes_file);
  if (!config.ok()) return Fail(config.status());
  jllm::passes::PipelineOptions po;
  po.dump_ir_after = dump_after;
  po.dump = [](std::string_view pass, const std::string& ir) {
    std::printf("# IR after %.*s\n%s", static_cast<int>(pass.size()), pass.data(), ir.c_str());
    std::fflush(stdout);
  };
  std::fprintf(stderr, "jllm-compile: running passes\n");
  auto runs = jllm::passes::RunPipeline(*graph, *config, po);
  if (!runs.ok()) return Fail(runs.status());

  jllm::runtime::Plan plan;
  plan.passes_yaml = jllm::passes::PipelineConfigToYaml(*config);
  std::printf("passes (%s):\n", passes_file.empty() ? "defaults" : passes_file.c_str());
  for (const auto& r : *runs) {
    std::printf("  %-22s %-3s %-9s %s\n", r.name.c_str(), r.enabled ? "on" : "off",
                !r.enabled ? "" : (r.changed ? "changed" : "unchanged"), r.report.c_str());
    plan.passes.push_back({r.name, r.enabled, r.changed, r.report});
  }
  if (dump_ir) std::printf("%s", jllm::ir::Print(*graph).c_str());
  std::fflush(stdout);

  plan.graph = *std::move(graph);
  plan.tokenizer = *std::move(tokenizer);
  // What jllm-run would refuse, refused now, naming the model.
  if (auto st = jllm::runtime::CheckPlanTokenizer(plan); !st.ok()) {
    return Fail(model + ": jllm-run would refuse its tokenizer: " + std::string(st.message()) +
                "; no plan written to " + out);
  }
  if (auto st = jllm::runtime::CheckPlanChatTemplate(plan); !st.ok()) {
    jllm::tools::Warn(model + ": jllm-run --chat will refuse it: " + std::string(st.message()) +
                      " (plain prompts still work)");
  }

  std::fprintf(stderr, "jllm-compile: hashing the weights of %s\n", model.c_str());
  auto weights = jllm::runtime::DescribeGgufWeights(model, (*file)->bytes(),
                                                    (*file)->data_offset(), plan.graph.weights);
  if (!weights.ok()) return Fail(weights.status());
  plan.weights = *std::move(weights);

  // Per-shape GEMV choices: from a file, or measured on this GPU.
  jllm::cuda::TuningTable tuning;
  if (!tuning_file.empty()) {
    auto text = jllm::fileio::ReadFile(tuning_file, "tuning file", 1 << 20);
    if (!text.ok()) return Fail(text.status());
    auto parsed = jllm::cuda::ParseTuningYaml(*text, tuning_file);
    if (!parsed.ok()) return Fail(parsed.status());
    tuning = *std::move(parsed);
    if (auto check = jllm::cuda::LowerGraph(plan.graph, &tuning); !check.ok()) {
      return Fail(absl::Status(check.status().code(), absl::StrCat(tuning_file, ": ", check.status().message())));
    }
  } else if (tune) {
    auto weights = jllm::runtime::PlanWeights::Open(plan.weights, out);
    if (!weights.ok()) return Fail(weights.status());
    auto timer = jllm::tools::GpuStepTimer::Open(plan, **weights);
    if (!timer.ok()) {
      return Fail(absl::Status(timer.status().code(), absl::StrCat("--tune measures decode steps on the GPU the plan "
                                                                   "will run on: ", timer.status().message())));
    }
    std::fprintf(stderr, "jllm-compile: tuning the decode GEMVs on %s\n", (*timer)->device().c_str());
    jllm::cuda::GemvTuneOptions to;
    to.max_shapes = static_cast<int>(tune_shapes);
    // The identity names the GPU's architecture and SMs ("NVIDIA H200 (sm_90, 132 SMs)"): the
    // search lowers its candidates for that GPU, as the backend it times does.
    to.target = jllm::cuda::TargetForDevice((*timer)->device());
    to.progress = [](const std::string& line) { std::fprintf(stderr, "jllm-compile: tune: %s\n", line.c_str()); };
    auto result = jllm::cuda::TuneDecodeGemvs(plan.graph, (*timer)->device(), std::ref(**timer), to);
    if (!result.ok()) return Fail(result.status());
    std::printf("tuned on %s: %.4f ms a decode step with the built-in choices, %.4f ms tuned (%d timed, %d could "
                "not run)\n%s", result->table.device.c_str(), result->heuristic_s * 1e3, result->tuned_s * 1e3,
                result->timed, result->skipped, jllm::cuda::TuningToYaml(result->table).c_str());
    tuning = std::move(result->table);
  }
  if (!tuning_file.empty() || tune) plan.sections[std::string(jllm::runtime::kTuningSection)] = jllm::cuda::TuningToYaml(tuning);

  // The CUDA backend's kernels for this graph (plain data: no GPU needed).
  auto lowered = jllm::cuda::LowerGraph(plan.graph, &tuning);
  if (lowered.ok()) {
    plan.sections[std::string(jllm::runtime::kKernelSpecsSection)] = jllm::cuda::SerializeKernelSpecs(lowered->specs);
    std::fprintf(stderr, "jllm-compile: %zu CUDA kernel specs\n", lowered->specs.size());
  } else {
    std::fprintf(stderr, "jllm-compile: note: the CUDA backend cannot run this graph (%s); cpu only\n",
                 std::string(lowered.status().message()).c_str());
    if (!arch_list.empty() || !tuning.empty()) return Fail(lowered.status());
  }
  if (!arch_list.empty()) {
    // Each architecture's kernels as the backend will lower them there: rings and tiles fit its
    // shared memory (lowering_target.h), so an sm_86 plan's kernels differ from an sm_90 one's.
    std::map<std::string, std::vector<jllm::cuda::KernelSpec>> specs_by_arch;
    for (absl::string_view a : absl::StrSplit(arch_list, ',', absl::SkipEmpty())) {
      auto for_arch = jllm::cuda::LowerGraph(plan.graph, &tuning, jllm::cuda::TargetForArch(std::string_view(a.data(), a.size())));
      if (!for_arch.ok()) {
        return Fail(absl::Status(for_arch.status().code(), absl::StrCat("--arch ", a, ": ", for_arch.status().message())));
      }
      specs_by_arch[std::string(a)] = std::move(for_arch->specs);
    }
#if JLLM_HAVE_NVRTC
    const auto aot_start = Clock::now();
    const bool tty = isatty(STDERR_FILENO);
    auto cubins = jllm::cuda::CompileAheadOfTime(specs_by_arch, [tty](size_t done, size_t total) {
      if (!tty) return;  // progress only on a terminal
      std::fprintf(stderr, "\rjllm-compile: compiling kernels %zu/%zu", done, total);
      if (done == total) std::fprintf(stderr, "\n");
    });
    if (!cubins.ok()) return Fail(cubins.status());
    plan.sections[std::string(jllm::runtime::kCubinsSection)] = jllm::cuda::SerializeCubins(*cubins);
    std::fprintf(stderr, "jllm-compile: CUBINs for %s (%.1f s)\n", arch_list.c_str(), Since(aot_start));
#else
    return Fail(absl::FailedPreconditionError(
        "--arch: this jllm was built without NVRTC (no CUDA toolkit); compile the plan without --arch"));
#endif
  }
  const std::string inputs[] = {model, passes_file, tuning_file};
  if (auto st = jllm::runtime::WritePlanFile(plan, out, inputs); !st.ok()) return Fail(st);
  int n_int8 = 0, n_f32 = 0;
  for (auto t : plan.graph.kv_dtypes) {
    n_int8 += t == jllm::ir::KvDType::kInt8;
    n_f32 += t == jllm::ir::KvDType::kF32;
  }
  std::fprintf(stderr,
               "jllm-compile: wrote %s: %zu nodes, KV cache %d f16 + %d int8 + %d f32 layers, "
               "weights from %s (%.2f s)\n",
               out.c_str(), plan.graph.nodes.size(),
               static_cast<int>(plan.graph.kv_dtypes.size()) - n_int8 - n_f32, n_int8, n_f32,
               plan.weights.gguf_path.c_str(), Since(start));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-compile", argc, argv, Main); }
