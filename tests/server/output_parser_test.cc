// The Qwen3 output parser on model outputs given verbatim (the spelling Qwen3's chat template
// teaches: "<think>\n...\n</think>\n\n", "<tool_call>\n{json}\n</tool_call>"). Every output is
// also fed in every two-piece split and one byte at a time: streaming must not change the
// result, and no delta may carry a tag.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/tokenizer/chat_template.h"
#include "server/qwen3_output_parser.h"

namespace jllm::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Parsed {
  OutputDelta message;
  std::vector<OutputDelta> deltas;
};

void Append(OutputDelta* total, const OutputDelta& d) {
  total->reasoning += d.reasoning;
  total->content += d.content;
  total->tool_calls.insert(total->tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
}

Parsed Feed(const std::vector<std::string>& pieces, bool tools) {
  Qwen3OutputParser parser(tools);
  Parsed p;
  for (const std::string& piece : pieces) p.deltas.push_back(parser.Push(piece));
  p.deltas.push_back(parser.Finish());
  for (const OutputDelta& d : p.deltas) Append(&p.message, d);
  return p;
}

std::string Describe(const OutputDelta& m) {
  std::string s = "reasoning=[" + m.reasoning + "] content=[" + m.content + "]";
  for (const ToolCall& c : m.tool_calls) s += " call " + c.name + " " + c.arguments;
  return s;
}

void ExpectSame(const OutputDelta& got, const OutputDelta& want, const std::string& how) {
  EXPECT_EQ(Describe(got), Describe(want)) << how;
}

// Parses `text` whole, then split in two at every byte, then byte by byte; returns the whole.
OutputDelta ParseEveryWay(const std::string& text, bool tools = true) {
  const OutputDelta whole = Feed({text}, tools).message;
  for (size_t at = 0; at <= text.size(); ++at) {
    ExpectSame(Feed({text.substr(0, at), text.substr(at)}, tools).message, whole,
               "split at byte " + std::to_string(at));
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  const Parsed streamed = Feed(bytes, tools);
  ExpectSame(streamed.message, whole, "byte by byte");
  for (const OutputDelta& d : streamed.deltas) {
    EXPECT_THAT(d.reasoning, Not(HasSubstr("</think>")));
    EXPECT_THAT(d.content, Not(HasSubstr("<think>")));
  }
  return whole;
}

TEST(Qwen3OutputParserTest, ReasoningThenContent) {
  const OutputDelta m = ParseEveryWay("<think>\nThe user wants a prime. 7 is one.\n</think>\n\n7 is prime.");
  EXPECT_EQ(m.reasoning, "The user wants a prime. 7 is one.");
  EXPECT_EQ(m.content, "7 is prime.");
  EXPECT_TRUE(m.tool_calls.empty());
}

TEST(Qwen3OutputParserTest, ReasoningKeepsInnerNewlines) {
  const OutputDelta m = ParseEveryWay("<think>\nstep 1\n\nstep 2\n</think>\n\nDone.\n\nReally.");
  EXPECT_EQ(m.reasoning, "step 1\n\nstep 2");
  EXPECT_EQ(m.content, "Done.\n\nReally.");
}

TEST(Qwen3OutputParserTest, EmptyThinkBlockAndPlainAnswers) {
  EXPECT_EQ(ParseEveryWay("<think>\n\n</think>\n\nHello.").content, "Hello.");
  EXPECT_EQ(ParseEveryWay("<think>\n\n</think>\n\nHello.").reasoning, "");
  const OutputDelta plain = ParseEveryWay("Hello, <b>world</b> <think> is not at the start.");
  EXPECT_EQ(plain.reasoning, "");
  EXPECT_EQ(plain.content, "Hello, <b>world</b> <think> is not at the start.");
  EXPECT_EQ(ParseEveryWay("<thinking> is not a tag").content, "<thinking> is not a tag");
}

TEST(Qwen3OutputParserTest, ReasoningCutOffByTheTokenLimit) {
  const OutputDelta m = ParseEveryWay("<think>\nstill thinking about </thi");
  EXPECT_EQ(m.reasoning, "still thinking about </thi");
  EXPECT_EQ(m.content, "");
}

TEST(Qwen3OutputParserTest, OneToolCall) {
  const OutputDelta m = ParseEveryWay(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
}

TEST(Qwen3OutputParserTest, TwoToolCallsAfterReasoning) {
  const OutputDelta m = ParseEveryWay(
      "<think>\nTwo cities: two calls.\n</think>\n\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"unit\": \"celsius\"}}\n</tool_call>");
  EXPECT_EQ(m.reasoning, "Two cities: two calls.");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(m.tool_calls[1].arguments, "{\"city\": \"Rome\", \"unit\": \"celsius\"}");
}

TEST(Qwen3OutputParserTest, ContentBeforeACallAndAnArgumentsString) {
  const OutputDelta m = ParseEveryWay(
      "Let me compute that.\n<tool_call>\n{\"name\": \"calc\", \"arguments\": \"{\\\"expr\\\": \\\"17*23\\\"}\"}\n</tool_call>");
  EXPECT_EQ(m.content, "Let me compute that.");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "calc");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"expr\": \"17*23\"}");
}

TEST(Qwen3OutputParserTest, ArgumentsAreRewrittenInTheTemplatesSpelling) {
  const OutputDelta m = ParseEveryWay(
      "<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":[1,2],\"b\":{\"c\":\"\u00e9\"}}}\n</tool_call>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"a\": [1, 2], \"b\": {\"c\": \"\u00e9\"}}");
  const OutputDelta no_args = ParseEveryWay("<tool_call>\n{\"name\": \"now\"}\n</tool_call>");
  ASSERT_EQ(no_args.tool_calls.size(), 1u);
  EXPECT_EQ(no_args.tool_calls[0].arguments, "{}");
}

TEST(Qwen3OutputParserTest, MalformedCallsComeBackAsText) {
  const std::string bad_json =
      "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>";
  const OutputDelta m = ParseEveryWay(bad_json);
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, bad_json);
  const std::string no_name = "<tool_call>\n{\"arguments\": {}}\n</tool_call>";
  EXPECT_EQ(ParseEveryWay(no_name).content, no_name);
  const std::string unclosed = "<tool_call>\n{\"name\": \"get_weather\", \"argu";
  const OutputDelta cut = ParseEveryWay(unclosed);
  EXPECT_TRUE(cut.tool_calls.empty());
  EXPECT_EQ(cut.content, unclosed);
}

