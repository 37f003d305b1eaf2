// cpu_ref through the Backend interface: steps versus one prefill, kLast versus kAll, and every
// error the interface promises.
#include <algorithm>
#include <cmath>

#include "backends/cpu_ref/cpu_ref_backend.h"
#include "gmock/gmock.h"
#include "ir/verify.h"
#include "test_support.h"
#include "tests/support/logits_math.h"
#include "toy_model.h"

namespace jllm::cpu_ref::testing {
namespace {

using ::testing::HasSubstr;

const std::vector<int32_t> kPrompt = {3, 141, 59, 265, 35, 89, 79, 32, 38, 46, 26, 43};

std::unique_ptr<Backend> LoadToy(const TestModel& m, int64_t max_context = 64) {
  auto be = CreateCpuRefBackend();
  absl::Status st = be->Load(m.graph, m.source(), {.max_context = max_context, .n_threads = 2});
  EXPECT_TRUE(st.ok()) << st;
  return be;
}

using ::jllm::testing::MaxAbsDiff;

TEST(CpuRefBackendTest, NameIsCpuRef) { EXPECT_EQ(CreateCpuRefBackend()->name(), "cpu_ref"); }

// Prefill of 5, then single-token steps, against one prefill of everything with kAll: each row
// of cpu_ref's output depends only on its own token and the cache, computed by the same
// fixed-order sums, so they agree exactly.
TEST(CpuRefBackendTest, StepwiseDecodeMatchesOneLongPrefill) {
  for (ir::KvDType kv : {ir::KvDType::kF16, ir::KvDType::kInt8}) {
    for (bool fused : {false, true}) {
      TestModel m;
      BuildToyModel(m, {.n_layer = 2, .fused = fused, .kv = {kv, kv}});
      const int64_t vocab = m.graph.config.n_vocab;
      auto whole = LoadToy(m), steps = LoadToy(m);
      std::vector<float> all, row;
      ASSERT_TRUE(whole->Forward(kPrompt, 0, LogitsRows::kAll, &all).ok());
      ASSERT_EQ(all.size(), kPrompt.size() * vocab);
      double max_logit = 0;
      for (float x : all) max_logit = std::max(max_logit, double(std::fabs(x)));
      ASSERT_GT(max_logit, 0);

      const size_t prefill = 5;
      ASSERT_TRUE(steps->Forward(absl::MakeSpan(kPrompt).subspan(0, prefill), 0, LogitsRows::kAll, &row).ok());
      ASSERT_EQ(row.size(), prefill * vocab);
      EXPECT_EQ(MaxAbsDiff(row, absl::MakeSpan(all).subspan(0, prefill * vocab)), 0.0);
      for (size_t p = prefill; p < kPrompt.size(); ++p) {
        ASSERT_TRUE(steps->Forward({kPrompt[p]}, p, LogitsRows::kLast, &row).ok());
        ASSERT_EQ(row.size(), static_cast<size_t>(vocab));
        EXPECT_EQ(MaxAbsDiff(row, absl::MakeSpan(all).subspan(p * vocab, vocab)), 0.0)
            << "position " << p << " kv " << ir::KvDTypeName(kv) << " fused " << fused;
      }
    }
  }
}

TEST(CpuRefBackendTest, LastRowIsTheLastRowOfAll) {
  TestModel m;
  BuildToyModel(m, {});
  auto a = LoadToy(m), b = LoadToy(m);
  std::vector<float> all, last;
  ASSERT_TRUE(a->Forward(kPrompt, 0, LogitsRows::kAll, &all).ok());
  ASSERT_TRUE(b->Forward(kPrompt, 0, LogitsRows::kLast, &last).ok());
  const size_t vocab = m.graph.config.n_vocab;
  ASSERT_EQ(last.size(), vocab);
  EXPECT_EQ(last, std::vector<float>(all.end() - vocab, all.end()));
}

// Going back (pos0 below what the cache holds) recomputes from there: the result equals a
// fresh run of the same tokens, exactly.
TEST(CpuRefBackendTest, RewindingOverwritesLaterPositions) {
  TestModel m;
  BuildToyModel(m, {});
  auto be = LoadToy(m), fresh = LoadToy(m);
  std::vector<float> out, want;
  ASSERT_TRUE(be->Forward(kPrompt, 0, LogitsRows::kLast, &out).ok());
  const std::vector<int32_t> other = {7, 8, 9};
  ASSERT_TRUE(be->Forward(other, 4, LogitsRows::kLast, &out).ok());
  std::vector<int32_t> seq(kPrompt.begin(), kPrompt.begin() + 4);
  seq.insert(seq.end(), other.begin(), other.end());
  ASSERT_TRUE(fresh->Forward(seq, 0, LogitsRows::kLast, &want).ok());
  EXPECT_EQ(out, want);
}

// ---- errors ---------------------------------------------------------------------------------

TEST(CpuRefBackendErrorTest, ForwardBeforeLoad) {
  std::vector<float> out;
  EXPECT_EQ(CreateCpuRefBackend()->Forward(kPrompt, 0, LogitsRows::kLast, &out).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CpuRefBackendErrorTest, GraphFailingVerify) {
  TestModel m;
  BuildToyModel(m, {});
  m.graph.kv_dtypes.pop_back();  // one KV type short
  absl::Status st = CreateCpuRefBackend()->Load(m.graph, m.source(), {.max_context = 64});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("verification"));
}

TEST(CpuRefBackendErrorTest, MissingWeightBytes) {
  TestModel m;
  BuildToyModel(m, {});
  std::vector<uint8_t> blob(m.blob.begin(), m.blob.end() - 100);  // the last weight is cut
  absl::Status st = CreateCpuRefBackend()->Load(m.graph, BlobWeightSource(blob), {.max_context = 64});
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("blk.1.ffn_down.weight"));
}

// A source that hands out fewer bytes than the weight needs.
class ShortSource : public WeightSource {
 public:
  explicit ShortSource(const std::vector<uint8_t>& blob) : blob_(blob) {}
  absl::StatusOr<absl::Span<const uint8_t>> Bytes(const ir::WeightRef& w) const override {
    return absl::MakeConstSpan(blob_).subspan(w.offset, w.nbytes / 2);
  }
 private:
  const std::vector<uint8_t>& blob_;
};

TEST(CpuRefBackendErrorTest, ShortWeightBytes) {
  TestModel m;
  BuildToyModel(m, {});
  absl::Status st = CreateCpuRefBackend()->Load(m.graph, ShortSource(m.blob), {.max_context = 64});
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("token_embd.weight"));
}

