// Parse(): reads the text form described in ir/text.h.
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "absl/strings/str_split.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "ir/text.h"

namespace jllm::ir {
namespace {

enum class TokKind { kWord, kValueRef, kWeightRef, kPunct, kEnd };

struct Token {
  TokKind kind;
  std::string text;  // the word or name (unquoted), or the punctuation character
};

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '-' || c == '+';
}

// A word or a double-quoted string at line[*pos].
absl::StatusOr<std::string> LexName(absl::string_view line, size_t* pos) {
  size_t i = *pos;
  if (i < line.size() && line[i] == '"') {
    size_t j = i + 1;
    while (j < line.size() && line[j] != '"') j += line[j] == '\\' ? 2 : 1;
    if (j >= line.size()) return absl::InvalidArgumentError("unterminated quoted name");
    std::string out, error;
    if (!absl::CUnescape(line.substr(i + 1, j - i - 1), &out, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("bad escape in quoted name: ", error));
    }
    *pos = j + 1;
    return out;
  }
  size_t j = i;
  while (j < line.size() && IsWordChar(line[j])) ++j;
  if (j == i) return absl::InvalidArgumentError(absl::StrCat("expected a name at column ", i + 1));
  *pos = j;
  return std::string(line.substr(i, j - i));
}

absl::StatusOr<std::vector<Token>> Lex(absl::string_view line) {
  std::vector<Token> toks;
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#') {
      break;  // a comment runs to the end of the line
    } else if (c == '%' || c == '@') {
      ++i;
      ASSIGN_OR_RETURN(std::string name, LexName(line, &i));
      toks.push_back({c == '%' ? TokKind::kValueRef : TokKind::kWeightRef, std::move(name)});
    } else if (c == '"' || IsWordChar(c)) {
      ASSIGN_OR_RETURN(std::string word, LexName(line, &i));
      toks.push_back({TokKind::kWord, std::move(word)});
    } else if (absl::string_view("()[]{},;=:").find(c) != absl::string_view::npos) {
      toks.push_back({TokKind::kPunct, std::string(1, c)});
      ++i;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected character '", std::string(1, c), "' at column ", i + 1));
    }
  }
  toks.push_back({TokKind::kEnd, ""});
  return toks;
}

// Walks the tokens of one line.
class Cursor {
 public:
  explicit Cursor(std::vector<Token> toks) : toks_(std::move(toks)) {}
  const Token& Peek() const { return toks_[i_]; }
  bool AtEnd() const { return Peek().kind == TokKind::kEnd; }
  bool IsPunct(char c) const { return Peek().kind == TokKind::kPunct && Peek().text[0] == c; }
  bool TakePunct(char c) {
    if (!IsPunct(c)) return false;
    ++i_;
    return true;
  }
  absl::Status ExpectPunct(char c) {
    if (TakePunct(c)) return absl::OkStatus();
    return Unexpected(absl::StrCat("'", std::string(1, c), "'"));
  }
  absl::StatusOr<std::string> Expect(TokKind kind, absl::string_view what) {
    if (Peek().kind != kind) return Unexpected(what);
    return toks_[i_++].text;
  }
  absl::Status Unexpected(absl::string_view what) const {
    const Token& t = Peek();
    const std::string got = t.kind == TokKind::kEnd ? "the end of the line"
                            : t.kind == TokKind::kValueRef ? absl::StrCat("'%", t.text, "'")
                            : t.kind == TokKind::kWeightRef ? absl::StrCat("'@", t.text, "'")
                                                             : absl::StrCat("'", t.text, "'");
    return absl::InvalidArgumentError(absl::StrCat("expected ", what, ", found ", got));
  }

