// Qwen3's chat format. Each expected string was worked out by hand from the Jinja template in
// Qwen3's tokenizer_config.json (../shared/qwen3), following its branches for the given messages.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/tokenizer/chat_template.h"
#include "tests/support/temp_files.h"
#include "tests/support/test_data.h"

namespace jllm::runtime {
namespace {

using ::testing::HasSubstr;

std::string Render(const std::vector<ChatMessage>& messages, ChatOptions options = {}) {
  auto text = ChatTemplate::Qwen3().Render(messages, options);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

TEST(ChatTemplateTest, SystemAndUserWithGenerationPrompt) {
  const std::vector<ChatMessage> m = {{"system", "You are helpful."}, {"user", "Hi"}};
  EXPECT_EQ(Render(m),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, ThinkingOffAppendsAnEmptyThinkBlock) {
  const std::vector<ChatMessage> m = {{"user", "Hi"}};
  EXPECT_EQ(Render(m, {.enable_thinking = false}),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplateTest, NoGenerationPrompt) {
  const std::vector<ChatMessage> m = {{"user", "Hi"}};
  EXPECT_EQ(Render(m, {.add_generation_prompt = false}), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateTest, EarlierAssistantTurnsLoseTheirReasoning) {
  const std::vector<ChatMessage> m = {
      {"user", "2+2?"}, {"assistant", "<think>\nadd them\n</think>\n\n4"}, {"user", "times 3?"}};
  EXPECT_EQ(Render(m),
            "<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n4<|im_end|>\n"
            "<|im_start|>user\ntimes 3?<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, FinalAssistantTurnAfterTheLastQueryGetsAThinkBlock) {
  const std::vector<ChatMessage> m = {{"user", "Q1"}, {"assistant", "A1"}, {"user", "Q2"}, {"assistant", "A2"}};
  EXPECT_EQ(Render(m, {.add_generation_prompt = false}),
            "<|im_start|>user\nQ1<|im_end|>\n"
            "<|im_start|>assistant\nA1<|im_end|>\n"
            "<|im_start|>user\nQ2<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>\n");
}

TEST(ChatTemplateTest, ReasoningContentKeptApart) {
  ChatMessage answer{"assistant", "A", std::string("R\n")};
  const std::vector<ChatMessage> m = {{"user", "Q"}, answer};
  EXPECT_EQ(Render(m, {.add_generation_prompt = false}),
            "<|im_start|>user\nQ<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nR\n</think>\n\nA<|im_end|>\n");
}

TEST(ChatTemplateTest, ToolResultsShareOneUserTurnAndKeepTheQueryBeforeThem) {
  const std::vector<ChatMessage> m = {{"user", "weather?"},
                                      {"assistant", "<think>\nneed tool\n</think>\n\nCalling."},
                                      {"tool", "{\"t\":20}"},
                                      {"tool", "ok"}};
  EXPECT_EQ(Render(m),
            "<|im_start|>user\nweather?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nneed tool\n</think>\n\nCalling.<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n{\"t\":20}\n</tool_response>"
            "\n<tool_response>\nok\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, UserMessageHoldingAToolResponseIsNotTheLastQuery) {
  const std::vector<ChatMessage> m = {
      {"user", "Q"}, {"assistant", "<think>r</think>A"}, {"user", "<tool_response>x</tool_response>"}};
  EXPECT_EQ(Render(m),
            "<|im_start|>user\nQ<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nr\n</think>\n\nA<|im_end|>\n"
            "<|im_start|>user\n<tool_response>x</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, SystemMessageLaterInTheConversation) {
  const std::vector<ChatMessage> m = {{"user", "a"}, {"system", "b"}};
  EXPECT_EQ(Render(m, {.add_generation_prompt = false}),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>system\nb<|im_end|>\n");
}

TEST(ChatTemplateTest, BadConversationsAreRefused) {
  auto empty = ChatTemplate::Qwen3().Render({});
  EXPECT_FALSE(empty.ok());
  auto bad_role = ChatTemplate::Qwen3().Render({{"narrator", "x"}});
  ASSERT_FALSE(bad_role.ok());
  EXPECT_THAT(std::string(bad_role.status().message()), HasSubstr("narrator"));
}

TEST(ChatTemplateTest, AcceptsTheQwen3Template) {
  const std::string dir = ::jllm::testing::Qwen3TokenizerDir();
  JLLM_REQUIRE_TEST_DATA(!dir.empty(), "Qwen3 tokenizer files not found in ../shared/qwen3 or "
                                       ".deps/qwen3-tokenizer (scripts/setup.sh fetches them)");
  const std::string config = ::jllm::testing::ReadFile(dir + "/tokenizer_config.json");
  ASSERT_NE(config.find("<|im_start|>"), std::string::npos) << dir << "/tokenizer_config.json";
  EXPECT_TRUE(ChatTemplate::FromGgufTemplate(config).ok());  // contains the Qwen3 template
}

TEST(ChatTemplateTest, AcceptsChatMlTemplatesOnly) {
  EXPECT_TRUE(ChatTemplate::FromGgufTemplate("").ok());
  auto llama = ChatTemplate::FromGgufTemplate("{{ '<|start_header_id|>' + message['role'] }}");
  ASSERT_FALSE(llama.ok());
  EXPECT_THAT(std::string(llama.status().message()), HasSubstr("ChatML"));
}

}  // namespace
}  // namespace jllm::runtime
