#include "server/qwen3_output_parser.h"

#include <algorithm>

#include "runtime/tokenizer/template_json.h"
#include "server/json.h"

namespace jllm::server {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kCallOpen = "<tool_call>";
constexpr std::string_view kCallClose = "</tool_call>";

bool IsNewline(char c) { return c == '\n'; }
bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Where the tail of `s` that must be held back begins: the longest suffix that could still
// grow into `tag`, and the droppable characters before it.
size_t HoldFrom(std::string_view s, std::string_view tag, bool (*droppable)(char)) {
  size_t cut = s.size();
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (tag.starts_with(s.substr(s.size() - n))) {
      cut = s.size() - n;
      break;
    }
  }
  while (cut > 0 && droppable(s[cut - 1])) --cut;
  return cut;
}

void StripLeading(std::string* s, bool (*droppable)(char)) {
  size_t n = 0;
  while (n < s->size() && droppable((*s)[n])) ++n;
  s->erase(0, n);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

OutputDelta Qwen3OutputParser::Push(std::string_view text) {
  pending_.append(text);
  OutputDelta out;
  Run(/*final=*/false, &out);
  return out;
}

OutputDelta Qwen3OutputParser::Finish() {
  OutputDelta out;
  Run(/*final=*/true, &out);
  return out;
}

void Qwen3OutputParser::CloseToolCall(std::string_view body, OutputDelta* out) {
  const Json call = Json::parse(Trim(body), nullptr, /*allow_exceptions=*/false);
  const auto name = call.is_object() ? call.find("name") : call.end();
  const auto args = call.is_object() ? call.find("arguments") : call.end();
  const bool args_ok = call.is_object() && (args == call.end() || args->is_object() || args->is_string());
  if (!call.is_object() || name == call.end() || !name->is_string() ||
      name->get<std::string>().empty() || !args_ok) {
    out->content += space_before_call_;
    out->content.append(kCallOpen).append(body).append(kCallClose);
    space_before_call_.clear();
    return;
  }
  ToolCall c;
  c.name = name->get<std::string>();
  if (args == call.end()) {
    c.arguments = "{}";
  } else {
    // The template's spelling, so that the call renders back into the tokens the model wrote.
    c.arguments = args->is_string() ? args->get<std::string>() : runtime::TemplateJson(*args);
  }
  out->tool_calls.push_back(std::move(c));
  space_before_call_.clear();
  after_tool_call_ = true;
}

void Qwen3OutputParser::Run(bool final, OutputDelta* out) {
  while (true) {
    switch (state_) {
      case State::kStart:
        if (pending_.starts_with(kThinkOpen)) {
          pending_.erase(0, kThinkOpen.size());
          state_ = State::kReasoning;
          strip_newlines_ = true;
          break;
        }
        if (!final && kThinkOpen.starts_with(pending_)) return;  // may still become <think>
        state_ = State::kContent;
        break;

      case State::kReasoning: {
        if (strip_newlines_) {
          StripLeading(&pending_, IsNewline);
          if (pending_.empty() && !final) return;
          strip_newlines_ = false;
        }
        const size_t close = pending_.find(kThinkClose);
        if (close != std::string::npos) {
          std::string_view r = std::string_view(pending_).substr(0, close);
          while (!r.empty() && IsNewline(r.back())) r.remove_suffix(1);
          out->reasoning.append(r);
          pending_.erase(0, close + kThinkClose.size());
          state_ = State::kContent;
          strip_newlines_ = true;
          break;
        }
        const size_t cut = final ? pending_.size() : HoldFrom(pending_, kThinkClose, IsNewline);
        out->reasoning.append(pending_, 0, cut);
        pending_.erase(0, cut);
        return;
      }

      case State::kContent: {
        if (strip_newlines_) {
          StripLeading(&pending_, IsNewline);
          if (pending_.empty() && !final) return;
          strip_newlines_ = false;
        }
        if (after_tool_call_) {
          StripLeading(&pending_, IsSpace);
          if (pending_.empty()) return;
          after_tool_call_ = false;
        }
        if (!parse_tool_calls_) {
          out->content += pending_;
          pending_.clear();
          return;
        }
        const size_t open = pending_.find(kCallOpen);
        if (open != std::string::npos) {
          size_t text_end = open;
          while (text_end > 0 && IsSpace(pending_[text_end - 1])) --text_end;
          out->content.append(pending_, 0, text_end);
          space_before_call_ = pending_.substr(text_end, open - text_end);
          pending_.erase(0, open + kCallOpen.size());
          state_ = State::kToolCall;
          break;
        }
        const size_t cut = final ? pending_.size() : HoldFrom(pending_, kCallOpen, IsSpace);
        out->content.append(pending_, 0, cut);
        pending_.erase(0, cut);
        return;
      }

      case State::kToolCall: {
        const size_t close = pending_.find(kCallClose);
        if (close != std::string::npos) {
          CloseToolCall(std::string_view(pending_).substr(0, close), out);
          pending_.erase(0, close + kCallClose.size());
          state_ = State::kContent;
          break;
        }
        if (final) {  // never closed: the text as the model wrote it
          out->content += space_before_call_;
          out->content.append(kCallOpen).append(pending_);
          space_before_call_.clear();
          pending_.clear();
        }
        return;
      }
    }
  }
}

}  // namespace jllm::server
