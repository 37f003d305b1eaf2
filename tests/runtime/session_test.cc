// The generation loop on a scripted backend (no model): stop rules, context-full behaviour,
// streaming, prefix reuse, chunked prefill and the logits callback.
#include "runtime/session.h"

#include <string>
#include <tuple>
#include <vector>

#include "frontends/gguf/tokenizer_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/stop_strings.h"
#include "tests/runtime/runtime_test_support.h"

namespace jllm::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ScriptedBackend;

// The byte-level vocabulary: ids 0..255 are bytes, then <|endoftext|> 256, <|im_start|> 257,
// <|im_end|> 258, <think> 259, </think> 260.
constexpr int32_t kEndOfText = 256, kImStart = 257, kImEnd = 258;
constexpr int64_t kVocab = 261;

std::vector<int32_t> Bytes(std::string_view s) {
  std::vector<int32_t> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

class SessionTest : public ::testing::Test {
 protected:
  // The model "says" `script` after the prompt: position p (p >= prompt length - 1) favours
  // script[p - prompt_len + 1]; past the script it favours `after`.
  void Make(std::vector<int32_t> prompt, std::vector<int32_t> script, int64_t context = 64,
            int32_t after = 'z', int64_t prefill_chunk = 512) {
    prompt_ = std::move(prompt);
    script_ = std::move(script);
    const int64_t prompt_len = static_cast<int64_t>(prompt_.size());
    auto next = [this, prompt_len, after](int64_t pos, int32_t) -> int32_t {
      const int64_t i = pos - prompt_len + 1;
      if (i < 0) return 'a';
      return i < static_cast<int64_t>(script_.size()) ? script_[i] : after;
    };
    ir::Graph graph;
    graph.config.n_vocab = kVocab;
    graph.config.context_length = 1024;
    SessionOptions so;
    so.context = context;
    so.prefill_chunk = prefill_chunk;
    auto s = Session::Create(graph, gguf::ByteLevelTokenizerData(),
                             std::make_unique<ScriptedBackend>(kVocab, next, &calls_),
                             std::make_unique<BlobWeightSource>(absl::Span<const uint8_t>()), so);
    ASSERT_TRUE(s.ok()) << s.status();
    session_ = *std::move(s);
  }

  absl::StatusOr<GenerateResult> Run(GenerateOptions o = {}) {
    o.on_text = [this](std::string_view piece) {
      pieces_.emplace_back(piece);
      return true;
    };
    return session_->Generate(prompt_, greedy_, o);
  }

  std::vector<int32_t> prompt_, script_;
  std::vector<ScriptedBackend::Call> calls_;
  std::vector<std::string> pieces_;
  std::unique_ptr<Session> session_;
  Sampler greedy_{SamplerOptions{.temperature = 0.0f}};
};

TEST_F(SessionTest, StopsAtEndOfGenerationWithoutPrintingIt) {
  auto script = Bytes("Hi!");
  script.push_back(kImEnd);
  Make(Bytes("Say hi"), script);
  auto r = Run();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop, StopReason::kEndOfGeneration);
  EXPECT_EQ(r->text, "Hi!");
  EXPECT_THAT(r->tokens, ElementsAre('H', 'i', '!', kImEnd));
  EXPECT_EQ(r->stats.prompt_tokens, 6);
  EXPECT_EQ(r->stats.generated_tokens, 4);
  EXPECT_EQ(r->stats.decode_steps, 3);  // the end-of-generation token is never fed back
  // One prefill call, then one call per fed token, at consecutive positions.
  ASSERT_EQ(calls_.size(), 4u);
  EXPECT_EQ(calls_[0].tokens, prompt_);
  EXPECT_EQ(calls_[0].pos0, 0);
  EXPECT_EQ(calls_[0].rows, LogitsRows::kLast);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(calls_[i].pos0, 5 + i);
    EXPECT_THAT(calls_[i].tokens, ElementsAre(script[i - 1]));
  }
  EXPECT_GE(r->stats.time_to_first_token, r->stats.prompt_seconds);
}

