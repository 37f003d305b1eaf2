// cpu_ref against Hugging Face transformers on the trained tiny-coder model, in CI.
//
// tests/data/tiny_coder_reference.json is written on the GPU machine by
// tests/oracle/make_tiny_coder_reference.py: transformers (float32, eager attention, K/V
// rounded to f16 as jllm's cache stores them) runs the exact Q8_0 weights of
// tiny-coder-q8_0.gguf, dequantized by the oracle's own numpy reader, on prompts tokenized by
// Hugging Face `tokenizers`, and records its greedy continuation and, for every processed
// position, its top-5 logits, logsumexp and a few fixed logit entries.
//
// Here the whole runtime (plan with the default passes and with none, Session, cpu_ref) runs the
// same prompt ids and must reproduce:
//   - the greedy tokens exactly, and
//   - every recorded logit and logsumexp within kLogitTolerance (absolute).
// kLogitTolerance: both sides compute in f32 on identical weights and identical f16 K/V storage,
// so only the order of f32 operations differs; that moves these logits (|logit| < ~40) by about
// 1e-4. 2e-3 leaves a margin of ~10x, while a real error (a wrong op, scale or rounding) moves
// them by far more. The measured maximum is printed.
//
// Skips when the model (tests/support/test_data.h) or the reference file is absent; fails
// instead under JLLM_REQUIRE_ORACLES=1 (CI).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu_ref/cpu_ref_backend.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "passes/pipeline.h"
#include "runtime/plan_file.h"
#include "runtime/session.h"
#include "tests/support/compile_plan.h"
#include "tests/support/gguf_model.h"
#include "tests/support/logits_math.h"
#include "tests/support/test_data.h"

namespace jllm::runtime {
namespace {

using ::jllm::testing::CompilePlan;
using ::jllm::testing::NoPasses;
using ::jllm::testing::TinyCoderPath;

constexpr double kLogitTolerance = 2e-3;
// make_tiny_coder_reference.py's PROMPTS: a reference with fewer would check less than it claims.
constexpr size_t kReferencePrompts = 5;

std::string ReferencePath() { return ::jllm::testing::RepoTestData("tiny_coder_reference.json"); }

struct Reference {
  nlohmann::json json;
  std::vector<int32_t> logit_ids;
};

class TinyCoderReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JLLM_REQUIRE_TINY_CODER();
    JLLM_REQUIRE_TEST_DATA(std::filesystem::exists(ReferencePath()),
                           ReferencePath() << " is absent: run tests/oracle/make_tiny_coder_reference.py "
                                              "on the GPU machine (docs/VALIDATION.md)");
    std::ifstream in(ReferencePath());
    ref_.json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(ref_.json.is_discarded()) << ReferencePath() << " is not valid JSON";
    ASSERT_EQ(ref_.json.value("format", 0), 1);
    ref_.logit_ids = ref_.json["logit_ids"].get<std::vector<int32_t>>();
    ASSERT_FALSE(ref_.logit_ids.empty());
    ASSERT_TRUE(ref_.json["prompts"].is_array());
    ASSERT_EQ(ref_.json["prompts"].size(), kReferencePrompts);
    ASSERT_EQ(std::filesystem::file_size(TinyCoderPath()), ref_.json["model"]["bytes"].get<uint64_t>())
        << TinyCoderPath() << " is not the file the reference was made from";
    model_ = ::jllm::testing::OpenGgufModel(TinyCoderPath());
    ASSERT_NE(model_, nullptr);
  }

