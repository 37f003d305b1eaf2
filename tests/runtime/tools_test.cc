// jllm-synth -> jllm-compile -> jllm-run on the tiny preset, as a user runs them: the plan is
// written, the run streams text, --dump-logits writes [positions x n_vocab] float32 plus a JSON
// sidecar, --prompt-ids bypasses the tokenizer, and bad input gets a clear message.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "backends/cuda/lowering/kernel_plan_io.h"
#include "backends/cuda/lowering/lowering.h"
#include "backends/cuda/lowering/tuning.h"
#include "nlohmann/json.hpp"
#include "runtime/backend_factory.h"
#include "runtime/plan_file.h"
#include "tests/runtime/runtime_test_support.h"
#include "tests/support/tool_runner.h"

namespace jllm::runtime {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;
using testing::WriteFile;

constexpr int64_t kTinyVocab = 261;  // byte-level: 256 bytes + 5 special tokens

using jllm::testing::RunTool;
using ToolRun = jllm::testing::ToolResult;

ToolRun Tool(const std::string& binary, const std::vector<std::string>& args,
             const std::string& stdin_text = "") {
  jllm::testing::ToolRunOptions o;
  o.stdin_data = stdin_text;
  return RunTool(binary, args, o);
}

class ToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempPath("dir");
    std::filesystem::create_directories(dir_);
    gguf_ = dir_ + "/tiny.gguf";
    plan_ = dir_ + "/tiny.plan";
    ToolRun synth = Tool(JLLM_SYNTH_PATH, {"--preset", "tiny", "--type", "q4_k_m", "--seed", "3", "-o", gguf_});
    ASSERT_EQ(synth.exit_code, 0) << synth.err;
    ToolRun compile = Tool(JLLM_COMPILE_PATH, {gguf_, "-o", plan_});
    ASSERT_EQ(compile.exit_code, 0) << compile.err;
    compile_out_ = compile.out;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_, gguf_, plan_, compile_out_;
};

TEST_F(ToolsTest, CompilePrintsEachPassReport) {
  for (const char* pass : {"group-qkv", "group-gate-up", "fuse-rmsnorm-matmul",
                           "fuse-residual-add", "fuse-swiglu", "fuse-qknorm-rope", "kv-dtype"}) {
    EXPECT_THAT(compile_out_, HasSubstr(pass));
  }
  EXPECT_THAT(compile_out_, HasSubstr("grouped 4 q/k/v triples"));
  EXPECT_EQ(ReadFile(plan_).substr(0, 8), "JLLMPLAN");
}