TEST(CpuRefBackendErrorTest, UnsupportedWeightType) {
  TestModel m;
  auto x = m.Input("x", ir::DType::kF32, {ir::kDimT, 64});
  // Q4_0 blocks (18 bytes per 32) that jllm::quant does not dequantize.
  const uint64_t nbytes = ir::WeightBytes(GgmlType::kQ4_0, {64, 8});
  m.blob.assign(nbytes, 0);
  auto w = m.graph.AddWeight({"w.q4_0", GgmlType::kQ4_0, {64, 8}, 0, nbytes});
  ASSERT_TRUE(w.ok());
  m.Node1(ir::OpKind::kMatMul, {x}, {*w}, ir::MatMulAttrs{}, "y");
  auto exec = GraphExecutor::Create(m.graph, m.source(), {.max_context = 8});
  ASSERT_FALSE(exec.ok());
  EXPECT_THAT(exec.status().message(), HasSubstr("w.q4_0"));
  EXPECT_THAT(exec.status().message(), HasSubstr("q4_0"));
}

TEST(CpuRefBackendErrorTest, UnknownOpKind) {
  TestModel m;
  BuildToyModel(m, {});
  m.graph.nodes[1].op = static_cast<ir::OpKind>(ir::kNumOpKinds);
  EXPECT_FALSE(CreateCpuRefBackend()->Load(m.graph, m.source(), {.max_context = 64}).ok());
}

