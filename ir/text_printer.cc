// Print(): the text form described in ir/text.h.
#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "absl/strings/str_join.h"
#include "ir/text.h"

namespace jllm::ir {
namespace {

std::string ValueRef(const Graph& g, ValueId v) {
  if (v < 0 || static_cast<size_t>(v) >= g.values.size()) return absl::StrCat("%<bad id ", v, ">");
  return absl::StrCat("%", fields::FormatWord(g.values[v].name));
}

std::string WeightName(const Graph& g, WeightId w) {
  if (w < 0 || static_cast<size_t>(w) >= g.weights.size()) return absl::StrCat("@<bad id ", w, ">");
  return absl::StrCat("@", fields::FormatWord(g.weights[w].name));
}

}  // namespace

std::string Print(const Graph& g) {
  std::string out = absl::StrCat("jllm-ir ", kTextFormatVersion, "\n");
  absl::StrAppend(&out, "config ", fields::ToText(g.config), "\n");
  out += "kv_cache";
  for (KvDType t : g.kv_dtypes) absl::StrAppend(&out, " ", Sv(KvDTypeName(t)));
  out += "\n";
  for (const WeightRef& w : g.weights) {
    absl::StrAppend(&out, "weight ", fields::FormatWord(w.name), " ", Sv(GgmlTypeName(w.type)), " {",
                    absl::StrJoin(w.ne, ","), "} offset=", w.offset, " size=", w.nbytes, "\n");
  }
  for (ValueId v : g.inputs) {
    absl::StrAppend(&out, "input ", ValueRef(g, v), ": ",
                    v >= 0 && static_cast<size_t>(v) < g.values.size()
                        ? ValueTypeToString(g.type_of(v))
                        : "?",
                    "\n");
  }
  for (const Node& n : g.nodes) {
    std::vector<std::string> outs;
    for (ValueId v : n.outputs) {
      const bool ok = v >= 0 && static_cast<size_t>(v) < g.values.size();
      outs.push_back(absl::StrCat(ValueRef(g, v), ": ", ok ? ValueTypeToString(g.type_of(v)) : "?"));
    }
    std::vector<std::string> ins, ws;
    for (ValueId v : n.inputs) ins.push_back(ValueRef(g, v));
    for (WeightId w : n.weights) ws.push_back(WeightName(g, w));
    absl::StrAppend(&out, absl::StrJoin(outs, ", "), " = ", Sv(OpName(n.op)), "(",
                    absl::StrJoin(ins, ", "), ws.empty() ? "" : "; ", absl::StrJoin(ws, ", "), ")");
    const std::string attrs = AttrsToText(n.attrs);
    if (!attrs.empty()) absl::StrAppend(&out, " ", attrs);
    out += "\n";
  }
  if (!g.outputs.empty()) {
    std::vector<std::string> outs;
    for (ValueId v : g.outputs) outs.push_back(ValueRef(g, v));
    absl::StrAppend(&out, "output ", absl::StrJoin(outs, ", "), "\n");
  }
  return out;
}

}  // namespace jllm::ir
