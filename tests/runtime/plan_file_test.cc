// The plan file: round trip, and every way a plan can be bad (truncated, corrupt, future or old
// format, not a plan at all), each refused with its own message saying to re-run jllm-compile.
#include "runtime/plan_file.h"

#include <unistd.h>

#include <cstring>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/qwen3_graph.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/text.h"
#include "runtime/stable_hash.h"
#include "runtime/version.h"
#include "tests/runtime/runtime_test_support.h"

namespace jllm::runtime {
namespace {

using ::testing::HasSubstr;
using testing::TempPath;

// Offsets in a plan (the same in every format version): magic (8), version (4), writer-version length (4) + bytes,
// payload size (8), then the payload.
size_t PayloadBegin() { return 8 + 4 + 4 + JllmVersion().size() + 8; }

class PlanFileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One file per process: CTest runs the tests of a suite in parallel processes.
    gguf_path_ = new std::string(::testing::TempDir() + "jllm_rt_plan_file_test_" +
                                 std::to_string(getpid()) + ".gguf");
    testing::WriteTinyModel(*gguf_path_);
  }
  static void TearDownTestSuite() {
    std::remove(gguf_path_->c_str());
    delete gguf_path_;
  }
  void SetUp() override {
    auto file = gguf::GgufFile::Open(*gguf_path_);
    ASSERT_TRUE(file.ok()) << file.status();
    auto graph = gguf::BuildQwen3Graph(**file);
    ASSERT_TRUE(graph.ok()) << graph.status();
    auto tok = gguf::ReadTokenizerData(**file);
    ASSERT_TRUE(tok.ok()) << tok.status();
    plan_.graph = *std::move(graph);
    plan_.tokenizer = *std::move(tok);
    plan_.tokenizer.chat_template = "{% for m in messages %}<|im_start|>...{% endfor %}";
    plan_.passes_yaml = "passes:\n  group-qkv: true\n  kv-dtype: {enabled: true, dtype: f16}\n";
    plan_.passes = {{"group-qkv", true, true, "grouped 4 q/k/v triples"},
                    {"fuse-swiglu", false, false, ""}};
    auto info = DescribeGgufWeights(*gguf_path_, (*file)->bytes(), (*file)->data_offset(),
                                    plan_.graph.weights);
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_EQ(info->tensors.size(), plan_.graph.weights.size());
    plan_.weights = *info;
    bytes_ = SerializePlan(plan_);
  }

  static std::string* gguf_path_;
  Plan plan_;
  std::string bytes_;
};
std::string* PlanFileTest::gguf_path_ = nullptr;

void ExpectSamePlan(const Plan& got, const Plan& want) {
  EXPECT_EQ(got.jllm_version, JllmVersion());
  EXPECT_EQ(got.passes_yaml, want.passes_yaml);
  EXPECT_EQ(got.passes, want.passes);
  EXPECT_EQ(ir::Print(got.graph), ir::Print(want.graph));
  EXPECT_EQ(got.tokenizer.model, want.tokenizer.model);
  EXPECT_EQ(got.tokenizer.pre, want.tokenizer.pre);
  EXPECT_EQ(got.tokenizer.tokens, want.tokenizer.tokens);
  EXPECT_EQ(got.tokenizer.token_types, want.tokenizer.token_types);
  EXPECT_EQ(got.tokenizer.merges, want.tokenizer.merges);
  EXPECT_EQ(got.tokenizer.bos_id, want.tokenizer.bos_id);
  EXPECT_EQ(got.tokenizer.eos_id, want.tokenizer.eos_id);
  EXPECT_EQ(got.tokenizer.pad_id, want.tokenizer.pad_id);
  EXPECT_EQ(got.tokenizer.add_bos, want.tokenizer.add_bos);
  EXPECT_EQ(got.tokenizer.chat_template, want.tokenizer.chat_template);
  EXPECT_EQ(got.weights, want.weights);
}

TEST_F(PlanFileTest, RoundTripsInMemory) {
  ASSERT_EQ(bytes_.substr(0, 8), "JLLMPLAN");
  auto got = DeserializePlan(bytes_, "plan.bin");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePlan(*got, plan_);
  EXPECT_TRUE(got->weights.gguf_path.starts_with("/"));
  EXPECT_EQ(got->weights.fingerprint.file_size, testing::ReadFile(*gguf_path_).size());
}

// The plan's own GGUF is an input: a plan written over it (by any name) is refused.
TEST_F(PlanFileTest, NeverWritesOverItsGguf) {
  const std::string before = testing::ReadFile(*gguf_path_);
  absl::Status st = WritePlanFile(plan_, *gguf_path_);
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_THAT(st.message(), HasSubstr("is the same file as the input"));
  EXPECT_EQ(testing::ReadFile(*gguf_path_), before);
}

