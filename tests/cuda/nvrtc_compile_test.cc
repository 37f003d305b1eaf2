// NVRTC path without a GPU: the embedded sources, architecture checks, compile errors with
// the NVRTC log, and every kernel spec of the reference models compiled for every target.
#include <algorithm>
#include <cctype>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <thread>
#include <vector>
#include <cstring>
#include <iostream>
#include <set>
#include <string>

#include "backends/cuda/nvrtc/kernel_sources.h"
#include "backends/cuda/nvrtc/nvrtc_compiler.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/kernels/launch_geometry.h"
#include "backends/cuda/lowering/lowering.h"
#include "frontends/gguf/gguf_file.h"
#include "tests/cuda/kernel_variants.h"
#include "tests/cuda/preset_graph.h"
#include "tests/support/temp_files.h"
#include "tests/support/test_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jllm::cuda {
namespace {

using ::testing::HasSubstr;

using ::jllm::testing::ReadFile;

// e_machine of an ELF image (offset 18, little-endian u16); EM_CUDA is 190.
uint16_t ElfMachine(const std::string& image) {
  uint16_t machine = 0;
  if (image.size() >= 20) std::memcpy(&machine, image.data() + 18, sizeof(machine));
  return machine;
}

TEST(KernelSources, EmbeddedTextMatchesTheFilesOnDisk) {
  for (const std::string name : {"gemv.cu", "sample.cu", "read_bandwidth.cu", "jllm_common.cuh",
                                 "quant/block_layout.h", "backends/cuda/device_layout.h"}) {
    SCOPED_TRACE(name);
    auto text = FindKernelSource(name);
    ASSERT_TRUE(text.ok()) << text.status();
    const bool shared = name.find('/') != std::string::npos;  // a host header, by its repo path
    const std::string on_disk =
        ReadFile(std::string(JLLM_SOURCE_DIR) + (shared ? "/" : "/backends/cuda/kernels/") + name);
    ASSERT_FALSE(on_disk.empty());
    EXPECT_EQ(std::string(*text), on_disk);
  }
}

TEST(KernelSources, UnknownNameListsTheKnownOnes) {
  auto text = FindKernelSource("no_such_kernel.cu");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("gemv.cu"));
}

TEST(Nvrtc, RejectsArchitecturesTheKernelsCannotUse) {
  EXPECT_TRUE(ValidateArch("sm_87").ok());
  EXPECT_TRUE(ValidateArch("sm_90").ok());
  EXPECT_TRUE(ValidateArch("sm_90a").ok());
  EXPECT_FALSE(ValidateArch("sm_75").ok());
  EXPECT_FALSE(ValidateArch("compute_90").ok());
  EXPECT_FALSE(ValidateArch("sm_9").ok());
  EXPECT_FALSE(ValidateArch("").ok());
}

TEST(Nvrtc, CompileErrorCarriesTheLog) {
  NvrtcOptions options;
  options.arch = "sm_90";
  auto compiled = CompileSource("broken.cu", "__global__ void k() { undeclared_name = 1; }\n", {},
                                options);
  ASSERT_FALSE(compiled.ok());
  const std::string message(compiled.status().message());
  EXPECT_THAT(message, HasSubstr("broken.cu"));
  EXPECT_THAT(message, HasSubstr("undeclared_name"));  // from the NVRTC log
}

TEST(Nvrtc, MissingShapeConstantIsACompileError) {
  NvrtcOptions options;
  options.arch = "sm_87";
  auto compiled = CompileKernel("gemv.cu", options);  // no -DJLLM_K etc.
  ASSERT_FALSE(compiled.ok());
  EXPECT_THAT(std::string(compiled.status().message()), HasSubstr("JLLM_K"));
}

TEST(Nvrtc, DeviceProbesCompile) {
  for (const char* source : {"read_bandwidth.cu", "l2_prefetch_probe.cu"}) {
    for (const char* arch : {"sm_80", "sm_87", "sm_90"}) {  // the bulk prefetch only on sm_90
      SCOPED_TRACE(std::string(source) + " " + arch);
      NvrtcOptions options;
      options.arch = arch;
      auto compiled = CompileKernel(source, options);
      ASSERT_TRUE(compiled.ok()) << compiled.status();
      EXPECT_TRUE(LooksLikeCubin(compiled->cubin));
    }
  }
}

