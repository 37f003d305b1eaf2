#include "server/chat_request.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace jllm::server {
namespace {

// A message's text: a string, or the concatenated text of an array of text parts.
absl::StatusOr<std::string> ReadContent(const Json& message, const std::string& path,
                                        bool null_allowed) {
  const std::string field = FieldPath(path, "content");
  const auto it = message.find("content");
  if (it == message.end() || it->is_null()) {
    if (null_allowed) return std::string();
    return FieldError(field, absl::StrCat(field, " is missing (a string or an array of text parts)"));
  }
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) {
    return FieldError(field, absl::StrCat(field, " must be a string or an array of text parts, not ",
                                          Sv(JsonTypeName(*it))));
  }
  std::string text;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& part = (*it)[i];
    const std::string part_path = absl::StrCat(field, "[", i, "]");
    if (!part.is_object()) {
      return FieldError(part_path, absl::StrCat(part_path, " must be an object, not ",
                                                Sv(JsonTypeName(part))));
    }
    ASSIGN_OR_RETURN(std::optional<std::string> type, GetString(part, "type", part_path));
    if (type.value_or("") != "text") {
      return FieldError(FieldPath(part_path, "type"),
                        absl::StrCat(part_path, ".type '", type.value_or(""),
                                     "' is not supported: jllm-server takes text parts only"));
    }
    ASSIGN_OR_RETURN(std::optional<std::string> part_text, GetString(part, "text", part_path));
    if (!part_text) {
      return FieldError(FieldPath(part_path, "text"), absl::StrCat(part_path, ".text is missing"));
    }
    text += *part_text;
  }
  return text;
}

absl::StatusOr<std::vector<runtime::ChatToolCall>> ReadToolCalls(const Json& message,
                                                                 const std::string& path) {
  std::vector<runtime::ChatToolCall> calls;
  ASSIGN_OR_RETURN(const Json* list, GetArray(message, "tool_calls", path));
  if (list == nullptr) return calls;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& call = (*list)[i];
    const std::string call_path = absl::StrCat(path, ".tool_calls[", i, "]");
    if (!call.is_object()) {
      return FieldError(call_path, absl::StrCat(call_path, " must be an object, not ",
                                                Sv(JsonTypeName(call))));
    }
    ASSIGN_OR_RETURN(const Json* function, GetObject(call, "function", call_path));
    const std::string fn_path = FieldPath(call_path, "function");
    if (function == nullptr) {
      return FieldError(fn_path, absl::StrCat(fn_path, " is missing (an object with name and arguments)"));
    }
    ASSIGN_OR_RETURN(std::optional<std::string> name, GetString(*function, "name", fn_path));
    if (!name || name->empty()) {
      return FieldError(FieldPath(fn_path, "name"), absl::StrCat(fn_path, ".name is missing"));
    }
    runtime::ChatToolCall c;
    c.name = *name;
    const auto args = function->find("arguments");
    if (args != function->end() && !args->is_null()) {
      if (!args->is_string() && !args->is_object()) {
        const std::string args_path = FieldPath(fn_path, "arguments");
        return FieldError(args_path, absl::StrCat(args_path, " must be a JSON string or an object, not ",
                                                  Sv(JsonTypeName(*args))));
      }
      c.arguments = *args;
    }
    calls.push_back(std::move(c));
  }
  return calls;
}

absl::StatusOr<runtime::ChatMessage> ReadMessage(const Json& message, const std::string& path) {
  if (!message.is_object()) {
    return FieldError(path, absl::StrCat(path, " must be an object, not ", Sv(JsonTypeName(message))));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> role, GetString(message, "role", path));
  const std::string role_path = FieldPath(path, "role");
  if (!role) return FieldError(role_path, absl::StrCat(role_path, " is missing"));
  runtime::ChatMessage m;
  m.role = *role == "developer" ? "system" : *role;  // OpenAI's newer name for the system role
  if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
    return FieldError(role_path, absl::StrCat(role_path, ": unknown role '", *role,
                                              "' (expected system, developer, user, assistant or tool)"));
  }
  const bool assistant = m.role == "assistant";
  ASSIGN_OR_RETURN(m.content, ReadContent(message, path, /*null_allowed=*/assistant));
  if (assistant) {
    ASSIGN_OR_RETURN(m.reasoning_content, GetString(message, "reasoning_content", path));
    ASSIGN_OR_RETURN(m.tool_calls, ReadToolCalls(message, path));
  }
  return m;
}