  // Runs every reference prompt through a Session on `plan` and checks tokens and logits.
  void CheckAgainstReference(const Plan& plan, const char* label) {
    double worst = 0;
    for (const auto& p : ref_.json["prompts"]) {  // kReferencePrompts of them (SetUp)
      const std::string text = p["text"].get<std::string>();
      SCOPED_TRACE(std::string(label) + ", prompt " + nlohmann::json(text).dump());
      const auto prompt = p["prompt_ids"].get<std::vector<int32_t>>();
      const auto want = p["greedy_ids"].get<std::vector<int32_t>>();
      ASSERT_FALSE(want.empty());

      auto session = Session::FromPlan(plan, "tiny-coder.plan", CreateCpuRefBackend(),
                                       {.context = 256, .n_threads = 2});
      ASSERT_TRUE(session.ok()) << session.status();
      std::vector<std::vector<float>> rows;
      GenerateOptions o;
      o.max_tokens = static_cast<int64_t>(want.size());
      o.on_logits = [&rows](int32_t, absl::Span<const float> row) { rows.emplace_back(row.begin(), row.end()); };
      Sampler greedy({.temperature = 0.0f});
      auto r = (*session)->Generate(prompt, greedy, o);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->tokens, want) << "greedy continuation differs from transformers'";

      const auto& positions = p["positions"];
      // Every processed position: the prompt, then the generated tokens fed back but the last.
      ASSERT_EQ(rows.size(), prompt.size() + want.size() - 1);
      ASSERT_EQ(rows.size(), positions.size());
      double max_err = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto& row = rows[i];
        const auto& ref = positions[i];
        const auto top_ids = ref["top_ids"].get<std::vector<int32_t>>();
        const auto top_logits = ref["top_logits"].get<std::vector<double>>();
        const auto at = ref["logits_at"].get<std::vector<double>>();
        ASSERT_EQ(top_ids.size(), 5u);
        ASSERT_EQ(top_ids.size(), top_logits.size());
        ASSERT_EQ(at.size(), ref_.logit_ids.size());
        auto check = [&](int32_t id, double want_logit, const char* what) {
          ASSERT_GE(id, 0);
          ASSERT_LT(static_cast<size_t>(id), row.size());
          const double err = std::fabs(row[static_cast<size_t>(id)] - want_logit);
          max_err = std::max(max_err, err);
          EXPECT_LE(err, kLogitTolerance) << "position " << i << ", " << what << " id " << id;
        };
        for (size_t k = 0; k < top_ids.size(); ++k) check(top_ids[k], top_logits[k], "top-5");
        for (size_t k = 0; k < at.size(); ++k) check(ref_.logit_ids[k], at[k], "fixed");
        EXPECT_EQ(std::max_element(row.begin(), row.end()) - row.begin(), top_ids[0]) << "position " << i;
        // logsumexp in double, as the reference computes it.
        const double lse_err =
            std::fabs(::jllm::testing::LogSumExp(row) - ref["logsumexp"].get<double>());
        max_err = std::max(max_err, lse_err);
        EXPECT_LE(lse_err, kLogitTolerance) << "position " << i << ", logsumexp";
      }
      std::printf("[%s] %-40s %zu positions, %zu greedy tokens, max |logit error| %.2e (bound %.0e)\n",
                  label, nlohmann::json(text).dump().c_str(), rows.size(), want.size(), max_err,
                  kLogitTolerance);
      worst = std::max(worst, max_err);
    }
    std::printf("[%s] worst |logit error| over all prompts: %.2e\n", label, worst);
  }

  Reference ref_;
  std::unique_ptr<::jllm::testing::GgufModel> model_;
};

TEST_F(TinyCoderReferenceTest, DefaultPassesReproduceTransformers) {
  CheckAgainstReference(CompilePlan(*model_, passes::DefaultPipelineConfig()),
                        "default passes");
}

TEST_F(TinyCoderReferenceTest, UnfusedGraphReproducesTransformers) {
  CheckAgainstReference(CompilePlan(*model_, NoPasses()), "no passes");
}

// The prompt ids come from Hugging Face's tokenizer; jllm's own tokenizer must agree on them.
TEST_F(TinyCoderReferenceTest, JllmTokenizesThePromptsAsHuggingFace) {
  auto session = Session::FromPlan(CompilePlan(*model_, passes::DefaultPipelineConfig()),
                                   "tiny-coder.plan", CreateCpuRefBackend(),
                                   {.context = 256, .n_threads = 1});
  ASSERT_TRUE(session.ok()) << session.status();
  for (const auto& p : ref_.json["prompts"]) {  // kReferencePrompts of them (SetUp)
    auto ids = (*session)->Tokenize(p["text"].get<std::string>());
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, p["prompt_ids"].get<std::vector<int32_t>>()) << p["text"];
  }
}

}  // namespace
}  // namespace jllm::runtime