// Every kernel spec of the reference models compiles for every architecture jllm targets: the
// Jetson Orin (sm_87) first, then A100 (sm_80), the RTX 30 series (sm_86), RTX 40 / L4 (sm_89)
// and H100 / H200 (sm_90). Specs are deduplicated across models; compiles run in parallel.
// Compiles every spec for every architecture (in parallel) and expects a CUDA ELF from each.
// The static shared memory ptxas reports for a kernel ("Used 90 registers, 8704 bytes smem, ..."; a
// kernel without any has no "bytes smem"), or -1 without a report.
int64_t StaticSmem(const std::string& log) {
  if (log.find("ptxas info    : Used ") == std::string::npos) return -1;
  const size_t at = log.find(" bytes smem");
  if (at == std::string::npos) return 0;
  size_t b = at;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(log[b - 1]))) --b;
  return b == at ? -1 : std::stoll(log.substr(b, at - b));
}

// Compiles each (spec, arch) job with ptxas' report, expecting a CUDA ELF, and a CTA that fits the
// architecture's shared memory: ptxas' static bytes plus the spec's dynamic ones (the lowering
// counts the latter and, for the kernels it sizes rings and tiles of, reserves
// kStaticSmemReserve for the former: checked here too).
//
// A job whose code another job already compiles is left out: the kernels branch on the
// architecture only at sm_90 (jllm_common.cuh: the bulk copies), so one source with the same
// defines is the same program on every sm_8x, and the checks below differ between them only by
// the shared memory a CTA may take. The first job of each (source, defines, sm_90 or not, shared
// memory) compiles — callers list the Orin (sm_87) before the other sm_8x — and the CI's two
// cores are not spent twice on one program (sm_80 and sm_87 lower most specs alike, as do sm_86
// and sm_89).
void CompileEverywhere(const std::vector<std::pair<KernelSpec, std::string>>& jobs) {
  std::vector<size_t> todo;
  std::set<std::string> programs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& [spec, arch] = jobs[i];
    const LoweringTarget target = TargetForArch(arch);  // tensor_copies: sm_90 on, the bulk copies' code
    std::string key = absl::StrCat(spec.source, " sm90:", target.tensor_copies, " smem:", target.smem_per_block);
    for (const auto& [name, value] : spec.DefineList()) absl::StrAppend(&key, " ", name, "=", value);
    if (programs.insert(key).second) todo.push_back(i);
  }
  std::vector<std::string> failures(jobs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t t = next++; t < todo.size(); t = next++) {
      const size_t i = todo[t];
      const auto& [spec, arch] = jobs[i];
      NvrtcOptions o;
      o.arch = arch;
      o.defines = spec.DefineList();
      o.ptxas_verbose = true;
      auto compiled = CompileKernel(spec.source, o);
      if (!compiled.ok()) {
        failures[i] = std::string(compiled.status().message()).substr(0, 2000);
        continue;
      }
      if (!LooksLikeCubin(compiled->cubin) || ElfMachine(compiled->cubin) != 190) {
        failures[i] = "not a CUDA ELF";
        continue;
      }
      const int64_t static_smem = StaticSmem(compiled->log);
      const int64_t limit = TargetForArch(arch).smem_per_block;
      const bool sized = spec.kernel == "gemv" || spec.kernel == "gemm" || spec.kernel == "gemm_f16";
      if (static_smem < 0) {
        failures[i] = "no ptxas report: " + compiled->log.substr(0, 500);
      } else if (static_smem + spec.smem > limit) {
        failures[i] = absl::StrCat(static_smem, " static + ", spec.smem, " dynamic bytes of shared memory > ", limit);
      } else if (sized && static_smem > geometry::kStaticSmemReserve) {
        failures[i] = absl::StrCat(static_smem, " static bytes of shared memory > the lowering's reserve of ",
                                   geometry::kStaticSmemReserve);
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_TRUE(failures[i].empty()) << jobs[i].first.label << " for " << jobs[i].second << ": " << failures[i];
  }
  std::cout << todo.size() << " of " << jobs.size() << " (spec, architecture) pairs compiled, the others the same program\n";
}