TEST(Qwen3OutputParserTest, GoodCallThenBadCall) {
  const OutputDelta m = ParseEveryWay(
      "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\nnot json\n</tool_call>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "a");
  EXPECT_EQ(m.content, "<tool_call>\nnot json\n</tool_call>");
}

TEST(Qwen3OutputParserTest, TextThatOnlyLooksLikeATagStartIsKept) {
  EXPECT_EQ(ParseEveryWay("if a < b and c <tool").content, "if a < b and c <tool");
  EXPECT_EQ(ParseEveryWay("trailing spaces stay  \n").content, "trailing spaces stay  \n");
}

TEST(Qwen3OutputParserTest, WithoutToolsATagIsContent) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  const OutputDelta m = ParseEveryWay(text, /*tools=*/false);
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, text);
}

// A parsed reply sent back by the client renders into the very text the model wrote, so the
// next request reuses the cached tokens of this turn.
TEST(Qwen3OutputParserTest, ParsedCallsRenderBackToTheModelsText) {
  const std::string model_text =
      "Let me compute that.\n<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"expr\": \"17*23\"}}\n</tool_call>";
  const OutputDelta m = ParseEveryWay(model_text);
  runtime::ChatMessage reply{"assistant", m.content};
  for (const ToolCall& c : m.tool_calls) reply.tool_calls.push_back({c.name, c.arguments});
  runtime::ChatOptions o;
  o.add_generation_prompt = false;
  o.tools = {nlohmann::ordered_json::parse(R"({"type": "function", "function": {"name": "calc"}})")};
  auto text = runtime::ChatTemplate::Qwen3().Render(
      {runtime::ChatMessage{"user", "What is 17*23?"}, reply, runtime::ChatMessage{"user", "Thanks"}}, o);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("<|im_start|>assistant\n" + model_text + "<|im_end|>\n"));
}

}  // namespace
}  // namespace jllm::server
