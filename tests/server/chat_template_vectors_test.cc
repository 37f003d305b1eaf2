// Chat requests rendered into prompts, against tests/data/qwen3/chat-template-vectors.jsonl (a copy
// of ../shared/qwen3's, whose README says how it was made):
// conversations rendered by Hugging Face transformers' apply_chat_template with Qwen3's own
// Jinja template (tools declared, tool calls with object or string arguments, several tool
// responses, reasoning in history, thinking off). Each case goes through the request parser
// (OpenAI JSON in) and the chat template (prompt text out).
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "runtime/tokenizer/chat_template.h"
#include "server/chat_request.h"
#include "tests/support/test_data.h"

namespace jllm::server {
namespace {

const std::string kVectors = ::jllm::testing::RepoTestData("qwen3/chat-template-vectors.jsonl");

TEST(ChatTemplateVectorsTest, RequestsRenderAsTransformersRendersThem) {
  JLLM_REQUIRE_TEST_DATA(std::filesystem::exists(kVectors), kVectors << " is not present");
  std::ifstream in(kVectors);
  std::string line;
  int cases = 0, with_tools = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json v = Json::parse(line);
    Json body = Json::object();
    body["messages"] = v["messages"];
    if (!v["tools"].is_null()) body["tools"] = v["tools"];
    if (!v["enable_thinking"].is_null()) {
      body["chat_template_kwargs"] = {{"enable_thinking", v["enable_thinking"]}};
    }
    const std::string name = v["name"].get<std::string>();
    auto request = ParseChatRequest(body);
    ASSERT_TRUE(request.ok()) << name << ": " << request.status();
    runtime::ChatOptions options;
    options.add_generation_prompt = v["add_generation_prompt"].get<bool>();
    options.enable_thinking = request->enable_thinking.value_or(true);
    options.tools = request->tools;
    auto text = runtime::ChatTemplate::Qwen3().Render(request->messages, options);
    ASSERT_TRUE(text.ok()) << name << ": " << text.status();
    EXPECT_EQ(*text, v["text"].get<std::string>()) << name;
    ++cases;
    with_tools += options.tools.empty() ? 0 : 1;
  }
  EXPECT_EQ(cases, 17);
  EXPECT_EQ(with_tools, 7);
}

}  // namespace
}  // namespace jllm::server