TEST_F(PlanFileTest, RoundTripsThroughAFile) {
  const std::string path = TempPath("plan.bin");
  ASSERT_TRUE(WritePlanFile(plan_, path).ok());
  EXPECT_EQ(testing::ReadFile(path), bytes_);
  auto got = ReadPlanFile(path);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePlan(*got, plan_);
  std::remove(path.c_str());
}

TEST_F(PlanFileTest, HoldsAnOptionalFreeTokenizer) {
  plan_.tokenizer.bos_id.reset();
  plan_.tokenizer.pad_id.reset();
  plan_.tokenizer.add_bos = true;
  plan_.tokenizer.chat_template.clear();
  plan_.passes.clear();
  plan_.passes_yaml.clear();
  auto got = DeserializePlan(SerializePlan(plan_), "plan.bin");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePlan(*got, plan_);
}

TEST_F(PlanFileTest, ChecksumIsTheStableHashOfEverythingBeforeIt) {
  uint64_t stored;
  std::memcpy(&stored, bytes_.data() + bytes_.size() - 8, 8);
  EXPECT_EQ(stored, Hash64(std::string_view(bytes_).substr(0, bytes_.size() - 8)));
}

TEST_F(PlanFileTest, TruncatedAtAnyLengthIsRefusedAsTruncated) {
  // Every length inside the header, then every 7th length of the rest, and the last bytes.
  for (size_t len = 0; len < bytes_.size(); len += (len < PayloadBegin() + 64 ? 1 : 7)) {
    auto got = DeserializePlan(std::string_view(bytes_).substr(0, len), "plan.bin");
    ASSERT_FALSE(got.ok()) << "length " << len;
    EXPECT_TRUE(absl::IsDataLoss(got.status())) << len << ": " << got.status();
    EXPECT_THAT(got.status().message(), HasSubstr("truncated")) << len;
    EXPECT_THAT(got.status().message(), HasSubstr("jllm-compile")) << len;
  }
  for (size_t cut = 1; cut <= 9; ++cut) {
    auto got = DeserializePlan(std::string_view(bytes_).substr(0, bytes_.size() - cut), "p");
    EXPECT_THAT(got.status().message(), HasSubstr("truncated")) << cut;
  }
}

TEST_F(PlanFileTest, TruncatedFileOnDiskIsRefusedAsTruncated) {
  const std::string path = TempPath("plan.bin");
  testing::WriteFile(path, bytes_.substr(0, bytes_.size() / 2));
  auto got = ReadPlanFile(path);
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("truncated"));
  EXPECT_THAT(got.status().message(), HasSubstr(path));
  std::remove(path.c_str());
}

TEST_F(PlanFileTest, AnyFlippedPayloadOrChecksumByteIsAChecksumError) {
  for (size_t i = PayloadBegin(); i < bytes_.size(); ++i) {
    std::string bad = bytes_;
    bad[i] = static_cast<char>(bad[i] ^ (1 << (i % 8)));
    auto got = DeserializePlan(bad, "plan.bin");
    ASSERT_FALSE(got.ok()) << "byte " << i;
    ASSERT_TRUE(absl::IsDataLoss(got.status())) << i << ": " << got.status();
    ASSERT_THAT(got.status().message(), HasSubstr("checksum mismatch")) << i;
    ASSERT_THAT(got.status().message(), HasSubstr("Re-run")) << i;
  }
}

TEST_F(PlanFileTest, AnyFlippedHeaderByteIsRefused) {
  for (size_t i = 0; i < PayloadBegin(); ++i) {
    std::string bad = bytes_;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    EXPECT_FALSE(DeserializePlan(bad, "plan.bin").ok()) << "byte " << i;
  }
}

TEST_F(PlanFileTest, TrailingBytesAreCorruption) {
  auto got = DeserializePlan(bytes_ + "xyz", "plan.bin");
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("3 unexpected bytes after its end"));
}

