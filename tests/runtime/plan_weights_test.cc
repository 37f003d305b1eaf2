// The plan's weight source: the GGUF fingerprint (size, header hash, sampled data chunks) and
// PlanWeights, which maps the GGUF and refuses it when it is missing, moved or changed.
#include "runtime/plan_weights.h"

#include <cstdio>
#include <filesystem>
#include <string>

#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/qwen3_graph.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/runtime_test_support.h"

namespace jllm::runtime {
namespace {

using ::testing::HasSubstr;
using testing::ReadAll;
using testing::TempPath;
using testing::WriteAll;

TEST(FingerprintSampleRanges, SixteenChunksAtFixedFractionsOfTheBlob) {
  // Blob of 4096 + 15·1000 bytes after a 100-byte header: starts exactly 1000 apart.
  const uint64_t header = 100, file = header + 4096 + 15 * 1000;
  const auto r = FingerprintSampleRanges(file, header);
  ASSERT_EQ(r.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(r[i].first, header + 1000u * i) << i;
    EXPECT_EQ(r[i].second, r[i].first + 4096) << i;
  }
  EXPECT_EQ(r.back().second, file);
}

TEST(FingerprintSampleRanges, SmallBlobIsSampledWholeOnce) {
  const auto r = FingerprintSampleRanges(5000, 1000);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], std::make_pair(uint64_t{1000}, uint64_t{5000}));
  EXPECT_TRUE(FingerprintSampleRanges(1000, 1000).empty());  // no blob at all
}

TEST(FingerprintSampleRanges, HugeFilesDoNotOverflow) {
  const uint64_t file = uint64_t{1} << 62, header = 1 << 20;
  const auto r = FingerprintSampleRanges(file, header);
  ASSERT_EQ(r.size(), 16u);
  EXPECT_EQ(r.front().first, header);
  EXPECT_EQ(r.back().second, file);
  for (size_t i = 1; i < r.size(); ++i) EXPECT_GT(r[i].first, r[i - 1].first);
}

TEST(GgufFingerprint, ReadsOnlyHeaderAndSamples) {
  // Bytes outside the header and the sampled chunks do not enter the fingerprint (it is a cheap
  // check, not a full hash); bytes inside them do.
  std::vector<uint8_t> file(200 + 4096 + 15 * 10000, 7);
  const auto base = ComputeGgufFingerprint(file, 200);
  ASSERT_TRUE(base.ok());
  auto changed = file;
  changed[200 + 4096 + 10] ^= 1;  // between chunk 0 [200, 4296) and chunk 1 [10200, ...)
  EXPECT_EQ(*ComputeGgufFingerprint(changed, 200), *base);
  changed = file;
  changed[200 + 10000 + 5] ^= 1;  // inside chunk 1
  EXPECT_NE(ComputeGgufFingerprint(changed, 200)->sample_hash, base->sample_hash);
  changed = file;
  changed[50] ^= 1;  // header
  EXPECT_NE(ComputeGgufFingerprint(changed, 200)->header_hash, base->header_hash);
  EXPECT_FALSE(ComputeGgufFingerprint(file, file.size() + 1).ok());
}

class PlanWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempPath("model.gguf");
    testing::WriteTinyModel(path_);
    auto file = gguf::GgufFile::Open(path_);
    ASSERT_TRUE(file.ok()) << file.status();
    data_offset_ = (*file)->data_offset();
    auto info = DescribeGgufWeights(path_, (*file)->bytes(), data_offset_);
    ASSERT_TRUE(info.ok()) << info.status();
    info_ = *info;
    const auto* t = (*file)->FindTensor("blk.1.attn_v.weight");
    ASSERT_NE(t, nullptr);
    weight_ = {t->name, t->type, {t->ne[0], t->ne[1]}, t->offset, t->nbytes};
    expected_bytes_.assign((*file)->TensorData(*t).begin(), (*file)->TensorData(*t).end());
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string path_;
  uint64_t data_offset_ = 0;
  WeightSourceInfo info_;
  ir::WeightRef weight_;
  std::vector<uint8_t> expected_bytes_;
};

