#include "backends/cpu_ref/cpu_ref_backend.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/cpu_ref/graph_executor.h"
#include "backends/sampling.h"
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
    context_.clear();
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

  absl::StatusOr<int32_t> Step(absl::Span<const int32_t> tokens, int64_t pos0,
                               const StepOptions& options) override {
    RETURN_IF_ERROR(RunStep(tokens, pos0, options.rows == LogitsRows::kLast, nullptr));
    const absl::Span<const float> out = exec_->f32(bound_.logits);
    const size_t vocab = static_cast<size_t>(exec_->graph().type_of(bound_.logits).shape.dims.back());
    const absl::Span<const float> last = out.subspan(out.size() - vocab, vocab);
    if (options.logits != nullptr) {
      if (options.rows == LogitsRows::kAll) {
        options.logits->assign(out.begin(), out.end());
      } else {
        options.logits->assign(last.begin(), last.end());
      }
    }
    if (options.sampling == nullptr) return -1;
    RETURN_IF_ERROR(ValidateSamplingParams(*options.sampling));
    // The penalty window: the last repeat_last_n tokens of the context, this step's included.
    const int64_t n = filled_;
    const int64_t first = std::max<int64_t>(0, n - std::max(options.sampling->repeat_last_n, 0));
    const absl::Span<const int32_t> recent(context_.data() + first, static_cast<size_t>(n - first));
    return SampleToken(last, recent, *options.sampling, n);
  }

  absl::StatusOr<std::vector<std::vector<float>>> Evaluate(
      int64_t n_tokens, int64_t pos0, absl::Span<const NamedInput> inputs,
      absl::Span<const std::string> outputs) override {
    if (exec_ == nullptr) return absl::FailedPreconditionError("cpu_ref: Evaluate before Load");
    std::vector<cpu_ref::Feed> feeds;
    for (const NamedInput& in : inputs) feeds.push_back({in.name, in.f32, in.i32});
    RETURN_IF_ERROR(exec_->Run(n_tokens, pos0, feeds));
    std::vector<std::vector<float>> out;
    for (const std::string& name : outputs) {
      const std::optional<ir::ValueId> v = exec_->graph().FindValue(name);
      if (!v) return absl::NotFoundError(absl::StrCat("cpu_ref: no value named %", name));
      const absl::Span<const float> data = exec_->f32(*v);
      out.emplace_back(data.begin(), data.end());
    }
    return out;
  }

  // (The draw is not an op of the graph: `sampling` changes nothing here.)
  absl::StatusOr<std::vector<KernelTiming>> Profile(absl::Span<const int32_t> tokens, int64_t pos0,
                                                    const SamplingParams* /*sampling*/) override {
    std::vector<double> seconds;
    RETURN_IF_ERROR(RunStep(tokens, pos0, /*last_row=*/true, &seconds));
    std::vector<KernelTiming> by_op;
    const ir::Graph& g = exec_->graph();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const std::string op(ir::OpName(g.nodes[i].op));
      auto it = std::find_if(by_op.begin(), by_op.end(), [&](const KernelTiming& t) { return t.name == op; });
      if (it == by_op.end()) it = by_op.insert(by_op.end(), KernelTiming{op});
      ++it->calls;
      it->microseconds += seconds[i] * 1e6;
    }
    return by_op;
  }

 private:
  absl::Status RunStep(absl::Span<const int32_t> tokens, int64_t pos0, bool last_row_wanted,
                       std::vector<double>* node_seconds) {
    if (exec_ == nullptr) return absl::FailedPreconditionError("cpu_ref: Step before Load");
    const auto n = static_cast<int64_t>(tokens.size());
    if (n == 0) return absl::InvalidArgumentError("cpu_ref: a step with no tokens");
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
    const bool last_only = last_row_wanted && last_row_ok_;
    // The step's writes replace the cache from pos0 on, whether or not it succeeds.
    filled_ = pos0;
    context_.resize(pos0);
    RETURN_IF_ERROR(exec_->Run(n, pos0, feeds, last_only ? bound_.logits : -1, node_seconds));
    filled_ = pos0 + n;
    context_.insert(context_.end(), tokens.begin(), tokens.end());
    return absl::OkStatus();
  }

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
  int64_t filled_ = 0;            // cache positions [0, filled_) hold earlier steps
  std::vector<int32_t> context_;  // the token at each of those positions
};

}  // namespace

std::unique_ptr<Backend> CreateCpuRefBackend() { return std::make_unique<CpuRefBackend>(); }

}  // namespace jllm