TEST_F(PlanFileTest, FutureFormatVersionIsRefusedBeforeTheChecksum) {
  std::string future = bytes_;
  const uint32_t v = kPlanFormatVersion + 1;
  std::memcpy(future.data() + 8, &v, 4);  // checksum now stale: the version must be read first
  auto got = DeserializePlan(future, "plan.bin");
  EXPECT_TRUE(absl::IsFailedPrecondition(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("newer"));
  EXPECT_THAT(got.status().message(),
              HasSubstr(absl::StrCat("format ", kPlanFormatVersion + 1)));
  EXPECT_THAT(got.status().message(), HasSubstr("jllm " + std::string(JllmVersion())));
  EXPECT_THAT(got.status().message(), HasSubstr("jllm-compile"));

  // A future plan may be laid out differently after the version: a garbage rest is fine.
  future.resize(12);
  future += std::string(5, '\xff');
  got = DeserializePlan(future, "plan.bin");
  EXPECT_TRUE(absl::IsFailedPrecondition(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("an unknown jllm"));
}

TEST_F(PlanFileTest, OlderFormatVersionIsRefused) {
  std::string old = bytes_;
  const uint32_t v = 0;
  std::memcpy(old.data() + 8, &v, 4);
  auto got = DeserializePlan(old, "plan.bin");
  EXPECT_TRUE(absl::IsFailedPrecondition(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("old plan format 0"));
  EXPECT_THAT(got.status().message(), HasSubstr("Re-run `jllm-compile"));
}

TEST_F(PlanFileTest, WrongMagicIsNotAPlan) {
  std::string bad = bytes_;
  bad[3] = 'X';
  auto got = DeserializePlan(bad, "plan.bin");
  EXPECT_TRUE(absl::IsInvalidArgument(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("not a jllm plan file"));

  got = DeserializePlan("hello, world: a text file", "notes.txt");
  EXPECT_THAT(got.status().message(), HasSubstr("notes.txt: not a jllm plan file"));
  got = DeserializePlan("abc", "short.bin");
  EXPECT_THAT(got.status().message(), HasSubstr("not a jllm plan file"));
}

TEST_F(PlanFileTest, AGgufGivenAsThePlanSaysToCompileIt) {
  auto got = ReadPlanFile(*gguf_path_);
  EXPECT_TRUE(absl::IsInvalidArgument(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("GGUF model, not a jllm plan"));
  EXPECT_THAT(got.status().message(), HasSubstr("jllm-compile " + *gguf_path_));
}

TEST_F(PlanFileTest, MissingPlanFileIsNotFound) {
  auto got = ReadPlanFile(TempPath("no-such-plan.bin"));
  EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("jllm-compile"));
}

// A plan whose checksum is right but whose content is not what this build writes (a different
// build with the same format number): still refused, naming the section.
TEST_F(PlanFileTest, WellSummedButMalformedSectionIsRefused) {
  std::string bad = bytes_;
  const size_t tag_at = PayloadBegin();
  ASSERT_EQ(bad.substr(tag_at, 4), "PASS");
  bad.replace(tag_at, 4, "PASX");
  const uint64_t sum = Hash64(std::string_view(bad).substr(0, bad.size() - 8));
  std::memcpy(bad.data() + bad.size() - 8, &sum, 8);
  auto got = DeserializePlan(bad, "plan.bin");
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("expected section PASS, found 'PASX'"));

  // The graph's vocabulary must match the tokenizer's.
  Plan mismatched = plan_;
  mismatched.tokenizer.tokens.pop_back();
  mismatched.tokenizer.token_types.pop_back();
  got = DeserializePlan(SerializePlan(mismatched), "plan.bin");
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("vocabulary"));
}

// Corruption that slips past the checksum (a buggy writer) must still be caught by the
// bounds-checked section readers: an error, never a crash or a huge allocation (run this under
// scripts/test.sh --sanitize).
TEST_F(PlanFileTest, ResummedRandomCorruptionIsAnErrorNotACrash) {
  std::mt19937 rng(17);
  const size_t begin = PayloadBegin(), end = bytes_.size() - 8;
  int refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string bad = bytes_;
    const int n = 1 + trial % 4;
    for (int i = 0; i < n; ++i) {
      const size_t at = begin + rng() % (end - begin);
      bad[at] = static_cast<char>(trial % 3 == 0 ? 0xFF : rng());
    }
    const uint64_t sum = Hash64(std::string_view(bad).substr(0, end));
    std::memcpy(bad.data() + end, &sum, 8);
    auto got = DeserializePlan(bad, "plan.bin");
    if (!got.ok()) {
      ++refused;
      EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
      EXPECT_THAT(got.status().message(), HasSubstr("plan.bin"));
    }
  }
  EXPECT_GT(refused, 100);  // most random changes break some structure
}

TEST(StableHashTest, StreamingEqualsOneShotAndEveryByteMatters) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  const uint64_t whole = Hash64(data);
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{500}}) {
    StableHash64 h;
    h.Update(std::string_view(data).substr(0, split));
    h.Update(std::string_view(data).substr(split));
    EXPECT_EQ(h.Digest(), whole) << split;
  }
  for (size_t i = 0; i < data.size(); ++i) {
    std::string d = data;
    d[i] = static_cast<char>(d[i] ^ 1);
    ASSERT_NE(Hash64(d), whole) << i;
  }
  // Length matters, also with zero bytes; the seed matters.
  EXPECT_NE(Hash64(std::string("ab")), Hash64(std::string("ab\0", 3)));
  EXPECT_NE(Hash64(std::string()), Hash64(std::string("\0", 1)));
  EXPECT_NE(Hash64(data, 1), whole);
}

}  // namespace
}  // namespace jllm::runtime
