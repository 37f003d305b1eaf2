// Runs the jllm-inspect binary on a file written by GgufWriter and checks what it prints.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "frontends/gguf/gguf_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/tool_runner.h"

namespace jllm {
namespace {

using ::testing::HasSubstr;

using ToolRun = testing::ToolResult;

ToolRun Inspect(const std::vector<std::string>& args) { return testing::RunTool(JLLM_INSPECT_PATH, args); }

class JllmInspect : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "jllm_inspect_test_" + std::to_string(getpid()) + ".gguf";
    gguf::GgufWriter w;
    w.SetString("general.architecture", "qwen3");
    w.SetUint32("qwen3.block_count", 28);
    std::vector<std::string> tokens;
    for (int i = 0; i < 100; ++i) tokens.push_back("tok" + std::to_string(i));
    w.SetStringArray("tokenizer.ggml.tokens", tokens);
    // F32 {4, 3}: element (row r, column c) = 10 r + c + 0.5.
    std::vector<float> f(12);
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 4; ++c) f[r * 4 + c] = 10.0f * r + c + 0.5f;
    }
    std::vector<uint8_t> f_bytes(48);
    std::memcpy(f_bytes.data(), f.data(), 48);
    ASSERT_TRUE(w.AddTensor("blk.0.attn_norm.weight", GgmlType::kF32, {4, 3}, f_bytes).ok());
    // Q8_0 {32}: d = 0.5 (fp16 0x3800), qs[j] = j - 3.
    std::vector<uint8_t> q(34);
    q[0] = 0x00;
    q[1] = 0x38;
    for (int j = 0; j < 32; ++j) q[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 3));
    ASSERT_TRUE(w.AddTensor("output.weight", GgmlType::kQ8_0, {32}, q).ok());
    ASSERT_TRUE(w.Write(path_).ok());
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(JllmInspect, PrintsHeaderMetadataAndTensorTable) {
  ToolRun r = Inspect({path_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("GGUF v3"));
  EXPECT_THAT(r.out, HasSubstr("alignment 32"));
  EXPECT_THAT(r.out, HasSubstr("metadata: 3 keys"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("general.architecture +STRING +\"qwen3\""));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("qwen3.block_count +UINT32 +28"));
  // A long array is abbreviated: the count and the first few elements.
  EXPECT_THAT(r.out, HasSubstr("100 items: [\"tok0\", \"tok1\""));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("tok99")));
  // name, type, shape, elements, bytes, offset
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "blk.0.attn_norm.weight +f32 +\\[4, 3\\] +12 +48 +0\n"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("output.weight +q8_0 +\\[32\\] +32 +34 +64\n"));
  EXPECT_THAT(r.out, HasSubstr("total: 2 tensors, 44 elements, 82 bytes"));
}

TEST_F(JllmInspect, PrintsDequantizedRows) {
  ToolRun f32 = Inspect({path_, "--tensor", "blk.0.attn_norm.weight", "--rows", "1:3"});
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_EQ(f32.out, "10.5 11.5 12.5 13.5\n20.5 21.5 22.5 23.5\n");

  ToolRun q8 = Inspect({path_, "--tensor", "output.weight"});
  ASSERT_EQ(q8.exit_code, 0) << q8.err;
  std::string want;
  for (int j = 0; j < 32; ++j) {
    const float x = 0.5f * (j - 3);
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%g", x);
    if (j > 0) want += ' ';
    want += buf;
  }
  EXPECT_EQ(q8.out, want + "\n");
}

TEST_F(JllmInspect, ErrorsGoToStderrWithExitCode1) {
  ToolRun missing = Inspect({"/nonexistent/model.gguf"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/model.gguf"));
  EXPECT_TRUE(missing.out.empty());

  ToolRun no_tensor = Inspect({path_, "--tensor", "nope"});
  EXPECT_EQ(no_tensor.exit_code, 1);
  EXPECT_THAT(no_tensor.err, HasSubstr("no tensor named 'nope'"));

  ToolRun bad_rows = Inspect({path_, "--tensor", "blk.0.attn_norm.weight", "--rows", "2:9"});
  EXPECT_EQ(bad_rows.exit_code, 1);
  EXPECT_THAT(bad_rows.err, HasSubstr("--rows"));

  ToolRun bad_flag = Inspect({path_, "--no-such-flag"});
  EXPECT_EQ(bad_flag.exit_code, 1);
}

}  // namespace
}  // namespace jllm
