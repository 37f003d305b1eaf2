// Whole models on the GPU against cpu_ref: the trained tiny-coder, greedily, on the transformers
// reference prompts (tests/data/tiny_coder_reference.json) — the CUDA backend's 48 tokens must
// be cpu_ref's, with the default passes and with each pass off — and in lockstep
// (runtime/validate.h): every step's logits within the bound.
#include <fstream>
#include <memory>
#include <string>

#include "backends/cpu_ref/cpu_ref_backend.h"
#include "nlohmann/json.hpp"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "runtime/backend_factory.h"
#include "runtime/session.h"
#include "runtime/validate.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/runtime/model_test_support.h"

namespace jllm::cuda::testing {
namespace {

using runtime::testing::OpenTinyCoder;
using runtime::testing::TinyCoder;

std::vector<std::vector<int32_t>> ReferencePrompts() {
  std::ifstream in(SourcePath("tests/data/tiny_coder_reference.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::vector<int32_t>> out;
  for (const auto& p : j["prompts"]) out.push_back(p["prompt_ids"].get<std::vector<int32_t>>());
  return out;
}

std::vector<int32_t> Greedy(const TinyCoder& m, const ir::Graph& g, std::unique_ptr<Backend> backend,
                            const std::vector<int32_t>& prompt, int64_t n) {
  runtime::SessionOptions so;
  so.context = 512;
  auto session = runtime::Session::Create(g, m.tokenizer_data, std::move(backend),
                                          std::make_unique<BlobWeightSource>(m.blob()), so);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  runtime::Sampler greedy(SamplingParams{.temperature = 0});
  runtime::GenerateOptions go;
  go.max_tokens = n;
  auto r = (*session)->Generate(prompt, greedy, go);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->tokens : std::vector<int32_t>{};
}

std::unique_ptr<Backend> Gpu() {
  auto b = runtime::CreateBackend({.name = "cuda"});
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? std::move(b->backend) : nullptr;
}

// "" for the defaults, else the name of the one pass switched off.
class GpuTinyCoderTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuTinyCoderTest, GreedyTokensAreCpuRefs) {
  JLLM_SKIP_WITHOUT_GPU();
  JLLM_SKIP_WITHOUT_TINY_CODER();
  auto m = OpenTinyCoder();
  ASSERT_NE(m, nullptr);
  ir::Graph g = m->graph;
  passes::PipelineConfig config = passes::DefaultPipelineConfig();
  if (!GetParam().empty()) config.passes[GetParam()].enabled = false;
  ASSERT_TRUE(passes::RunPipeline(g, config).ok());
  for (const auto& prompt : ReferencePrompts()) {
    const auto want = Greedy(*m, g, CreateCpuRefBackend(), prompt, 48);
    const auto got = Greedy(*m, g, Gpu(), prompt, 48);
    EXPECT_EQ(got, want) << "pass off: " << (GetParam().empty() ? "none" : GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Passes, GpuTinyCoderTest,
                         ::testing::Values("", "group-qkv", "group-gate-up", "fuse-rmsnorm-matmul",
                                           "fuse-residual-add", "fuse-swiglu", "fuse-qknorm-rope"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param.empty() ? "defaults" : "without_" + i.param;
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST(GpuTinyCoderLockstep, LogitsWithinTheBoundEveryStep) {
  JLLM_SKIP_WITHOUT_GPU();
  JLLM_SKIP_WITHOUT_TINY_CODER();
  auto m = OpenTinyCoder();
  ASSERT_NE(m, nullptr);
  ir::Graph g = m->graph;
  ASSERT_TRUE(passes::RunPipeline(g, passes::DefaultPipelineConfig()).ok());
  BlobWeightSource weights(m->blob());
  BackendOptions bo;
  bo.max_context = 512;
  auto cpu = CreateCpuRefBackend();
  auto gpu = Gpu();
  ASSERT_TRUE(cpu->Load(g, weights, bo).ok());
  ASSERT_TRUE(gpu->Load(g, weights, bo).ok());
  auto report = runtime::ValidateLockstep(*cpu, *gpu, ReferencePrompts()[0], 32, SamplingParams{.temperature = 0});
  ASSERT_TRUE(report.ok()) << report.status();
  std::printf("tiny-coder lockstep: %s\n", report->Summary().c_str());
  EXPECT_TRUE(report->passed) << report->Summary();
}

}  // namespace
}  // namespace jllm::cuda::testing