// Each reference model lowered for each architecture (its shared memory: lowering_target.h) — the
// specs jllm-compile --arch compiles — compiles for it, and each CTA fits it.
TEST(Nvrtc, EveryKernelSpecOfTheReferenceModelsCompilesForEveryTarget) {
  std::vector<std::pair<std::string, ir::Graph>> graphs;
  for (const char* preset : {"tiny", "0.6b", "4b", "14b"}) {
    auto g = testing::PresetGraph(preset);
    ASSERT_TRUE(g.ok()) << preset << ": " << g.status();
    graphs.emplace_back(preset, *std::move(g));
  }
  const std::string coder = ::jllm::testing::TinyCoderPath();
  if (std::filesystem::exists(coder)) {
    auto file = gguf::GgufFile::Open(coder);
    ASSERT_TRUE(file.ok()) << file.status();
    auto g = gguf::BuildQwen3Graph(**file);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(passes::RunPipeline(*g, passes::DefaultPipelineConfig()).ok());
    graphs.emplace_back("tiny-coder", *std::move(g));
  } else if (::jllm::testing::TinyCoderRequired()) {
    ADD_FAILURE() << coder << " is absent: under JLLM_REQUIRE_ORACLES=1 its specs must be in this run";
  } else {
    std::cout << "tiny-coder not found at " << coder << "; its specs are not in this run\n";
  }
  std::vector<std::pair<KernelSpec, std::string>> jobs;
  for (const std::string arch : {"sm_87", "sm_80", "sm_86", "sm_89", "sm_90"}) {  // the Orin first
    std::vector<KernelSpec> specs;
    for (const auto& [model, g] : graphs) {
      auto lowered = LowerGraph(g, nullptr, TargetForArch(arch));
      ASSERT_TRUE(lowered.ok()) << model << " for " << arch << ": " << lowered.status();
      for (const KernelSpec& s : lowered->specs) {
        if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
      }
    }
    ASSERT_GT(specs.size(), 20u);
    for (KernelSpec& s : specs) jobs.emplace_back(std::move(s), arch);
  }
  CompileEverywhere(jobs);
}

// The kernel variants (tests/cuda/kernel_variants.h: the GEMV's ring with bulk copies or
// cp.async, rows, spread, pairs; the GEMM on the tensor cores), lowered for the 4b preset with
// each variant's switches — or, for a variant that is 4b's default (pairs: on for GEMVs of >= 4
// MiB, every one of 4b's), for the 0.6b preset, whose small GEMVs it changes: the specs that
// differ from the defaults compile for Ampere, the Orin and Hopper, each lowered for that GPU's
// shared memory (the bulk copies are in the sm_90 code only).
TEST(Nvrtc, TheKernelVariantsCompileForAmpereTheOrinAndHopper) {
  std::vector<std::pair<KernelSpec, std::string>> jobs;
  for (const std::string arch : {"sm_87", "sm_80", "sm_90"}) {  // the Orin first: CompileEverywhere
    const LoweringTarget target = TargetForArch(arch);
    std::vector<KernelSpec> specs;
    for (const ::jllm::testing::OpVariant& v : ::jllm::testing::CudaKernelVariants()) {
      size_t changed = 0;
      for (const char* preset : {"4b", "0.6b"}) {
        auto g = testing::PresetGraph(preset);
        ASSERT_TRUE(g.ok()) << g.status();
        auto defaults = LowerGraph(*g, nullptr, target);
        ASSERT_TRUE(defaults.ok()) << defaults.status();
        ::jllm::testing::ScopedEnv env(v.env);
        auto lowered = LowerGraph(*g, nullptr, target);
        ASSERT_TRUE(lowered.ok()) << v.name << ": " << lowered.status();
        for (const KernelSpec& s : lowered->specs) {
          if (std::find(defaults->specs.begin(), defaults->specs.end(), s) != defaults->specs.end()) continue;
          ++changed;
          if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
        }
        if (changed > 0) break;
      }
      EXPECT_GT(changed, 0u) << v.name << " changed no kernel spec of the 4b or the 0.6b preset for " << arch;
    }
    for (KernelSpec& s : specs) jobs.emplace_back(std::move(s), arch);
  }
  CompileEverywhere(jobs);
}

}  // namespace
}  // namespace jllm::cuda
