// Hugging Face's independent GGUF reader (npm @huggingface/gguf, run under node) must read our
// writer's files exactly as we meant them: header counts, metadata, tensor table, blob start.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/gguf_writer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_data.h"

namespace jllm::gguf {
namespace {

const std::string kPackageDir = ::jllm::testing::NpmOracleModules() + "/@huggingface/gguf";
const std::string kScript = std::string(JLLM_SOURCE_DIR) + "/tests/gguf/hf_gguf_dump.js";

bool FileExists(const std::string& p) {
  FILE* f = std::fopen(p.c_str(), "r");
  if (f) std::fclose(f);
  return f != nullptr;
}

// Runs the node script on `path`; stdout (the JSON) into *out. False on a non-zero exit.
bool RunOracle(const std::string& path, std::string* out, std::string* err) {
  const std::string err_path = path + ".stderr";
  const std::string cmd = "node '" + kScript + "' '" + kPackageDir + "' '" + path + "' 2>'" +
                          err_path + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  const int rc = pclose(p);
  if (FILE* e = std::fopen(err_path.c_str(), "r")) {
    while ((n = std::fread(buf, 1, sizeof(buf), e)) > 0) err->append(buf, n);
    std::fclose(e);
  }
  std::remove(err_path.c_str());
  return rc == 0;
}

class HfOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    JLLM_REQUIRE_TEST_DATA(::jllm::testing::NodeIsInstalled(),
                           "node is not installed; run scripts/setup.sh to get the GGUF oracle");
    JLLM_REQUIRE_TEST_DATA(FileExists(kPackageDir + "/package.json"),
                           "@huggingface/gguf is missing from " << kPackageDir
                                                                << "; run scripts/setup.sh");
  }
};

struct Expected {
  std::string name;
  int dtype;
  std::vector<std::string> shape;  // as the file stores it: trailing 1s dropped
  std::string offset;
};

