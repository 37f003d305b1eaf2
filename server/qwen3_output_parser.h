// Splits what a Qwen3 model writes into reasoning, content and tool calls, as the text streams
// in, so that streamed deltas and the whole message come from one code path:
//
//   <think>\nreasoning\n</think>\n\ncontent<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//
// - A "<think>" at the very start opens the reasoning; "</think>" closes it. The newlines the
//   chat template puts around reasoning are not part of it, nor of the content after it.
// - With tool calls on, each <tool_call>...</tool_call> whose JSON has a name becomes a tool
//   call; whitespace around calls is dropped. A call whose JSON does not parse, or one the
//   model never closes, is given back as content, verbatim.
// - Text that might still turn out to be a tag (or whitespace that would be dropped before
//   one) is held back until it is clear; Finish() releases whatever is left.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jllm::server {

struct ToolCall {
  std::string id;  // left empty by the parser: the response gives each call its id
  std::string name;
  std::string arguments;  // JSON text, as OpenAI's function.arguments
};

struct OutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;  // complete calls, in order
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

class Qwen3OutputParser {
 public:
  explicit Qwen3OutputParser(bool parse_tool_calls) : parse_tool_calls_(parse_tool_calls) {}

  OutputDelta Push(std::string_view text);
  OutputDelta Finish();  // the end of the generation

 private:
  enum class State { kStart, kReasoning, kContent, kToolCall };
  void Run(bool final, OutputDelta* out);
  void CloseToolCall(std::string_view body, OutputDelta* out);

  bool parse_tool_calls_;
  State state_ = State::kStart;
  std::string pending_;        // text not yet given out
  bool strip_newlines_ = false;  // drop the newlines that follow <think> / </think>
  bool after_tool_call_ = false;  // drop whitespace that follows a tool call
  std::string space_before_call_;  // whitespace dropped before the open call, if it fails
};

}  // namespace jllm::server
