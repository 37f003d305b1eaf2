#include "backends/cpu_ref/cpu_ref_backend.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/cpu_ref/graph_executor.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm {
namespace {

class CpuRefBackend : public Backend {
 public:
  std::string_view name() const override { return "cpu_ref"; }

  absl::Status Load(const ir::Graph& graph, const WeightSource& weights,
                    const BackendOptions& options) override {
    exec_.reset();
    filled_ = 0;
    ASSIGN_OR_RETURN(BoundValues bound, FindBoundValues(graph));
    ASSIGN_OR_RETURN(exec_, cpu_ref::GraphExecutor::Create(graph, weights, options));
    bound_ = bound;
    // Only the last row is computed for kLast when no other node reads the logits.
    const std::vector<int> producer = graph.ProducerIndex();
    const int p = producer[bound_.logits];
    last_row_ok_ = p >= 0 && (graph.nodes[p].op == ir::OpKind::kLogits ||
                              graph.nodes[p].op == ir::OpKind::kMatMul);
    for (const ir::Node& n : graph.nodes) {
      if (n.op != ir::OpKind::kSample &&
          std::find(n.inputs.begin(), n.inputs.end(), bound_.logits) != n.inputs.end()) {
        last_row_ok_ = false;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Forward(absl::Span<const int32_t> tokens, int64_t pos0, LogitsRows rows,
                       std::vector<float>* logits) override {
    if (exec_ == nullptr) return absl::FailedPreconditionError("cpu_ref: Forward before Load");
    const auto n = static_cast<int64_t>(tokens.size());
    if (n == 0) return absl::InvalidArgumentError("cpu_ref: Forward with no tokens");
    if (pos0 < 0 || pos0 > filled_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cpu_ref: pos0 = ", pos0, ", but the KV cache holds positions [0, ", filled_,
          ") only; a step must continue from them"));
    }
    if (pos0 > exec_->max_context() - n) {
      return absl::OutOfRangeError(absl::StrCat(
          "cpu_ref: ", n, " tokens at position ", pos0, " exceed the context of ",
          exec_->max_context(), " positions"));
    }
    std::vector<int32_t> positions(n);
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(pos0));
    std::vector<cpu_ref::Feed> feeds = {{ir::kTokensInput, {}, tokens}};
    if (bound_.has_positions) feeds.push_back({ir::kPositionsInput, {}, positions});
    const bool last_only = rows == LogitsRows::kLast && last_row_ok_;
    // The steps's writes replace the cache from pos0 on, whether or not it succeeds.
    filled_ = pos0;
    RETURN_IF_ERROR(exec_->Run(n, pos0, feeds, last_only ? bound_.logits : -1));
    filled_ = pos0 + n;
    const absl::Span<const float> out = exec_->f32(bound_.logits);
    const size_t vocab = static_cast<size_t>(exec_->graph().type_of(bound_.logits).shape.dims.back());
    if (rows == LogitsRows::kAll) {
      logits->assign(out.begin(), out.end());
    } else {
      logits->assign(out.end() - vocab, out.end());
    }
    return absl::OkStatus();
  }

 private:
  struct BoundValues {
    ir::ValueId logits = -1;
    bool has_positions = false;
  };

  static absl::StatusOr<BoundValues> FindBoundValues(const ir::Graph& g) {
    BoundValues b;
    bool has_tokens = false;
    const ir::ValueType token_type{ir::DType::kI32, {{ir::kDimT}}};
    for (ir::ValueId v : g.inputs) {
      const std::string& name = g.name_of(v);
      const bool tokens = name == ir::kTokensInput;
      if (!tokens && name != ir::kPositionsInput) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cpu_ref: graph input %", name, " is unknown; the backend feeds only %",
            Sv(ir::kTokensInput), " and %", Sv(ir::kPositionsInput)));
      }
      if (g.type_of(v) != token_type) {
        return absl::InvalidArgumentError(absl::StrCat("cpu_ref: graph input %", name, " is ",
                                                       ir::ValueTypeToString(g.type_of(v)),
                                                       ", expected i32[T]"));
      }
      (tokens ? has_tokens : b.has_positions) = true;
    }
    if (!has_tokens) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu_ref: the graph has no input %", Sv(ir::kTokensInput)));
    }
    for (ir::ValueId v : g.outputs) {
      if (g.name_of(v) == ir::kLogitsOutput) b.logits = v;
    }
    if (b.logits < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu_ref: the graph has no output %", Sv(ir::kLogitsOutput)));
    }
    const ir::ValueType& lt = g.type_of(b.logits);
    if (lt.dtype != ir::DType::kF32 || lt.shape.rank() != 2 || lt.shape.dims[0] != ir::kDimT ||
        lt.shape.dims[1] < 1) {
      return absl::InvalidArgumentError(absl::StrCat("cpu_ref: output %",
                                                     Sv(ir::kLogitsOutput), " is ",
                                                     ir::ValueTypeToString(lt),
                                                     ", expected f32[T,V]"));
    }
    return b;
  }

  std::unique_ptr<cpu_ref::GraphExecutor> exec_;
  BoundValues bound_;
  bool last_row_ok_ = false;
  int64_t filled_ = 0;  // cache positions [0, filled_) hold earlier steps
};

}  // namespace

std::unique_ptr<Backend> CreateCpuRefBackend() { return std::make_unique<CpuRefBackend>(); }

}  // namespace jllm