TEST_F(PlanWeightsTest, UnchangedFileGivesTheTensorBytes) {
  EXPECT_TRUE(std::filesystem::path(info_.gguf_path).is_absolute());
  auto w = PlanWeights::Open(info_, "plan.bin");
  ASSERT_TRUE(w.ok()) << w.status();
  auto bytes = (*w)->Bytes(weight_);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(std::vector<uint8_t>(bytes->begin(), bytes->end()), expected_bytes_);
  EXPECT_EQ((*w)->blob().size(), info_.fingerprint.file_size - data_offset_);

  // Dropping the pages (as a device backend does after copying) loses nothing: reads go back
  // to the file.
  (*w)->Release(weight_, 0, weight_.nbytes);
  (*w)->ReleasePages();
  bytes = (*w)->Bytes(weight_);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(std::vector<uint8_t>(bytes->begin(), bytes->end()), expected_bytes_);

  ir::WeightRef past = weight_;
  past.offset = (*w)->blob().size() - 10;
  EXPECT_THAT((*w)->Bytes(past).status().message(), HasSubstr("outside"));
}

TEST_F(PlanWeightsTest, ChangedDataByteInASampledChunkIsRefused) {
  std::string bytes = ReadAll(path_);
  const auto ranges = FingerprintSampleRanges(bytes.size(), data_offset_);
  ASSERT_EQ(ranges.size(), 16u);
  bytes[ranges[9].first + 123] ^= 0x01;
  WriteAll(path_, bytes);
  auto w = PlanWeights::Open(info_, "plan.bin");
  EXPECT_TRUE(absl::IsFailedPrecondition(w.status())) << w.status();
  EXPECT_THAT(w.status().message(), HasSubstr("has changed since the plan was compiled"));
  EXPECT_THAT(w.status().message(), HasSubstr("tensor data"));
  EXPECT_THAT(w.status().message(), HasSubstr("jllm-compile " + path_ + " -o plan.bin"));
}

TEST_F(PlanWeightsTest, ChangedHeaderByteIsRefused) {
  std::string bytes = ReadAll(path_);
  const size_t at = bytes.find("jllm-synth tiny");  // general.name, inside the metadata
  ASSERT_NE(at, std::string::npos);
  ASSERT_LT(at, data_offset_);
  bytes[at] = 'J';
  WriteAll(path_, bytes);
  auto w = PlanWeights::Open(info_, "plan.bin");
  EXPECT_TRUE(absl::IsFailedPrecondition(w.status())) << w.status();
  EXPECT_THAT(w.status().message(), HasSubstr("header, metadata or tensor table"));
}

TEST_F(PlanWeightsTest, ChangedSizeIsRefused) {
  WriteAll(path_, ReadAll(path_) + "x");
  auto w = PlanWeights::Open(info_, "plan.bin");
  EXPECT_TRUE(absl::IsFailedPrecondition(w.status())) << w.status();
  EXPECT_THAT(w.status().message(), HasSubstr("size was"));
}

TEST_F(PlanWeightsTest, MovedOrMissingFileIsRefusedWithTheFix) {
  const std::string moved = TempPath("moved.gguf");
  std::filesystem::rename(path_, moved);
  auto w = PlanWeights::Open(info_, "plan.bin");
  EXPECT_TRUE(absl::IsNotFound(w.status())) << w.status();
  EXPECT_THAT(w.status().message(), HasSubstr(info_.gguf_path));
  EXPECT_THAT(w.status().message(), HasSubstr("missing (moved or deleted)"));
  EXPECT_THAT(w.status().message(), HasSubstr("jllm-compile"));
  EXPECT_THAT(w.status().message(), HasSubstr("--model"));

  // Pointing at the moved file works: the fingerprint proves it is the same model.
  w = PlanWeights::Open(info_, "plan.bin", moved);
  EXPECT_TRUE(w.ok()) << w.status();

  // A different model at the override path is refused.
  const std::string other = TempPath("other.gguf");
  testing::WriteTinyModel(other, /*seed=*/2);
  w = PlanWeights::Open(info_, "plan.bin", other);
  EXPECT_TRUE(absl::IsFailedPrecondition(w.status())) << w.status();
  std::filesystem::rename(moved, path_);
  std::remove(other.c_str());
}

}  // namespace
}  // namespace jllm::runtime