absl::StatusOr<std::vector<Json>> ReadTools(const Json& body) {
  std::vector<Json> tools;
  ASSIGN_OR_RETURN(const Json* list, GetArray(body, "tools"));
  if (list == nullptr) return tools;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& tool = (*list)[i];
    const std::string path = absl::StrCat("tools[", i, "]");
    if (!tool.is_object()) {
      return FieldError(path, absl::StrCat(path, " must be an object, not ", Sv(JsonTypeName(tool))));
    }
    ASSIGN_OR_RETURN(std::optional<std::string> type, GetString(tool, "type", path));
    if (type.value_or("function") != "function") {
      return FieldError(FieldPath(path, "type"), absl::StrCat(path, ".type '", *type,
                                                              "' is not supported (only 'function')"));
    }
    ASSIGN_OR_RETURN(const Json* function, GetObject(tool, "function", path));
    if (function == nullptr) {
      return FieldError(FieldPath(path, "function"), absl::StrCat(path, ".function is missing"));
    }
    ASSIGN_OR_RETURN(std::optional<std::string> name, GetString(*function, "name", FieldPath(path, "function")));
    if (!name || name->empty()) {
      return FieldError(FieldPath(path, "function.name"), absl::StrCat(path, ".function.name is missing"));
    }
    tools.push_back(tool);
  }
  return tools;
}

// "auto" (the default) or "none"; anything that would force a call is refused.
absl::StatusOr<bool> ToolChoiceAllowsCalls(const Json& body) {
  const auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return true;
  if (it->is_string()) {
    const std::string choice = it->get<std::string>();
    if (choice == "auto") return true;
    if (choice == "none") return false;
    if (choice == "required") {
      return FieldError("tool_choice", "tool_choice 'required' is not supported: jllm-server "
                                       "cannot force a tool call; use 'auto' or 'none'");
    }
    return FieldError("tool_choice", absl::StrCat("tool_choice '", choice,
                                                  "' is unknown (expected 'auto' or 'none')"));
  }
  if (it->is_object()) {
    return FieldError("tool_choice", "tool_choice naming a function is not supported: "
                                     "jllm-server cannot force a tool call; use 'auto' or 'none'");
  }
  return FieldError("tool_choice", absl::StrCat("tool_choice must be a string, not ",
                                                Sv(JsonTypeName(*it))));
}

}  // namespace

absl::StatusOr<ChatRequest> ParseChatRequest(const Json& body) {
  ChatRequest r;
  ASSIGN_OR_RETURN(const Json* messages, GetArray(body, "messages"));
  if (messages == nullptr) {
    return FieldError("messages", "messages is missing (an array of {role, content} objects)");
  }
  if (messages->empty()) return FieldError("messages", "messages is empty: send at least one message");
  for (size_t i = 0; i < messages->size(); ++i) {
    ASSIGN_OR_RETURN(runtime::ChatMessage m, ReadMessage((*messages)[i], absl::StrCat("messages[", i, "]")));
    r.messages.push_back(std::move(m));
  }
  ASSIGN_OR_RETURN(r.tools, ReadTools(body));
  ASSIGN_OR_RETURN(const bool calls_allowed, ToolChoiceAllowsCalls(body));
  if (!calls_allowed) r.tools.clear();  // "none": the model is not told about them
  r.parse_tool_calls = !r.tools.empty();

  ASSIGN_OR_RETURN(const Json* kwargs, GetObject(body, "chat_template_kwargs"));
  if (kwargs != nullptr) {
    ASSIGN_OR_RETURN(r.enable_thinking, GetBool(*kwargs, "enable_thinking", "chat_template_kwargs"));
  }
  ASSIGN_OR_RETURN(std::optional<bool> logprobs, GetBool(body, "logprobs"));
  if (logprobs.value_or(false)) {
    return FieldError("logprobs", "logprobs are not supported by jllm-server; leave logprobs unset");
  }
  ASSIGN_OR_RETURN(r.generation, ParseGenerationParams(body));
  return r;
}

}  // namespace jllm::server