TEST_F(ToolsTest, CompileDumpsIrAndTakesAPassFile) {
  const std::string yaml = dir_ + "/passes.yaml";
  WriteFile(yaml, "passes:\n  fuse-swiglu: false\n  kv-dtype: {enabled: true, dtype: int8}\n");
  ToolRun r = Tool(JLLM_COMPILE_PATH, {gguf_, "-o", plan_, "--passes", yaml, "--dump-ir",
                                       "--dump-ir-after", "group-qkv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("# IR after group-qkv"));
  EXPECT_THAT(r.out, HasSubstr("jllm-ir 1"));
  EXPECT_THAT(r.out, HasSubstr("kv_cache int8 int8 int8 int8"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("fuse-swiglu +off"));

  WriteFile(yaml, "passes:\n  fuse-everything: true\n");
  r = Tool(JLLM_COMPILE_PATH, {gguf_, "-o", plan_, "--passes", yaml});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("fuse-everything"));
}

#if JLLM_HAVE_NVRTC
// --arch compiles each architecture's kernels as the backend will lower them on it: the tiny
// model's gate+up GEMV takes 112 KiB of shared memory lowered for sm_90 (a ring of 3), more than
// an sm_86 CTA may (99 KiB), so sm_86's CUBINs are of the specs lowered for it, not sm_90's.
TEST_F(ToolsTest, CompileLowersEachArchitectureForItsSharedMemory) {
  ToolRun r = Tool(JLLM_COMPILE_PATH, {gguf_, "-o", plan_, "--arch", "sm_86,sm_90"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plan = ReadPlanFile(plan_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto cubins = cuda::ParseCubins(plan->sections.at(std::string(kCubinsSection)), "CUBN");
  ASSERT_TRUE(cubins.ok()) << cubins.status();
  auto keys = [&](const std::string& arch) {
    std::set<std::string> out;
    auto lowered = cuda::LowerGraph(plan->graph, nullptr, cuda::TargetForArch(arch));
    EXPECT_TRUE(lowered.ok()) << lowered.status();
    if (lowered.ok()) {
      for (const cuda::KernelSpec& s : lowered->specs) out.insert(s.ModuleKey());
    }
    return out;
  };
  auto held = [&](const std::string& arch) {
    std::set<std::string> out;
    for (const auto& [key, cubin] : cubins->at(arch)) out.insert(key);
    return out;
  };
  EXPECT_EQ(held("sm_86"), keys("sm_86"));
  EXPECT_EQ(held("sm_90"), keys("sm_90"));
  EXPECT_NE(keys("sm_86"), keys("sm_90"));
}
#endif

// --tuning FILE: the per-shape GEMV choices go into the plan's TUNE section as written, the
// plan's kernel specs are lowered with them, and jllm-run runs it (here on the CPU, which
// ignores them). A file naming a shape the model lacks, or a bad knob, is refused naming the file;
// --tune without a GPU says it needs one.
TEST_F(ToolsTest, CompileTakesATuningFile) {
  const std::string yaml = dir_ + "/tuning.yaml";
  WriteFile(yaml, "device: \"Some GPU (sm_90, 132 SMs)\"\ngemv:\n  \"q4_K 256x256 +residual\": {nw: 4, minb: 4}\n");
  ToolRun r = Tool(JLLM_COMPILE_PATH, {gguf_, "-o", plan_, "--tuning", yaml});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plan = ReadPlanFile(plan_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->sections.count(std::string(kTuningSection)), 1u);
  auto table = cuda::ParseTuningYaml(plan->sections.at(std::string(kTuningSection)), "TUNE");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->device, "Some GPU (sm_90, 132 SMs)");
  EXPECT_EQ(table->gemv.at("q4_K 256x256 +residual"), (cuda::GemvKnobValues{{"nw", 4}, {"minb", 4}}));
  auto specs = cuda::ParseKernelSpecs(plan->sections.at(std::string(kKernelSpecsSection)), "KSPC");
  ASSERT_TRUE(specs.ok()) << specs.status();
  int tuned = 0;
  for (const cuda::KernelSpec& s : *specs) {
    if (s.label.rfind("gemv q4_K 256x256 +residual", 0) == 0) tuned += s.threads == 128;
  }
  EXPECT_EQ(tuned, 1);  // one spec, the same in every layer
  ToolRun run = Tool(JLLM_RUN_PATH, {plan_, "-p", "Hi", "-n", "2", "--temp", "0", "--backend", "cpu"});
  EXPECT_EQ(run.exit_code, 0) << run.err;

  WriteFile(yaml, "gemv:\n  \"q4_K 2560x4096 +residual\": {nw: 4}\n");
  r = Tool(JLLM_COMPILE_PATH, {gguf_, "-o", dir_ + "/other.plan", "--tuning", yaml});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(yaml + ": tuning: GEMV shape 'q4_K 2560x4096 +residual' is not one of this graph's"));
  WriteFile(yaml, "gemv:\n  \"q4_K 256x256 +residual\": {ring: 1}\n");
  r = Tool(JLLM_COMPILE_PATH, {gguf_, "-o", dir_ + "/other.plan", "--tuning", yaml});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(yaml + ": GEMV shape 'q4_K 256x256 +residual': knob 'ring' must be an integer in 0 or 2..16"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/other.plan"));
  if (GpuUnavailableReason().empty()) GTEST_SKIP() << "a GPU is present: --tune would tune (gpu-check.sh runs it)";
  r = Tool(JLLM_COMPILE_PATH, {gguf_, "-o", dir_ + "/other.plan", "--tune"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--tune measures decode steps on the GPU the plan will run on: "));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/other.plan"));
}

TEST_F(ToolsTest, RunStreamsTextAndDumpsLogitsOfEveryProcessedPosition) {
  const std::string dump = dir_ + "/logits.f32";
  ToolRun r = Tool(JLLM_RUN_PATH, {plan_, "-p", "Hello", "-n", "6", "--temp", "0", "--dump-logits", dump});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("Hello")) << r.out;
  EXPECT_THAT(r.err, HasSubstr("prompt"));
  EXPECT_THAT(r.err, HasSubstr("tok/s"));
  EXPECT_THAT(r.err, HasSubstr("first token after"));

  const auto side = nlohmann::json::parse(ReadFile(dump + ".json"));
  const auto ids = side.at("token_ids").get<std::vector<int32_t>>();
  const auto shape = side.at("shape").get<std::vector<int64_t>>();
  ASSERT_EQ(shape.size(), 2u);
  EXPECT_EQ(shape[0], static_cast<int64_t>(ids.size()));
  EXPECT_EQ(shape[1], kTinyVocab);
  // The byte-level prompt "Hello" (5 ids = its bytes), then the generated tokens fed back: 6
  // generated, the last one never fed, unless an end-of-generation token came first.
  ASSERT_GE(ids.size(), 5u);
  EXPECT_LE(ids.size(), 5u + 5u);
  EXPECT_THAT(std::vector<int32_t>(ids.begin(), ids.begin() + 5),
              ::testing::ElementsAre('H', 'e', 'l', 'l', 'o'));
  const std::string raw = ReadFile(dump);
  ASSERT_EQ(raw.size(), ids.size() * kTinyVocab * sizeof(float));

  // Greedy: each fed-back token is the arg-max of the row before it. The seeded model does not
  // end at once, so at least one generated token is fed back and checked.
  std::vector<float> logits(raw.size() / sizeof(float));
  std::memcpy(logits.data(), raw.data(), raw.size());
  ASSERT_GT(ids.size(), 5u) << "no generated token was fed back; nothing to check";
  for (size_t i = 5; i < ids.size(); ++i) {
    const float* row = logits.data() + (i - 1) * kTinyVocab;
    EXPECT_EQ(std::max_element(row, row + kTinyVocab) - row, ids[i]) << i;
  }

  // The same ids through --prompt-ids give the same logits, bit for bit.
  const std::string ids_file = dir_ + "/ids.txt", dump2 = dir_ + "/logits2.f32";
  WriteFile(ids_file, "72 101\n108\t108 111\n");
  r = Tool(JLLM_RUN_PATH, {plan_, "--prompt-ids", ids_file, "-n", "6", "--temp", "0", "--dump-logits", dump2});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(dump2), raw);
  EXPECT_EQ(nlohmann::json::parse(ReadFile(dump2 + ".json")).at("token_ids"), side.at("token_ids"));
}

TEST_F(ToolsTest, SeededSamplingIsReproducible) {
  const std::vector<std::string> args = {plan_, "-p", "abc", "-n", "12", "--temp", "1.5", "--top-k",
                                         "0", "--top-p", "1", "--min-p", "0", "--seed", "7"};
  ToolRun a = Tool(JLLM_RUN_PATH, args), b = Tool(JLLM_RUN_PATH, args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_THAT(a.err, HasSubstr("seed 7"));
}

TEST_F(ToolsTest, ChatReadsTurnsFromStdin) {
  ToolRun r = Tool(JLLM_RUN_PATH, {plan_, "--chat", "--no-think", "-n", "4", "--temp", "0"},
                   "first question\nsecond question\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two turns, each with its statistics; the second reuses the first turn's cached prefix.
  size_t turns = 0;
  for (size_t at = r.err.find("jllm-run: decode"); at != std::string::npos;
       at = r.err.find("jllm-run: decode", at + 1)) {
    ++turns;
  }
  EXPECT_EQ(turns, 2u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cached"));
}

TEST_F(ToolsTest, ContextFullIsReportedClearly) {
  ToolRun r = Tool(JLLM_RUN_PATH, {plan_, "-p", "Hello", "-c", "12", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Unless the model ends early, 12 positions fill up.
  if (r.err.find("end of generation") == std::string::npos) {
    EXPECT_THAT(r.err, HasSubstr("context is full (all 12 positions used)"));
  }
  r = Tool(JLLM_RUN_PATH, {plan_, "-p", "a prompt longer than the context", "-c", "8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("context holds 8"));
}

TEST_F(ToolsTest, BadInputGetsAClearMessage) {
  ToolRun r = Tool(JLLM_RUN_PATH, {plan_, "-p", "hi", "-n", "2", "--backend", "cuda"});
  if (r.exit_code == 0) {
    EXPECT_THAT(r.err, HasSubstr("cuda backend"));  // this machine has a GPU
  } else {
    // No GPU: a clear error that says so and what to use instead, while auto falls back.
    EXPECT_THAT(r.err, HasSubstr("--backend cuda: "));
    EXPECT_THAT(r.err, HasSubstr("--backend cpu"));
    r = Tool(JLLM_RUN_PATH, {plan_, "-p", "hi", "-n", "2"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("running on the CPU"));
    EXPECT_THAT(r.err, HasSubstr("cpu_ref backend"));
  }

  r = Tool(JLLM_RUN_PATH, {gguf_, "-p", "hi"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("GGUF model, not a jllm plan"));

  std::string bytes = ReadFile(plan_);
  WriteFile(plan_, bytes.substr(0, bytes.size() - 100));
  r = Tool(JLLM_RUN_PATH, {plan_, "-p", "hi"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("truncated"));
  WriteFile(plan_, bytes);

  std::filesystem::rename(gguf_, gguf_ + ".moved");
  r = Tool(JLLM_RUN_PATH, {plan_, "-p", "hi", "-n", "1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("missing (moved or deleted)"));
  r = Tool(JLLM_RUN_PATH, {plan_, "-p", "hi", "-n", "1", "--model", gguf_ + ".moved"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  const std::string ids_file = dir_ + "/bad-ids.txt";
  WriteFile(ids_file, "1 2 x3");
  r = Tool(JLLM_RUN_PATH, {plan_, "--prompt-ids", ids_file, "--model", gguf_ + ".moved"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("'x3' is not a token id"));

  r = Tool(JLLM_RUN_PATH, {plan_});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("give a prompt"));
}

}  // namespace
}  // namespace jllm::runtime
