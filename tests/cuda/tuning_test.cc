// The tuning table's text form (backends/cuda/lowering/tuning.h): what a hand-written file or a
// plan section may say, and the messages for what it may not.
#include "backends/cuda/lowering/tuning.h"

#include <string>

#include "gtest/gtest.h"

namespace jllm::cuda {
namespace {

TuningTable Sample() {
  TuningTable t;
  t.device = "NVIDIA H200 (sm_90, 132 SMs)";
  t.gemv["q4_K 2560x4096 +residual"] = {{"minb", 1}, {"nw", 16}};
  t.gemv["q6_K 151936x2560"] = {{"ring", 4}, {"ksplit", 2}};
  return t;
}

TEST(Tuning, YamlRoundTrip) {
  const TuningTable t = Sample();
  const std::string yaml = TuningToYaml(t);
  // Knobs print in the table's order (nw before minb), shapes quoted: a file a person can edit.
  EXPECT_NE(yaml.find("\"q4_K 2560x4096 +residual\": {nw: 16, minb: 1}"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("device: \"NVIDIA H200 (sm_90, 132 SMs)\""), std::string::npos) << yaml;
  auto back = ParseTuningYaml(yaml, "t.yaml");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
}

TEST(Tuning, HandWrittenFile) {
  auto t = ParseTuningYaml(
      "# measured by hand\n"
      "gemv:\n"
      "  q4_K+q4_K 9728+9728x2560 +norm +swiglu:\n"
      "    nw: 8\n"
      "    minb: 2\n"
      "  'q6_K 2560x9728 +residual': {ring: 0, depth: 3}\n",
      "mine.yaml");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->device, "");  // any GPU
  ASSERT_EQ(t->gemv.size(), 2u);
  EXPECT_EQ(t->gemv.at("q4_K+q4_K 9728+9728x2560 +norm +swiglu"), (GemvKnobValues{{"nw", 8}, {"minb", 2}}));
  EXPECT_EQ(t->gemv.at("q6_K 2560x9728 +residual"), (GemvKnobValues{{"ring", 0}, {"depth", 3}}));
  auto empty = ParseTuningYaml("", "empty.yaml");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
}

TEST(Tuning, KnobRangesAreSpelledOut) {
  EXPECT_EQ(FindGemvKnob("nw")->Range(), "in 1..32");
  EXPECT_EQ(FindGemvKnob("ring")->Range(), "in 0 or 2..16");
  EXPECT_EQ(FindGemvKnob("x_lanes")->Range(), "in 1..2 or 4");
  EXPECT_EQ(FindGemvKnob("ksplit")->Range(), ">= 1");
  EXPECT_FALSE(FindGemvKnob("ring")->Allows(1));
  EXPECT_TRUE(FindGemvKnob("ring")->Allows(0));
  EXPECT_EQ(FindGemvKnob("warps"), nullptr);
  for (const GemvKnob& k : GemvKnobs()) {
    EXPECT_EQ(k.env.substr(0, 10), "JLLM_GEMV_") << k.name;  // the A/B switch of the same knob
  }
}

// Each bad file is refused with a message naming the file and what is wrong in it.
TEST(Tuning, BadFilesAreRefusedNamingTheProblem) {
  struct Case {
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      {"gemv: {\"q4_K 256x256\": {warps: 4}}", "unknown knob 'warps'"},
      {"gemv: {\"q4_K 256x256\": {warps: 4}}", "valid: nw, minb, r, ring"},
      {"gemv: {\"q4_K 256x256\": {ring: 1}}", "knob 'ring' must be an integer in 0 or 2..16"},
      {"gemv: {\"q4_K 256x256\": {nw: 33}}", "knob 'nw' must be an integer in 1..32 (warps a CTA)"},
      {"gemv: {\"q4_K 256x256\": {nw: eight}}", "'q4_K 256x256': knob 'nw' must be an integer"},
      {"gemv: {\"q4_K 256x256\": {nw: 8, nw: 16}}", "knob 'nw' is given twice"},
      {"gemv: {\"q4_K 256x256\": {nw: 8}, \"q4_K 256x256\": {nw: 16}}", "'q4_K 256x256' is given twice"},
      {"gemv: {\"q4_K 256x256\": 8}", "expected a map of knobs"},
      {"gemv: [1, 2]", "'gemv' must map GEMV shapes to knobs"},
      {"gemm: {}", "unknown key 'gemm'"},
      {"[1, 2]", "expected a map with the keys 'device' and 'gemv'"},
      {"gemv: {\"q4_K 256x256\": {nw: 8}", "bad YAML"},
  };
  for (const Case& c : cases) {
    auto t = ParseTuningYaml(c.text, "tune.yaml");
    ASSERT_FALSE(t.ok()) << c.text;
    const std::string msg(t.status().message());
    EXPECT_EQ(msg.rfind("tune.yaml: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.says), std::string::npos) << c.text << " -> " << msg;
  }
}

TEST(Tuning, ShapeKeysNameTypesRowsColumnsAndFusions) {
  EXPECT_EQ(GemvShapeKey({"q4_K", "q4_K", "q6_K"}, {4096, 1024, 1024}, 2560, true, false, false),
            "q4_K+q4_K+q6_K 4096+1024+1024x2560 +norm");
  EXPECT_EQ(GemvShapeKey({"q4_K", "q4_K"}, {9728, 9728}, 2560, true, false, true),
            "q4_K+q4_K 9728+9728x2560 +norm +swiglu");
  EXPECT_EQ(GemvShapeKey({"q6_K"}, {2560}, 9728, false, true, false), "q6_K 2560x9728 +residual");
}

}  // namespace
}  // namespace jllm::cuda