uint64_t Pad(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

TEST_F(HfOracle, ReadsOurWriterOutput) {
  for (uint32_t alignment : {32u, 64u}) {
    SCOPED_TRACE(alignment);
    GgufWriter w(alignment);
    w.SetString("general.architecture", "qwen3");
    w.SetUint32("qwen3.block_count", 28);
    w.SetFloat32("qwen3.rope.freq_base", 1e6f);
    w.SetStringArray("tokenizer.ggml.tokens", {"a", "b", "<|im_end|>"});
    w.SetInt32Array("tokenizer.ggml.token_type", {1, 1, 3});
    w.SetUint64("general.size", uint64_t{1} << 40);
    Value i64;
    i64.type = ValueType::kInt64;
    i64.scalar = int64_t{-5};
    w.SetValue("test.i64", i64);
    w.SetBool("test.flag", true);
    Value f64;
    f64.type = ValueType::kFloat64;
    f64.scalar = 0.25;
    w.SetValue("test.f64", f64);

    auto add = [&](const std::string& name, GgmlType t, std::vector<int64_t> ne, size_t nbytes) {
      ASSERT_TRUE(w.AddTensor(name, t, std::move(ne), std::vector<uint8_t>(nbytes, 0x5A)).ok());
    };
    add("token_embd.weight", GgmlType::kQ4_K, {256, 8}, 144 * 8);
    add("blk.0.attn_norm.weight", GgmlType::kF32, {256}, 1024);
    add("output.weight", GgmlType::kQ6_K, {256, 4, 1}, 210 * 4);
    add("blk.0.ffn_down.weight", GgmlType::kQ8_0, {64, 3, 2}, 34 * 2 * 6);
    add("x.f16", GgmlType::kF16, {5}, 10);
    const std::string path = ::testing::TempDir() + "jllm_hf_oracle_" +
                             std::to_string(alignment) + ".gguf";
    ASSERT_TRUE(w.Write(path).ok());

    // Offsets by hand: each previous tensor's bytes padded to the alignment.
    std::vector<uint64_t> sizes = {1152, 1024, 840, 408, 10};
    std::vector<std::string> offsets;
    uint64_t off = 0;
    for (uint64_t s : sizes) {
      offsets.push_back(std::to_string(off));
      off += Pad(s, alignment);
    }
    const std::vector<Expected> expected = {
        {"token_embd.weight", 12, {"256", "8"}, offsets[0]},
        {"blk.0.attn_norm.weight", 0, {"256"}, offsets[1]},
        {"output.weight", 14, {"256", "4"}, offsets[2]},
        {"blk.0.ffn_down.weight", 8, {"64", "3", "2"}, offsets[3]},
        {"x.f16", 1, {"5"}, offsets[4]},
    };
    // Header size by the layout of FORMATS.md §1: strings are u64 length + bytes.
    auto str = [](const std::string& s) { return 8 + s.size(); };
    uint64_t header = 4 + 4 + 8 + 8;
    header += str("general.architecture") + 4 + str("qwen3");
    header += str("qwen3.block_count") + 4 + 4;
    header += str("qwen3.rope.freq_base") + 4 + 4;
    header += str("tokenizer.ggml.tokens") + 4 + 4 + 8 + str("a") + str("b") + str("<|im_end|>");
    header += str("tokenizer.ggml.token_type") + 4 + 4 + 8 + 3 * 4;
    header += str("general.size") + 4 + 8;
    header += str("test.i64") + 4 + 8;
    header += str("test.flag") + 4 + 1;
    header += str("test.f64") + 4 + 8;
    if (alignment != 32) header += str("general.alignment") + 4 + 4;
    for (const Expected& e : expected) header += str(e.name) + 4 + 8 * e.shape.size() + 4 + 8;

    std::string out, err;
    ASSERT_TRUE(RunOracle(path, &out, &err)) << "the HF reader rejected our file: " << err;
    const nlohmann::json j = nlohmann::json::parse(out);
    EXPECT_EQ(j["version"], 3);
    EXPECT_EQ(j["little_endian"], true);
    EXPECT_EQ(j["tensor_count"], "5");
    EXPECT_EQ(j["kv_count"], alignment == 32 ? "9" : "10");
    EXPECT_EQ(j["tensor_data_offset"], std::to_string(Pad(header, alignment)));

    const auto& m = j["metadata"];
    EXPECT_EQ(m["general.architecture"]["type"], 8);
    EXPECT_EQ(m["general.architecture"]["value"], "qwen3");
    EXPECT_EQ(m["qwen3.block_count"]["type"], 4);
    EXPECT_EQ(m["qwen3.block_count"]["value"], 28);
    EXPECT_EQ(m["qwen3.rope.freq_base"]["type"], 6);
    EXPECT_EQ(m["qwen3.rope.freq_base"]["value"], 1e6);
    EXPECT_EQ(m["tokenizer.ggml.tokens"]["type"], 9);
    EXPECT_EQ(m["tokenizer.ggml.tokens"]["subType"], 8);
    EXPECT_EQ(m["tokenizer.ggml.tokens"]["value"],
              nlohmann::json::array({"a", "b", "<|im_end|>"}));
    EXPECT_EQ(m["tokenizer.ggml.token_type"]["subType"], 5);
    EXPECT_EQ(m["tokenizer.ggml.token_type"]["value"], nlohmann::json::array({1, 1, 3}));
    EXPECT_EQ(m["general.size"]["type"], 10);
    EXPECT_EQ(m["general.size"]["value"], "1099511627776");
    EXPECT_EQ(m["test.i64"]["type"], 11);
    EXPECT_EQ(m["test.i64"]["value"], "-5");
    EXPECT_EQ(m["test.flag"]["type"], 7);
    EXPECT_EQ(m["test.flag"]["value"], true);
    EXPECT_EQ(m["test.f64"]["type"], 12);
    EXPECT_EQ(m["test.f64"]["value"], 0.25);
    if (alignment != 32) {
      EXPECT_EQ(m["general.alignment"]["type"], 4);
      EXPECT_EQ(m["general.alignment"]["value"], alignment);
    }

    const auto& tensors = j["tensors"];
    ASSERT_EQ(tensors.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(expected[i].name);
      EXPECT_EQ(tensors[i]["name"], expected[i].name);
      EXPECT_EQ(tensors[i]["dtype"], expected[i].dtype);
      EXPECT_EQ(tensors[i]["n_dims"], expected[i].shape.size());
      EXPECT_EQ(tensors[i]["shape"], nlohmann::json(expected[i].shape));
      EXPECT_EQ(tensors[i]["offset"], expected[i].offset);
    }

    // Our reader agrees with the oracle on where the blob starts.
    auto f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(std::to_string((*f)->data_offset()), j["tensor_data_offset"]);
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace jllm::gguf
