// Session and Conversation on a real model: the synthesized tiny preset (byte-level
// vocabulary) through a compiled plan on cpu_ref. session_test.cc covers the loop's rules on
// a scripted backend; here the cache really holds keys and values, so reusing it must give
// what a fresh prefill gives, bit for bit (cpu_ref computes every row of a prefill chunk the
// same way whatever the chunk, so nothing may differ).
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu_ref/cpu_ref_backend.h"
#include "gtest/gtest.h"
#include "runtime/conversation.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_support.h"
#include "tests/support/compile_plan.h"
#include "tests/support/gguf_model.h"

namespace jllm::runtime {
namespace {

struct Generated {
  GenerateResult result;
  std::vector<std::vector<float>> rows;  // logits of every processed position, in order
};

class SessionModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(testing::TempPath("session_model_tiny.gguf"));
    testing::WriteTinyModel(*path_, /*seed=*/5);
    model_ = ::jllm::testing::OpenGgufModel(*path_).release();
    ASSERT_NE(model_, nullptr);
    plan_ = new Plan(::jllm::testing::CompilePlan(*model_, passes::DefaultPipelineConfig()));
  }
  static void TearDownTestSuite() {
    delete plan_;
    delete model_;
    std::filesystem::remove(*path_);
    delete path_;
  }
  void SetUp() override { ASSERT_NE(model_, nullptr); }

