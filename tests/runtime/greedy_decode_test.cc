// Greedy decoding of the trained tiny-coder model through the whole runtime: compile (graph,
// default passes) into a plan in memory, read it back, open a Session on cpu_ref and continue
// `def fibonacci(n):`.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/plan_file.h"
#include "runtime/plan_weights.h"
#include "runtime/session.h"
#include "tests/runtime/model_test_support.h"
#include "tests/support/logits_math.h"

namespace jllm::runtime {
namespace {

using ::jllm::testing::Argmax;

constexpr int kNewTokens = 32;

// Greedy continuation of "def fibonacci(n):" by Hugging Face transformers (float32, eager) on the
// same Q8_0 weights: tests/oracle/make_tiny_coder_reference.py, copied from
// tests/data/tiny_coder_reference.json. The reference's output, not ours.
const std::vector<int32_t> kGoldenFibonacciTokens = {
    220, 671, 45621, 25, 434, 23, 17, 16, 198, 262, 308, 25, 526, 284, 220, 16, 15, 15, 15, 198,
    262, 308, 25, 526, 284, 220, 16, 15, 15, 15, 198, 262, 308, 25, 526, 284, 220, 16, 15, 15,
    15, 198, 262, 308, 25, 526, 284, 220};

struct Decoded {
  GenerateResult result;
  std::vector<std::vector<float>> rows;  // logits of every processed position
  std::vector<int32_t> prompt;
};

class GreedyDecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JLLM_REQUIRE_TINY_CODER();
    model_ = testing::OpenTinyCoder();
    ASSERT_NE(model_, nullptr);
  }

  Decoded Decode(const Plan& plan) {
    Decoded d;
    auto session = Session::FromPlan(plan, "tiny-coder.plan", CreateCpuRefBackend(),
                                     {.context = 128, .n_threads = 2});
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return d;
    auto prompt = (*session)->Tokenize("def fibonacci(n):");
    EXPECT_TRUE(prompt.ok()) << prompt.status();
    d.prompt = *prompt;
    Sampler greedy({.temperature = 0.0f});
    GenerateOptions o;
    o.max_tokens = kNewTokens;
    o.on_logits = [&d](int32_t, absl::Span<const float> row) {
      d.rows.emplace_back(row.begin(), row.end());
    };
    auto r = (*session)->Generate(*prompt, greedy, o);
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) d.result = *std::move(r);
    return d;
  }

  std::unique_ptr<testing::TinyCoder> model_;
};

// The gap between the best and second-best logit of a row.
float Margin(std::vector<float> row) {
  std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<float>());
  return row[0] - row[1];
}

TEST_F(GreedyDecodeTest, FibonacciIsDeterministicNonTrivialAndFollowsTheLogits) {
  const Plan plan = testing::CompilePlan(*model_, passes::DefaultPipelineConfig());
  const Decoded a = Decode(plan);
  const Decoded b = Decode(plan);
  ASSERT_FALSE(a.result.tokens.empty());
  std::printf("def fibonacci(n):%s\n", a.result.text.c_str());
  EXPECT_EQ(a.result.tokens, b.result.tokens);
  EXPECT_EQ(a.result.text, b.result.text);

  // Non-trivial: a full run of tokens, several different ones, over more than one line.
  EXPECT_EQ(a.result.stop, StopReason::kMaxTokens);
  EXPECT_EQ(a.result.tokens.size(), static_cast<size_t>(kNewTokens));
  EXPECT_GE(std::set<int32_t>(a.result.tokens.begin(), a.result.tokens.end()).size(), 6u);
  EXPECT_NE(a.result.text.find('\n'), std::string::npos);

  // Each generated token is the arg-max of the row before it (prompt's last row, then the rows
  // of the fed-back tokens).
  ASSERT_EQ(a.rows.size(), a.prompt.size() + kNewTokens - 1);
  for (int i = 0; i < kNewTokens; ++i) {
    EXPECT_EQ(a.result.tokens[i], Argmax(a.rows[a.prompt.size() - 1 + i])) << "token " << i;
  }
}

TEST_F(GreedyDecodeTest, PassesDoNotChangeTheGreedyTokensWhereTheChoiceIsClear) {
  const Decoded on = Decode(testing::CompilePlan(*model_, passes::DefaultPipelineConfig()));
  const Decoded off = Decode(testing::CompilePlan(*model_, testing::NoPasses()));
  ASSERT_EQ(on.result.tokens.size(), off.result.tokens.size());
  // Tokens agree up to the first step whose top-2 logits are within 0.05 (where f32 rounding
  // differences between the fused and unfused graphs could legitimately pick either).
  int checked = 0;
  for (int i = 0; i < kNewTokens; ++i) {
    ASSERT_EQ(on.result.tokens[i], off.result.tokens[i]) << "token " << i;
    ++checked;
    if (Margin(on.rows[on.prompt.size() - 1 + i]) < 0.05f) break;
  }
  EXPECT_GE(checked, 8);
}

TEST_F(GreedyDecodeTest, MatchesTheGoldenTokensFromTheOracle) {
  const Decoded d = Decode(testing::CompilePlan(*model_, passes::DefaultPipelineConfig()));
  ASSERT_EQ(d.result.tokens.size(), static_cast<size_t>(kNewTokens));
  const size_t n = std::min(kGoldenFibonacciTokens.size(), d.result.tokens.size());
  EXPECT_EQ(std::vector<int32_t>(d.result.tokens.begin(), d.result.tokens.begin() + n),
            std::vector<int32_t>(kGoldenFibonacciTokens.begin(), kGoldenFibonacciTokens.begin() + n));
}

}  // namespace
}  // namespace jllm::runtime
