#include "ir/serialize.h"

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "ir/verify.h"

namespace jllm::ir {
namespace {

constexpr std::string_view kMagic = "JIRG";

void WriteIds(const std::vector<int32_t>& ids, ByteWriter& w) {
  w.U32(static_cast<uint32_t>(ids.size()));
  for (int32_t id : ids) w.U32(static_cast<uint32_t>(id));
}

// A list of ids, each below `limit`.
absl::StatusOr<std::vector<int32_t>> ReadIds(ByteReader& r, size_t limit, absl::string_view what) {
  ASSIGN_OR_RETURN(uint32_t n, r.Count(what, 4));
  std::vector<int32_t> ids;
  ids.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(uint32_t id, r.U32(what));
    if (id >= limit) {
      return r.Error(absl::StrCat(what, ": id ", id, " is out of range (", limit, " entries)"));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

absl::StatusOr<WeightRef> ReadWeight(ByteReader& r) {
  WeightRef w;
  ASSIGN_OR_RETURN(w.name, r.Str("weight name", 4096));
  ASSIGN_OR_RETURN(uint32_t type, r.U32("weight type"));
  if (!LookupGgmlType(type)) {
    return r.Error(absl::StrCat("weight '", w.name, "': unknown ggml type ", type));
  }
  w.type = static_cast<GgmlType>(type);
  ASSIGN_OR_RETURN(uint8_t n_dims, r.U8("weight dims"));
  if (n_dims < 1 || n_dims > 4) {
    return r.Error(absl::StrCat("weight '", w.name, "': ", int{n_dims}, " dims"));
  }
  for (int i = 0; i < n_dims; ++i) {
    ASSIGN_OR_RETURN(int64_t d, r.I64("weight dim"));
    w.ne.push_back(d);
  }
  ASSIGN_OR_RETURN(w.offset, r.U64("weight offset"));
  ASSIGN_OR_RETURN(w.nbytes, r.U64("weight size"));
  return w;
}

absl::StatusOr<Value> ReadValue(ByteReader& r) {
  Value v;
  ASSIGN_OR_RETURN(v.name, r.Str("value name", 4096));
  ASSIGN_OR_RETURN(uint8_t dtype, r.U8("value dtype"));
  if (dtype >= kNumDTypes) return r.Error(absl::StrCat("value %", v.name, ": unknown dtype"));
  v.type.dtype = static_cast<DType>(dtype);
  ASSIGN_OR_RETURN(uint8_t rank, r.U8("value rank"));
  if (rank > kMaxRank) return r.Error(absl::StrCat("value %", v.name, ": rank ", int{rank}));
  for (int i = 0; i < rank; ++i) {
    ASSIGN_OR_RETURN(int64_t d, r.I64("value dim"));
    v.type.shape.dims.push_back(d);
  }
  return v;
}

absl::StatusOr<Node> ReadNode(ByteReader& r, const Graph& g) {
  Node n;
  ASSIGN_OR_RETURN(uint8_t op, r.U8("node op"));
  if (op >= kNumOpKinds) return r.Error(absl::StrCat("unknown op kind ", int{op}));
  n.op = static_cast<OpKind>(op);
  ASSIGN_OR_RETURN(n.inputs, ReadIds(r, g.values.size(), "node inputs"));
  ASSIGN_OR_RETURN(n.weights, ReadIds(r, g.weights.size(), "node weights"));
  ASSIGN_OR_RETURN(n.outputs, ReadIds(r, g.values.size(), "node outputs"));
  ASSIGN_OR_RETURN(n.attrs, ReadAttrs(n.op, r));
  return n;
}

}  // namespace

void WriteGraph(const Graph& g, ByteWriter& w) {
  w.Bytes(kMagic);
  w.U32(kGraphFormatVersion);
  fields::Write(g.config, w);
  w.U32(static_cast<uint32_t>(g.kv_dtypes.size()));
  for (KvDType t : g.kv_dtypes) w.U8(static_cast<uint8_t>(t));
  w.U32(static_cast<uint32_t>(g.weights.size()));
  for (const WeightRef& wr : g.weights) {
    w.Str(wr.name);
    w.U32(static_cast<uint32_t>(wr.type));
    w.U8(static_cast<uint8_t>(wr.ne.size()));
    for (int64_t d : wr.ne) w.I64(d);
    w.U64(wr.offset);
    w.U64(wr.nbytes);
  }
  w.U32(static_cast<uint32_t>(g.values.size()));
  for (const Value& v : g.values) {
    w.Str(v.name);
    w.U8(static_cast<uint8_t>(v.type.dtype));
    w.U8(static_cast<uint8_t>(v.type.shape.dims.size()));
    for (int64_t d : v.type.shape.dims) w.I64(d);
  }
  WriteIds(g.inputs, w);
  WriteIds(g.outputs, w);
  w.U32(static_cast<uint32_t>(g.nodes.size()));
  for (const Node& n : g.nodes) {
    w.U8(static_cast<uint8_t>(n.op));
    WriteIds(n.inputs, w);
    WriteIds(n.weights, w);
    WriteIds(n.outputs, w);
    WriteAttrs(n.attrs, w);
  }
}

absl::StatusOr<Graph> ReadGraph(ByteReader& r) {
  ASSIGN_OR_RETURN(auto magic, r.Bytes(4, "graph magic"));
  if (std::string_view(reinterpret_cast<const char*>(magic.data()), 4) != kMagic) {
    return r.Error("not a jllm graph (bad magic)");
  }
  ASSIGN_OR_RETURN(uint32_t version, r.U32("graph format version"));
  if (version != kGraphFormatVersion) {
    return r.Error(absl::StrCat("graph format version ", version, " is not supported (this build ",
                                "reads version ", kGraphFormatVersion, ")"));
  }
  Graph g;
  RETURN_IF_ERROR(fields::Read(r, &g.config));
  ASSIGN_OR_RETURN(uint32_t n_kv, r.Count("kv_cache types", 1));
  for (uint32_t i = 0; i < n_kv; ++i) {
    ASSIGN_OR_RETURN(uint8_t t, r.U8("kv_cache type"));
    if (t > static_cast<uint8_t>(KvDType::kF32)) {
      return r.Error(absl::StrCat("unknown KV cache type ", int{t}));
    }
    g.kv_dtypes.push_back(static_cast<KvDType>(t));
  }
  // Minimum encoded sizes bound each count by the bytes left.
  ASSIGN_OR_RETURN(uint32_t n_weights, r.Count("weight count", 4 + 4 + 1 + 8 + 16));
  for (uint32_t i = 0; i < n_weights; ++i) {
    ASSIGN_OR_RETURN(WeightRef w, ReadWeight(r));
    g.weights.push_back(std::move(w));
  }
  ASSIGN_OR_RETURN(uint32_t n_values, r.Count("value count", 4 + 2));
  for (uint32_t i = 0; i < n_values; ++i) {
    ASSIGN_OR_RETURN(Value v, ReadValue(r));
    g.values.push_back(std::move(v));
  }
  ASSIGN_OR_RETURN(g.inputs, ReadIds(r, g.values.size(), "graph inputs"));
  ASSIGN_OR_RETURN(g.outputs, ReadIds(r, g.values.size(), "graph outputs"));
  ASSIGN_OR_RETURN(uint32_t n_nodes, r.Count("node count", 1 + 12));
  for (uint32_t i = 0; i < n_nodes; ++i) {
    ASSIGN_OR_RETURN(Node n, ReadNode(r, g));
    g.nodes.push_back(std::move(n));
  }
  if (auto st = Verify(g); !st.ok()) return r.Error(absl::StrCat("invalid graph: ", st.message()));
  return g;
}

std::string SerializeGraph(const Graph& g) {
  ByteWriter w;
  WriteGraph(g, w);
  return w.Take();
}

absl::StatusOr<Graph> DeserializeGraph(std::string_view bytes, std::string source) {
  ByteReader r(bytes, std::move(source));
  ASSIGN_OR_RETURN(Graph g, ReadGraph(r));
  if (!r.at_end()) return r.Error(absl::StrCat(r.remaining(), " unexpected bytes after the graph"));
  return g;
}

}  // namespace jllm::ir