TEST(CpuRefBackendErrorTest, ContextOverflow) {
  TestModel m;
  BuildToyModel(m, {});
  auto be = LoadToy(m, /*max_context=*/16);
  std::vector<float> out;
  ASSERT_TRUE(be->Forward(kPrompt, 0, LogitsRows::kLast, &out).ok());  // 12 of 16
  absl::Status st = be->Forward({1, 2, 3, 4, 5}, kPrompt.size(), LogitsRows::kLast, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(st.message(), HasSubstr("16"));
  // Exactly full is fine.
  EXPECT_TRUE(be->Forward({1, 2, 3, 4}, kPrompt.size(), LogitsRows::kLast, &out).ok());
}

TEST(CpuRefBackendErrorTest, MaxContextBeyondModel) {
  TestModel m;
  BuildToyModel(m, {});  // context_length 512
  absl::Status st = CreateCpuRefBackend()->Load(m.graph, m.source(), {.max_context = 513});
  EXPECT_THAT(st.message(), HasSubstr("context_length"));
}

TEST(CpuRefBackendErrorTest, StepThatSkipsPositions) {
  TestModel m;
  BuildToyModel(m, {});
  auto be = LoadToy(m);
  std::vector<float> out;
  ASSERT_TRUE(be->Forward(kPrompt, 0, LogitsRows::kLast, &out).ok());
  absl::Status st = be->Forward({1}, kPrompt.size() + 1, LogitsRows::kLast, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(be->Forward({1}, kPrompt.size(), LogitsRows::kLast, &out).ok());
}

TEST(CpuRefBackendErrorTest, TokenOutsideVocabulary) {
  TestModel m;
  BuildToyModel(m, {});  // 300 tokens
  auto be = LoadToy(m);
  std::vector<float> out;
  absl::Status st = be->Forward({1, 300}, 0, LogitsRows::kLast, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(st.message(), HasSubstr("300"));
  EXPECT_FALSE(be->Forward({-1}, 0, LogitsRows::kLast, &out).ok());
  EXPECT_FALSE(be->Forward({}, 0, LogitsRows::kLast, &out).ok());
}

TEST(CpuRefBackendErrorTest, GraphWithoutLogitsOrWithUnknownInput) {
  TestModel m;
  BuildToyModel(m, {});
  ir::Graph no_logits = m.graph;
  no_logits.outputs.clear();
  EXPECT_THAT(CreateCpuRefBackend()->Load(no_logits, m.source(), {.max_context = 64}).message(),
              HasSubstr("logits"));
  ir::Graph extra_input = m.graph;
  ASSERT_TRUE(extra_input.AddInput("temperature", {ir::DType::kF32, {{1}}}).ok());
  EXPECT_THAT(CreateCpuRefBackend()->Load(extra_input, m.source(), {.max_context = 64}).message(),
              HasSubstr("temperature"));
}

// The executor under the backend checks what tests and other callers feed it.
TEST(GraphExecutorErrorTest, FeedsAndPositionsAreChecked) {
  TestModel m;
  auto k = m.Input("k", ir::DType::kF32, {ir::kDimT, 128});
  auto v = m.Input("v", ir::DType::kF32, {ir::kDimT, 128});
  auto pos = m.Input("pos", ir::DType::kI32, {ir::kDimT});
  m.Node1(ir::OpKind::kKvAppend, {k, v, pos}, {}, ir::KvAppendAttrs{0, 2, 64}, "kv");
  auto exec = m.Executor(/*max_context=*/8);
  ASSERT_NE(exec, nullptr);
  std::vector<float> x(2 * 128, 1.0f);
  const std::vector<int32_t> ok_pos = {0, 1}, bad_pos = {0, 2};
  EXPECT_TRUE(exec->Run(2, 0, {{"k", x, {}}, {"v", x, {}}, {"pos", {}, ok_pos}}).ok());
  // Position 2 is past S = pos0 + T = 2.
  absl::Status st = exec->Run(2, 0, {{"k", x, {}}, {"v", x, {}}, {"pos", {}, bad_pos}});
  EXPECT_EQ(st.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(st.message(), HasSubstr("position 2"));
  // Wrong size, missing input, unknown input, too many positions.
  EXPECT_THAT(exec->Run(3, 0, {{"k", x, {}}, {"v", x, {}}, {"pos", {}, ok_pos}}).message(), HasSubstr("%k"));
  EXPECT_THAT(exec->Run(2, 0, {{"k", x, {}}, {"pos", {}, ok_pos}}).message(), HasSubstr("%v"));
  EXPECT_THAT(exec->Run(2, 0, {{"k", x, {}}, {"v", x, {}}, {"pos", {}, ok_pos}, {"w", x, {}}}).message(),
              HasSubstr("'w'"));
  EXPECT_EQ(exec->Run(2, 7, {{"k", x, {}}, {"v", x, {}}, {"pos", {}, ok_pos}}).code(),
            absl::StatusCode::kOutOfRange);
}

// A context far beyond the machine's memory (as a plan whose model claims the largest context
// the IR allows, 2^24, permits) is refused before anything is allocated, with what the cache
// would need and what fits, instead of std::bad_alloc. Eight f32 cache layers of 8 heads × 128:
// K and V × 1024 × 4 bytes × 8 = 64 KiB per position, 1 TiB at 2^24 positions.
TEST(GraphExecutorErrorTest, AContextBeyondMemoryIsRefusedBeforeAllocating) {
  TestModel m(/*n_layer=*/8, ir::KvDType::kF32);
  const int64_t huge = int64_t{1} << 24;
  m.graph.config.context_length = huge;
  auto k = m.Input("k", ir::DType::kF32, {ir::kDimT, 1024});
  auto v = m.Input("v", ir::DType::kF32, {ir::kDimT, 1024});
  auto pos = m.Input("pos", ir::DType::kI32, {ir::kDimT});
  for (int64_t layer = 0; layer < 8; ++layer) {
    m.Node1(ir::OpKind::kKvAppend, {k, v, pos}, {}, ir::KvAppendAttrs{layer, 8, 128},
            absl::StrCat("kv", layer));
  }
  auto exec = GraphExecutor::Create(m.graph, m.source(), {.max_context = huge});
  ASSERT_FALSE(exec.ok());
  const absl::Status& st = exec.status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(st.message(), HasSubstr("a KV cache for a context of 16777216 positions needs 1024.00 GiB"));
  EXPECT_THAT(st.message(), HasSubstr("(64.0 KiB per position)"));
  EXPECT_THAT(std::string(st.message()),
              ::testing::ContainsRegex("at most [0-9]+ positions fit; lower the context size \\(-c\\)"));
}

// Values are sized at load for a one-token step at the full context, not for a step as long as
// the context (prefill comes in chunks): a [T, 2^21] value passes 2^32 elements only above
// T = 2048, so the graph loads with a context of 4096 and a step of 4096 tokens is refused when
// it runs, before anything is allocated.
TEST(GraphExecutorErrorTest, LongStepsAreCheckedWhenTheyRun) {
  TestModel m;
  const int64_t width = int64_t{1} << 21;
  auto a = m.Input("a", ir::DType::kF32, {ir::kDimT, width});
  auto y = m.Node1(ir::OpKind::kAdd, {a, a}, {}, ir::NoAttrs{}, "y");
  auto exec = m.Executor(/*max_context=*/4096);
  ASSERT_NE(exec, nullptr);
  const std::vector<float> one(width, 1.5f);
  ASSERT_TRUE(exec->Run(1, 0, {{"a", one, {}}}).ok());
  EXPECT_EQ(exec->f32(y)[7], 3.0f);
  absl::Status st = exec->Run(4096, 0, {{"a", one, {}}});
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("value %y"));
  EXPECT_THAT(st.message(), HasSubstr("in a step of 4096 tokens"));
  EXPECT_THAT(st.message(), HasSubstr("run fewer tokens per step"));
}

// Verify checks only the cache width; an attention that splits it differently from the
// append that wrote it is refused at load.
TEST(GraphExecutorErrorTest, AttentionHeadSplitMustMatchTheAppend) {
  TestModel m;
  auto q = m.Input("q", ir::DType::kF32, {ir::kDimT, 256});
  auto k = m.Input("k", ir::DType::kF32, {ir::kDimT, 128});
  auto pos = m.Input("pos", ir::DType::kI32, {ir::kDimT});
  auto kv = m.Node1(ir::OpKind::kKvAppend, {k, k, pos}, {}, ir::KvAppendAttrs{0, 2, 64}, "kv");
  // 1 kv head of 128 over a cache written as 2 heads of 64: same width, different layout.
  m.graph.nodes.push_back({ir::OpKind::kAttention, {q, kv, pos}, {}, {},
                           ir::AttentionAttrs{0, 2, 1, 128, 0.1f}});
  auto y = m.graph.AddInput("unused", {ir::DType::kF32, {{ir::kDimT, 256}}});
  ASSERT_TRUE(y.ok());
  // Re-point the node's output to a fresh value produced by it.
  m.graph.inputs.pop_back();
  m.graph.nodes.back().outputs = {*y};
  ASSERT_TRUE(ir::Verify(m.graph).ok()) << ir::Verify(m.graph);
  auto exec = GraphExecutor::Create(m.graph, m.source(), {.max_context = 8});
  ASSERT_FALSE(exec.ok());
  EXPECT_THAT(exec.status().message(), HasSubstr("n_head_kv"));
}

}  // namespace
}  // namespace jllm::cpu_ref::testing
