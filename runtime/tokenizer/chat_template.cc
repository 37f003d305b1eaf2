#include "runtime/tokenizer/chat_template.h"

#include "absl/strings/str_cat.h"
#include "runtime/tokenizer/template_json.h"

namespace jllm::runtime {
namespace {

// Python's str.lstrip('\n') / rstrip('\n') / strip('\n').
std::string_view LstripNewlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view RstripNewlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}
std::string_view StripNewlines(std::string_view s) { return RstripNewlines(LstripNewlines(s)); }

// Python's s.split(sep)[0] and s.split(sep)[-1].
std::string_view BeforeFirst(std::string_view s, std::string_view sep) {
  const size_t at = s.find(sep);
  return at == std::string_view::npos ? s : s.substr(0, at);
}
std::string_view AfterLast(std::string_view s, std::string_view sep) {
  const size_t at = s.rfind(sep);
  return at == std::string_view::npos ? s : s.substr(at + sep.size());
}

bool IsToolResponse(std::string_view content) {
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

// The template's words around the tool declarations, verbatim.
constexpr std::string_view kToolsIntro =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsOutro =
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

void AppendToolCalls(const ChatMessage& m, std::string_view content, std::string* out) {
  for (size_t k = 0; k < m.tool_calls.size(); ++k) {
    const ChatToolCall& call = m.tool_calls[k];
    if (k > 0 || !content.empty()) *out += '\n';
    absl::StrAppend(out, "<tool_call>\n{\"name\": \"", call.name, "\", \"arguments\": ",
                    call.arguments.is_string() ? call.arguments.get<std::string>()
                                               : TemplateJson(call.arguments),
                    "}\n</tool_call>");
  }
}

}  // namespace

absl::StatusOr<ChatTemplate> ChatTemplate::FromGgufTemplate(std::string_view jinja) {
  if (jinja.empty() || jinja.find("<|im_start|>") != std::string_view::npos) return ChatTemplate();
  return absl::UnimplementedError(
      "tokenizer.chat_template is not a ChatML template; jllm renders only Qwen3's ChatML chat format");
}

absl::StatusOr<std::string> ChatTemplate::Render(absl::Span<const ChatMessage> messages,
                                                 const ChatOptions& options) const {
  if (messages.empty()) return absl::InvalidArgumentError("chat template: no messages to render");
  const int n = static_cast<int>(messages.size());
  for (const ChatMessage& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
      return absl::InvalidArgumentError(absl::StrCat(
          "chat template: unknown role '", m.role, "' (supported: system, user, assistant, tool)"));
    }
  }

  std::string out;
  if (!options.tools.empty()) {
    out += "<|im_start|>system\n";
    if (messages[0].role == "system") absl::StrAppend(&out, messages[0].content, "\n\n");
    out += kToolsIntro;
    for (const nlohmann::ordered_json& tool : options.tools) {
      absl::StrAppend(&out, "\n", TemplateJson(tool));
    }
    out += kToolsOutro;
  } else if (messages[0].role == "system") {
    absl::StrAppend(&out, "<|im_start|>system\n", messages[0].content, "<|im_end|>\n");
  }
  // The last real user query: tool responses sent back as user messages do not count. Assistant
  // turns after it keep their reasoning; earlier ones lose it.
  int last_query = n - 1;
  for (int i = n - 1; i >= 0; --i) {
    if (messages[i].role == "user" && !IsToolResponse(messages[i].content)) {
      last_query = i;
      break;
    }
  }

  for (int i = 0; i < n; ++i) {
    const ChatMessage& m = messages[i];
    const bool last = i == n - 1;
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      absl::StrAppend(&out, "<|im_start|>", m.role, "\n", m.content, "<|im_end|>\n");
    } else if (m.role == "assistant") {
      std::string_view content = m.content;
      std::string_view reasoning;
      if (m.reasoning_content) {
        reasoning = *m.reasoning_content;
      } else if (m.content.find("</think>") != std::string::npos) {
        content = LstripNewlines(AfterLast(m.content, "</think>"));
        reasoning = LstripNewlines(AfterLast(RstripNewlines(BeforeFirst(m.content, "</think>")), "<think>"));
      }
      if (i > last_query && (last || !reasoning.empty())) {
        out += "<|im_start|>assistant\n<think>\n";
        out += StripNewlines(reasoning);
        out += "\n</think>\n\n";
        out += LstripNewlines(content);
      } else {
        out += "<|im_start|>assistant\n";
        out += content;
      }
      AppendToolCalls(m, content, &out);
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      // Consecutive tool results share one user turn.
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      absl::StrAppend(&out, "\n<tool_response>\n", m.content, "\n</tool_response>");
      if (last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!options.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace jllm::runtime
