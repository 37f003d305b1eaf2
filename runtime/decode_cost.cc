#include "runtime/decode_cost.h"

#include <vector>

namespace jllm::runtime {

int64_t WeightBytesPerToken(const ir::Graph& g) {
  std::vector<bool> full(g.weights.size(), false), row(g.weights.size(), false);
  for (const ir::Node& n : g.nodes) {
    for (ir::WeightId w : n.weights) (n.op == ir::OpKind::kEmbed ? row : full)[w] = true;
  }
  int64_t bytes = 0;
  for (size_t w = 0; w < g.weights.size(); ++w) {
    const ir::WeightRef& ref = g.weights[w];
    if (full[w]) {
      bytes += static_cast<int64_t>(ref.nbytes);
    } else if (row[w]) {
      bytes += RowBytes(ref.type, ref.dim(0));
    }
  }
  return bytes;
}

int64_t KvBytesPerToken(const ir::Graph& g, int64_t depth) {
  int64_t per_position = 0;
  for (ir::KvDType t : g.kv_dtypes) {
    per_position += ir::KvBytesPerTokenPerLayer(g.config, t);
  }
  return per_position * depth;
}

int64_t ParameterCount(const ir::Graph& g) {
  int64_t n = 0;
  for (const ir::WeightRef& w : g.weights) {
    int64_t e = 1;
    for (int64_t d : w.ne) e *= d;
    n += e;
  }
  return n;
}

}  // namespace jllm::runtime