TEST_F(SessionTest, EndOfTextAlsoEndsGeneration) {
  Make(Bytes("x"), {'o', 'k', kEndOfText, 'n', 'o'});
  auto r = Run();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stop, StopReason::kEndOfGeneration);
  EXPECT_EQ(r->text, "ok");
}

TEST_F(SessionTest, ControlTokensThatDoNotEndGenerationAreNotPrinted) {
  Make(Bytes("x"), {'a', kImStart, 'b', kImEnd});
  auto r = Run();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "ab");
  EXPECT_THAT(r->tokens, ElementsAre('a', kImStart, 'b', kImEnd));
}

TEST_F(SessionTest, StopsAfterMaxTokens) {
  Make(Bytes("abc"), Bytes("0123456789"));
  GenerateOptions o;
  o.max_tokens = 4;
  auto r = Run(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stop, StopReason::kMaxTokens);
  EXPECT_EQ(r->text, "0123");
  EXPECT_EQ(r->tokens.size(), 4u);
  EXPECT_EQ(calls_.size(), 4u);  // prefill + 3 steps: the last token needs no forward pass

  calls_.clear();
  session_->ClearCache();
  o.max_tokens = 0;
  r = Run(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stop, StopReason::kMaxTokens);
  EXPECT_TRUE(r->tokens.empty());
  EXPECT_EQ(calls_.size(), 1u);
}

TEST_F(SessionTest, StopStringEndsTheTextBeforeIt) {
  Make(Bytes("q"), Bytes("abc\n\nUser: more"));
  GenerateOptions o;
  o.stop_strings = {"User:", "never"};
  auto r = Run(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stop, StopReason::kStopString);
  EXPECT_EQ(r->text, "abc\n\n");
  // Nothing that was part of the stop string was ever streamed.
  std::string streamed;
  for (const auto& p : pieces_) streamed += p;
  EXPECT_EQ(streamed, "abc\n\n");
}

TEST_F(SessionTest, ContextFullIsAStopReasonNotACrash) {
  // Context 8, prompt 5: positions 5, 6, 7 are fed back, then the cache is full.
  Make(Bytes("hello"), Bytes("abcdefgh"), /*context=*/8);
  auto r = Run();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop, StopReason::kContextFull);
  EXPECT_EQ(r->text, "abcd");
  EXPECT_EQ(session_->cached_tokens().size(), 8u);
  for (const auto& c : calls_) EXPECT_LE(c.pos0 + static_cast<int64_t>(c.tokens.size()), 8);
}

TEST_F(SessionTest, PromptLongerThanTheContextIsAClearError) {
  Make(Bytes("0123456789"), Bytes("x"), /*context=*/8);
  auto r = Run();
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("10 tokens"));
  EXPECT_THAT(r.status().message(), HasSubstr("context holds 8"));
  EXPECT_THAT(r.status().message(), HasSubstr("-c"));
  EXPECT_TRUE(calls_.empty());
}

TEST_F(SessionTest, BadPromptsAreErrors) {
  Make({}, Bytes("x"));
  EXPECT_TRUE(absl::IsInvalidArgument(Run().status()));
  Make({1, 2, 999}, Bytes("x"));
  EXPECT_THAT(Run().status().message(), HasSubstr("999"));
}

TEST_F(SessionTest, ContextLargerThanTheModelsIsRefused) {
  ir::Graph graph;
  graph.config.n_vocab = kVocab;
  graph.config.context_length = 100;
  SessionOptions so;
  so.context = 101;
  auto s = Session::Create(graph, gguf::ByteLevelTokenizerData(),
                           std::make_unique<ScriptedBackend>(kVocab, nullptr, nullptr),
                           std::make_unique<BlobWeightSource>(absl::Span<const uint8_t>()), so);
  EXPECT_THAT(s.status().message(), HasSubstr("maximum context 100"));
  so.context = 0;  // default: min(model, 4096)
  s = Session::Create(graph, gguf::ByteLevelTokenizerData(),
                      std::make_unique<ScriptedBackend>(kVocab, nullptr, nullptr),
                      std::make_unique<BlobWeightSource>(absl::Span<const uint8_t>()), so);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->context_size(), 100);
}