  // name[=value] pairs up to the end of the line.
  absl::StatusOr<std::vector<fields::TextField>> Fields() {
    std::vector<fields::TextField> out;
    while (!AtEnd()) {
      ASSIGN_OR_RETURN(std::string name, Expect(TokKind::kWord, "an attribute name"));
      std::optional<std::string> value;
      if (TakePunct('=')) {
        ASSIGN_OR_RETURN(std::string v, Expect(TokKind::kWord, "an attribute value"));
        value = std::move(v);
      }
      out.push_back({std::move(name), std::move(value)});
    }
    return out;
  }

  absl::StatusOr<ValueType> Type() {
    ASSIGN_OR_RETURN(std::string dtype_name, Expect(TokKind::kWord, "a dtype"));
    const auto dtype = ParseDType(dtype_name);
    if (!dtype) return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", dtype_name, "'"));
    ValueType t{*dtype, {}};
    RETURN_IF_ERROR(ExpectPunct('['));
    while (!TakePunct(']')) {
      if (!t.shape.dims.empty()) RETURN_IF_ERROR(ExpectPunct(','));
      ASSIGN_OR_RETURN(std::string dim, Expect(TokKind::kWord, "a dimension"));
      int64_t d = 0;
      const absl::string_view text = dim;
      if (text == "T") {
        d = kDimT;
      } else if (text == "S") {
        d = kDimS;
      } else if (!absl::SimpleAtoi(dim, &d) || d < 1) {
        return absl::InvalidArgumentError(absl::StrCat("bad dimension '", dim, "'"));
      }
      if (t.shape.dims.size() >= kMaxRank) return absl::InvalidArgumentError("rank above 4");
      t.shape.dims.push_back(d);
    }
    return t;
  }

 private:
  std::vector<Token> toks_;
  size_t i_ = 0;
};

std::optional<GgmlType> GgmlTypeFromName(absl::string_view name) {
  for (uint32_t id = 0; id < 64; ++id) {
    auto t = LookupGgmlType(id);
    if (t && Sv(t->name) == name) return t->type;
  }
  return std::nullopt;
}

struct PendingNode {
  int line;
  OpKind op;
  std::vector<std::string> inputs, weights, outputs;
  Attrs attrs;
};

class Parser {
 public:
  absl::Status Line(int line_no, absl::string_view line) {
    line_no_ = line_no;
    ASSIGN_OR_RETURN(std::vector<Token> toks, Lex(line));
    Cursor c(std::move(toks));
    if (c.AtEnd()) return absl::OkStatus();
    if (c.Peek().kind == TokKind::kValueRef) return NodeLine(line_no, c);
    ASSIGN_OR_RETURN(std::string head, c.Expect(TokKind::kWord, "a line keyword"));
    if (!seen_header_ && head != "jllm-ir") {
      return absl::InvalidArgumentError("the text must start with 'jllm-ir 1'");
    }
    if (head == "jllm-ir") return HeaderLine(c);
    if (head == "config") return ConfigLine(c);
    if (head == "kv_cache") return KvLine(c);
    if (head == "weight") return WeightLine(c);
    if (head == "input") return InputLine(c);
    if (head == "output") return OutputLine(c);
    return absl::InvalidArgumentError(absl::StrCat("unknown line keyword '", head, "'"));
  }