  static std::unique_ptr<Session> Open(int64_t context = 128, int64_t prefill_chunk = 512) {
    SessionOptions o;
    o.context = context;
    o.n_threads = 2;
    o.prefill_chunk = prefill_chunk;
    auto s = Session::FromPlan(*plan_, *path_ + ".plan", CreateCpuRefBackend(), o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  static Generated Generate(Session& s, const std::vector<int32_t>& prompt, int64_t max_tokens) {
    Generated run;
    Sampler greedy({.temperature = 0.0f});
    GenerateOptions o;
    o.max_tokens = max_tokens;
    o.on_logits = [&run](int32_t, absl::Span<const float> row) {
      run.rows.emplace_back(row.begin(), row.end());
    };
    auto r = s.Generate(prompt, greedy, o);
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) run.result = *std::move(r);
    return run;
  }

  static std::string* path_;
  static ::jllm::testing::GgufModel* model_;
  static Plan* plan_;
};
std::string* SessionModelTest::path_ = nullptr;
::jllm::testing::GgufModel* SessionModelTest::model_ = nullptr;
Plan* SessionModelTest::plan_ = nullptr;

std::vector<int32_t> Bytes(std::string_view s) { return std::vector<int32_t>(s.begin(), s.end()); }

TEST_F(SessionModelTest, PrefixReuseGivesTheLogitsOfAFreshPrefill) {
  const std::vector<int32_t> first = Bytes("The quick brown fox");
  std::vector<int32_t> second = first;
  for (int32_t b : Bytes(" jumps over the lazy dog")) second.push_back(b);

  auto reusing = Open();
  ASSERT_NE(reusing, nullptr);
  const Generated turn1 = Generate(*reusing, first, 4);
  ASSERT_EQ(turn1.result.tokens.size(), 4u);
  const Generated turn2 = Generate(*reusing, second, 6);
  // The whole first prompt was cached and is reused (the generated tokens after it are reused
  // too where they happen to match the second prompt); the rest is prefilled.
  const int64_t reused = turn2.result.stats.reused_tokens;
  ASSERT_GE(reused, static_cast<int64_t>(first.size()));
  ASSERT_LT(reused, static_cast<int64_t>(second.size()));

  auto fresh_session = Open();
  ASSERT_NE(fresh_session, nullptr);
  const Generated fresh = Generate(*fresh_session, second, 6);
  EXPECT_EQ(fresh.result.stats.reused_tokens, 0);
  EXPECT_EQ(turn2.result.tokens, fresh.result.tokens);
  // turn2 saw positions reused.. onward; fresh saw them all.
  ASSERT_EQ(turn2.rows.size() + static_cast<size_t>(reused), fresh.rows.size());
  for (size_t i = 0; i < turn2.rows.size(); ++i) {
    ASSERT_EQ(turn2.rows[i], fresh.rows[reused + i]) << "position " << reused + i;
  }
}

TEST_F(SessionModelTest, ChunkedPrefillGivesTheLogitsOfOneChunk) {
  const std::vector<int32_t> prompt = Bytes("def fibonacci(n):\n    return n");
  auto whole = Open(128, 512), chunked = Open(128, 5);
  ASSERT_NE(whole, nullptr);
  ASSERT_NE(chunked, nullptr);
  const Generated a = Generate(*whole, prompt, 4), b = Generate(*chunked, prompt, 4);
  ASSERT_EQ(a.rows.size(), prompt.size() + 3);
  EXPECT_EQ(a.result.tokens, b.result.tokens);
  EXPECT_EQ(a.rows, b.rows);
}

TEST_F(SessionModelTest, ConversationKeepsTheHistoryAndTurnTwoIsAFreshGenerationOfItsPrompt) {
  auto session = Open(256);
  ASSERT_NE(session, nullptr);
  const ChatOptions chat{.add_generation_prompt = true, .enable_thinking = false};
  Conversation conv(*session, ChatTemplate::Qwen3(), chat, "Be brief.");
  Sampler greedy({.temperature = 0.0f});
  GenerateOptions o;
  o.max_tokens = 5;
  auto r1 = conv.Reply("hello", greedy, o);
  ASSERT_TRUE(r1.ok()) << r1.status();
  auto r2 = conv.Reply("and then?", greedy, o);
  ASSERT_TRUE(r2.ok()) << r2.status();

  const std::vector<ChatMessage>& m = conv.messages();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[0].content, "Be brief.");
  EXPECT_EQ(m[1].role, "user");
  EXPECT_EQ(m[1].content, "hello");
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].content, r1->text);
  EXPECT_EQ(m[3].role, "user");
  EXPECT_EQ(m[3].content, "and then?");
  EXPECT_EQ(m[4].role, "assistant");
  EXPECT_EQ(m[4].content, r2->text);
  // Turn 2 prefilled only what turn 1 had not cached.
  EXPECT_GT(r2->stats.reused_tokens, 0);

  // Turn 2 is what a fresh session generates on the rendered history up to the second question.
  auto prompt = ChatTemplate::Qwen3().Render(absl::MakeConstSpan(m).subspan(0, 4), chat);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_NE(prompt->find("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"),
            std::string::npos)
      << *prompt;
  EXPECT_TRUE(prompt->ends_with("<|im_start|>user\nand then?<|im_end|>\n<|im_start|>assistant\n"
                                "<think>\n\n</think>\n\n"))
      << *prompt;
  auto fresh = Open(256);
  ASSERT_NE(fresh, nullptr);
  auto ids = fresh->Tokenize(*prompt);
  ASSERT_TRUE(ids.ok()) << ids.status();
  Sampler greedy2({.temperature = 0.0f});
  auto again = fresh->Generate(*ids, greedy2, o);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->tokens, r2->tokens);
  EXPECT_EQ(again->text, r2->text);
  EXPECT_EQ(again->stats.prompt_tokens, r2->stats.prompt_tokens + r2->stats.reused_tokens);
}

TEST_F(SessionModelTest, AFailedTurnLeavesTheHistoryAsItWas) {
  auto session = Open(64);
  ASSERT_NE(session, nullptr);
  Conversation conv(*session, ChatTemplate::Qwen3(), {.enable_thinking = false});
  Sampler greedy({.temperature = 0.0f});
  GenerateOptions o;
  o.max_tokens = 2;
  ASSERT_TRUE(conv.Reply("hi", greedy, o).ok());
  ASSERT_EQ(conv.messages().size(), 2u);
  auto too_long = conv.Reply(std::string(100, 'x'), greedy, o);  // past the 64 positions
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(conv.messages().size(), 2u);
  EXPECT_EQ(conv.messages().back().role, "assistant");
}

}  // namespace
}  // namespace jllm::runtime