TEST_F(SessionTest, MultiByteCharactersAreNeverSplitAcrossPieces) {
  // "é" is C3 A9 and "€" is E2 82 AC: one byte token each.
  Make(Bytes("x"), {0xC3, 0xA9, 0xE2, 0x82, 0xAC, '!', kImEnd});
  auto r = Run();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "é€!");
  EXPECT_THAT(pieces_, ElementsAre("é", "€", "!"));
}

TEST_F(SessionTest, CallbackCanCancel) {
  Make(Bytes("x"), Bytes("abcdef"));
  GenerateOptions o;
  int n = 0;
  o.on_text = [&n](std::string_view) { return ++n < 3; };
  auto r = session_->Generate(prompt_, greedy_, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stop, StopReason::kCancelled);
  EXPECT_EQ(r->text, "abc");
}

TEST_F(SessionTest, LogitsCallbackSeesEveryProcessedPositionInOrder) {
  Make(Bytes("hey"), Bytes("yo"), 64, kImEnd);
  GenerateOptions o;
  std::vector<int32_t> tokens;
  std::vector<int32_t> argmax;
  o.on_logits = [&](int32_t token, absl::Span<const float> row) {
    tokens.push_back(token);
    ASSERT_EQ(row.size(), static_cast<size_t>(kVocab));
    argmax.push_back(static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
  };
  auto r = Run(o);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->tokens, ElementsAre('y', 'o', kImEnd));
  EXPECT_THAT(tokens, ElementsAre('h', 'e', 'y', 'y', 'o'));    // prompt + fed tokens
  EXPECT_THAT(argmax, ElementsAre('a', 'a', 'y', 'o', kImEnd));  // each row predicts the next
  EXPECT_EQ(calls_[0].rows, LogitsRows::kAll);
}

TEST_F(SessionTest, PrefillRunsInChunks) {
  Make(Bytes("abcde"), {kImEnd}, 64, 'z', /*prefill_chunk=*/2);
  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(calls_.size(), 3u);
  EXPECT_EQ(calls_[0].pos0, 0);
  EXPECT_EQ(calls_[1].pos0, 2);
  EXPECT_EQ(calls_[2].pos0, 4);
  EXPECT_THAT(calls_[2].tokens, ElementsAre('e'));
}

// --profile at a long prompt's depth: the chunks before the last prefilled unprofiled, then the
// last chunk and the decode step after it profiled at their positions.
TEST_F(SessionTest, ProfileRunsTheStepsAtThePromptsDepth) {
  Make(Bytes("abcdefgh"), {kImEnd}, 64, 'z', /*prefill_chunk=*/3);
  auto profiles = session_->Profile(prompt_);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(calls_.size(), 4u);
  const std::vector<std::tuple<std::vector<int32_t>, int64_t, bool>> want = {
      {Bytes("abc"), 0, false}, {Bytes("def"), 3, false}, {Bytes("gh"), 6, true}, {Bytes("h"), 8, true}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(calls_[i].tokens, std::get<0>(want[i])) << i;
    EXPECT_EQ(calls_[i].pos0, std::get<1>(want[i])) << i;
    EXPECT_EQ(calls_[i].profiled, std::get<2>(want[i])) << i;
  }
  ASSERT_EQ(profiles->size(), 2u);
  EXPECT_EQ((*profiles)[0].tokens, 2);
  EXPECT_EQ((*profiles)[0].position, 6);
  EXPECT_EQ((*profiles)[1].tokens, 1);
  EXPECT_EQ((*profiles)[1].position, 8);
  EXPECT_EQ((*profiles)[1].kernels.size(), 1u);
  for (const auto& call : calls_) EXPECT_FALSE(call.drew);

  // With sampling settings, the decode step ends with their draw (a greedy step's kernels may
  // differ from a sampled one's); the prefill chunks draw nothing.
  calls_.clear();
  session_->ClearCache();
  const SamplerOptions greedy{.temperature = 0};
  profiles = session_->Profile(prompt_, &greedy);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(calls_.size(), 4u);
  for (size_t i = 0; i < calls_.size(); ++i) EXPECT_EQ(calls_[i].drew, i == 3) << i;
  const SamplerOptions bad{.temperature = -1};
  EXPECT_EQ(session_->Profile(prompt_, &bad).status().code(), absl::StatusCode::kInvalidArgument);

  // A one-chunk prompt: its prefill at 0; a prompt that leaves no room for the decode step: an
  // error that names the flag.
  calls_.clear();
  profiles = session_->Profile(Bytes("ab"));
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 2u);
  EXPECT_EQ((*profiles)[0].position, 0);
  EXPECT_EQ((*profiles)[1].position, 2);
  const std::vector<int32_t> full(64, 'a');
  profiles = session_->Profile(full);
  EXPECT_EQ(profiles.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(profiles.status().message(), HasSubstr("-c"));
}

