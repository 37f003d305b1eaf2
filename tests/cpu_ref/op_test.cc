// The op table (tests/backends/op_table.h) on cpu_ref, through its GraphExecutor so that the
// kv_append rows can read the cache back.
#include <memory>

#include "backends/cpu_ref/graph_executor.h"
#include "gtest/gtest.h"
#include "ir/status.h"
#include "tests/backends/op_table.h"

namespace jllm::testing {
namespace {

class CpuRefRunner : public OpRunner {
 public:
  std::string name() const override { return "cpu_ref"; }
  absl::Status Load(const TestModel& model, int64_t max_context) override {
    source_ = std::make_unique<BlobWeightSource>(model.blob);
    graph_ = model.graph;
    ASSIGN_OR_RETURN(exec_, cpu_ref::GraphExecutor::Create(graph_, *source_, {max_context, 64, 2}));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<std::vector<float>>> Run(int64_t n_tokens, int64_t pos0,
                                                      std::vector<NamedInput> inputs) override {
    std::vector<cpu_ref::Feed> feeds;
    for (const NamedInput& in : inputs) feeds.push_back({in.name, in.f32, in.i32});
    RETURN_IF_ERROR(exec_->Run(n_tokens, pos0, feeds));
    std::vector<std::vector<float>> out;
    for (ir::ValueId v : graph_.outputs) {
      const auto s = exec_->f32(v);
      out.emplace_back(s.begin(), s.end());
    }
    return out;
  }
  absl::StatusOr<std::vector<float>> ReadKvRow(int64_t layer, int which, int64_t pos) override {
    const cpu_ref::KvCache* cache = exec_->kv_cache(layer);
    if (cache == nullptr) return absl::NotFoundError("no cache for that layer");
    std::vector<float> row(cache->row_width());
    cache->Read(which, pos, row.data());
    return row;
  }

 private:
  std::unique_ptr<BlobWeightSource> source_;
  ir::Graph graph_;
  std::unique_ptr<cpu_ref::GraphExecutor> exec_;
};

class CpuRefOpTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(CpuRefOpTest, MatchesDoubleReference) {
  CpuRefRunner runner;
  CheckOpCase(GetParam(), runner);
}

INSTANTIATE_TEST_SUITE_P(AllOps, CpuRefOpTest, ::testing::ValuesIn(AllOpCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

// The table must reach every op kind (a new op is a new row there).
TEST(OpTableTest, CoversEveryOpKind) {
  std::vector<bool> seen(ir::kNumOpKinds, false);
  for (const OpCase& c : AllOpCases()) {
    for (int i = 0; i < ir::kNumOpKinds; ++i) {
      const std::string op(ir::OpName(static_cast<ir::OpKind>(i)));
      if (c.name.rfind(op + "_", 0) == 0 || c.name.find("_" + op + "_") != std::string::npos) {
        seen[i] = true;
      }
    }
  }
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    const auto op = static_cast<ir::OpKind>(i);
    if (op == ir::OpKind::kSample) continue;  // no backend executes it: the sampler runs after
    EXPECT_TRUE(seen[i]) << "no case for op " << ir::OpName(op);
  }
}

}  // namespace
}  // namespace jllm::testing