  absl::StatusOr<Graph> Finish() {
    if (!seen_header_) return absl::InvalidArgumentError("empty text: no 'jllm-ir 1' header");
    if (!seen_config_) return absl::InvalidArgumentError("no 'config' line");
    for (PendingNode& p : nodes_) {
      Node n{p.op, {}, {}, {}, std::move(p.attrs)};
      for (const auto& name : p.inputs) {
        ASSIGN_OR_RETURN(ValueId v, ValueIdOf(p.line, name));
        n.inputs.push_back(v);
      }
      for (const auto& name : p.outputs) n.outputs.push_back(value_ids_.at(name));
      for (const auto& name : p.weights) {
        auto it = weight_ids_.find(name);
        if (it == weight_ids_.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("line ", p.line, ": no weight line declares @", name));
        }
        n.weights.push_back(it->second);
      }
      g_.nodes.push_back(std::move(n));
    }
    for (const auto& [line, name] : outputs_) {
      ASSIGN_OR_RETURN(ValueId v, ValueIdOf(line, name));
      g_.outputs.push_back(v);
    }
    return std::move(g_);
  }

 private:
  absl::StatusOr<ValueId> ValueIdOf(int line, const std::string& name) const {
    auto it = value_ids_.find(name);
    if (it == value_ids_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line, ": %", name, " is neither an input nor a node output"));
    }
    return it->second;
  }

  absl::Status Declare(const std::string& name, ValueType type) {
    if (value_ids_.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat("%", name, " is defined twice"));
    }
    value_ids_[name] = static_cast<ValueId>(g_.values.size());
    g_.values.push_back({name, std::move(type)});
    return absl::OkStatus();
  }

  absl::Status HeaderLine(Cursor& c) {
    if (seen_header_) return absl::InvalidArgumentError("a second 'jllm-ir' header");
    ASSIGN_OR_RETURN(std::string version, c.Expect(TokKind::kWord, "the format version"));
    if (version != absl::StrCat(kTextFormatVersion)) {
      return absl::InvalidArgumentError(absl::StrCat("text format version ", version,
                                                     " is not supported (this build reads ",
                                                     kTextFormatVersion, ")"));
    }
    seen_header_ = true;
    return absl::OkStatus();
  }

  absl::Status ConfigLine(Cursor& c) {
    if (seen_config_) return absl::InvalidArgumentError("a second 'config' line");
    ASSIGN_OR_RETURN(auto f, c.Fields());
    seen_config_ = true;
    g_.config = ModelConfig{};
    return fields::FromText(f, &g_.config, "config");
  }

  absl::Status KvLine(Cursor& c) {
    while (!c.AtEnd()) {
      ASSIGN_OR_RETURN(std::string name, c.Expect(TokKind::kWord, "a KV cache type"));
      auto t = ParseKvDType(name);
      if (!t) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown KV cache type '", name, "' (valid: f16, int8, f32)"));
      }
      g_.kv_dtypes.push_back(*t);
    }
    return absl::OkStatus();
  }

  absl::Status WeightLine(Cursor& c) {
    WeightRef w;
    ASSIGN_OR_RETURN(w.name, c.Expect(TokKind::kWord, "a weight name"));
    ASSIGN_OR_RETURN(std::string type_name, c.Expect(TokKind::kWord, "a ggml type"));
    const auto type = GgmlTypeFromName(type_name);
    if (!type) return absl::InvalidArgumentError(absl::StrCat("unknown ggml type '", type_name, "'"));
    w.type = *type;
    RETURN_IF_ERROR(c.ExpectPunct('{'));
    while (!c.TakePunct('}')) {
      if (!w.ne.empty()) RETURN_IF_ERROR(c.ExpectPunct(','));
      ASSIGN_OR_RETURN(std::string dim, c.Expect(TokKind::kWord, "a dimension"));
      int64_t d = 0;
      if (!absl::SimpleAtoi(dim, &d)) {
        return absl::InvalidArgumentError(absl::StrCat("bad dimension '", dim, "'"));
      }
      if (w.ne.size() >= 4) return absl::InvalidArgumentError("more than 4 dims");
      w.ne.push_back(d);
    }
    ASSIGN_OR_RETURN(auto f, c.Fields());
    bool have_offset = false, have_size = false;
    for (const auto& field : f) {
      uint64_t* dst = field.name == "offset" ? &w.offset : field.name == "size" ? &w.nbytes : nullptr;
      if (dst == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown weight attribute '", field.name, "' (valid: offset, size)"));
      }
      if (!field.value || !absl::SimpleAtoi(*field.value, dst)) {
        return absl::InvalidArgumentError(absl::StrCat("weight attribute '", field.name,
                                                       "' needs an unsigned integer"));
      }
      (field.name == "offset" ? have_offset : have_size) = true;
    }
    if (!have_offset || !have_size) {
      return absl::InvalidArgumentError("a weight line needs offset= and size=");
    }
    if (weight_ids_.count(w.name)) {
      return absl::InvalidArgumentError(absl::StrCat("weight '", w.name, "' is declared twice"));
    }
    weight_ids_[w.name] = static_cast<WeightId>(g_.weights.size());
    g_.weights.push_back(std::move(w));
    return c.AtEnd() ? absl::OkStatus() : c.Unexpected("the end of the line");
  }

  absl::Status InputLine(Cursor& c) {
    ASSIGN_OR_RETURN(std::string name, c.Expect(TokKind::kValueRef, "a %value"));
    RETURN_IF_ERROR(c.ExpectPunct(':'));
    ASSIGN_OR_RETURN(ValueType t, c.Type());
    if (!c.AtEnd()) return c.Unexpected("the end of the line");
    RETURN_IF_ERROR(Declare(name, std::move(t)));
    g_.inputs.push_back(static_cast<ValueId>(g_.values.size() - 1));
    return absl::OkStatus();
  }

  absl::Status OutputLine(Cursor& c) {
    do {
      ASSIGN_OR_RETURN(std::string name, c.Expect(TokKind::kValueRef, "a %value"));
      outputs_.emplace_back(line_no_, std::move(name));
    } while (c.TakePunct(','));
    return c.AtEnd() ? absl::OkStatus() : c.Unexpected("',' or the end of the line");
  }

  absl::Status NodeLine(int line_no, Cursor& c) {
    PendingNode p{line_no, OpKind::kAdd, {}, {}, {}, NoAttrs{}};
    do {
      ASSIGN_OR_RETURN(std::string name, c.Expect(TokKind::kValueRef, "an output %value"));
      RETURN_IF_ERROR(c.ExpectPunct(':'));
      ASSIGN_OR_RETURN(ValueType t, c.Type());
      RETURN_IF_ERROR(Declare(name, std::move(t)));
      p.outputs.push_back(std::move(name));
    } while (c.TakePunct(','));
    RETURN_IF_ERROR(c.ExpectPunct('='));
    ASSIGN_OR_RETURN(std::string op_name, c.Expect(TokKind::kWord, "an op name"));
    const auto op = ParseOpName(op_name);
    if (!op) return absl::InvalidArgumentError(absl::StrCat("unknown op '", op_name, "'"));
    p.op = *op;
    RETURN_IF_ERROR(c.ExpectPunct('('));
    if (c.Peek().kind == TokKind::kValueRef) {
      do {
        ASSIGN_OR_RETURN(std::string in, c.Expect(TokKind::kValueRef, "an input %value"));
        p.inputs.push_back(std::move(in));
      } while (c.TakePunct(','));
    }
    if (c.TakePunct(';')) {
      do {
        ASSIGN_OR_RETURN(std::string w, c.Expect(TokKind::kWeightRef, "a @weight"));
        p.weights.push_back(std::move(w));
      } while (c.TakePunct(','));
    }
    RETURN_IF_ERROR(c.ExpectPunct(')'));
    ASSIGN_OR_RETURN(auto f, c.Fields());
    ASSIGN_OR_RETURN(p.attrs, AttrsFromText(p.op, f, op_name));
    nodes_.push_back(std::move(p));
    return absl::OkStatus();
  }

 private:
  int line_no_ = 0;
  Graph g_;
  bool seen_header_ = false;
  bool seen_config_ = false;
  std::map<std::string, ValueId> value_ids_;
  std::map<std::string, WeightId> weight_ids_;
  std::vector<PendingNode> nodes_;
  std::vector<std::pair<int, std::string>> outputs_;
};

}  // namespace

absl::StatusOr<Graph> Parse(std::string_view text) {
  Parser parser;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(Sv(text), '\n')) {
    ++line_no;
    if (auto st = parser.Line(line_no, line); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": ", st.message()));
    }
  }
  return parser.Finish();
}

}  // namespace jllm::ir