TEST_F(SessionTest, ACachedPrefixIsReused) {
  Make(Bytes("abc"), Bytes("de"), 64, kImEnd);
  auto r = Run();
  ASSERT_TRUE(r.ok());
  // Cache: a b c d e. The next turn extends the conversation.
  EXPECT_THAT(session_->cached_tokens(), ElementsAre('a', 'b', 'c', 'd', 'e'));
  calls_.clear();
  prompt_ = Bytes("abcdeXY");
  r = session_->Generate(prompt_, greedy_, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.reused_tokens, 5);
  EXPECT_EQ(r->stats.prompt_tokens, 2);
  EXPECT_EQ(calls_[0].pos0, 5);
  EXPECT_THAT(calls_[0].tokens, ElementsAre('X', 'Y'));

  // A prompt that diverges early recomputes from the divergence; an identical prompt still
  // recomputes its last token, whose logits are needed.
  calls_.clear();
  prompt_ = Bytes("abQ");
  ASSERT_TRUE(session_->Generate(prompt_, greedy_, {}).ok());
  EXPECT_EQ(calls_[0].pos0, 2);
  calls_.clear();
  ASSERT_TRUE(session_->Generate(prompt_, greedy_, {}).ok());
  EXPECT_EQ(calls_[0].pos0, 2);
  EXPECT_THAT(calls_[0].tokens, ElementsAre('Q'));
}

TEST(StopStringFilter, HoldsBackOnlyWhatCouldStillBecomeAStopString) {
  StopStringFilter f({"</s>", "END"});
  EXPECT_EQ(f.Push("hello <"), "hello ");  // "<" may start "</s>"
  EXPECT_EQ(f.Push("b>"), "<b>");          // it did not
  EXPECT_EQ(f.Push(" E"), " ");
  EXPECT_EQ(f.Push("N"), "");
  EXPECT_EQ(f.Push("x"), "ENx");
  EXPECT_FALSE(f.stopped());
  EXPECT_EQ(f.Push("1 </"), "1 ");
  EXPECT_EQ(f.Push("s> tail"), "");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.matched(), "</s>");
  EXPECT_EQ(f.Push("more"), "");
  EXPECT_EQ(f.Flush(), "");
}

TEST(StopStringFilter, EarliestStopWinsAndFlushReleasesTheRest) {
  StopStringFilter f({"cd", "bcde"});
  EXPECT_EQ(f.Push("abcdef"), "a");
  EXPECT_EQ(f.matched(), "bcde");
  StopStringFilter g({"xyz", ""});
  EXPECT_EQ(g.Push("abxy"), "ab");
  EXPECT_EQ(g.Flush(), "xy");
  StopStringFilter none({});
  EXPECT_EQ(none.Push("anything"), "anything");
}

}  // namespace
}  // namespace jllm::runtime
