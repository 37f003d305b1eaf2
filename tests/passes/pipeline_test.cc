// The YAML-configured pipeline: order, on/off, options, errors, Verify after each pass, dumps.
#include "passes/pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "passes/registry.h"
#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;
using ::testing::HasSubstr;

using jllm::testing::TinyModelFusedIr;

ir::Graph Tiny() {
  auto g = ir::Parse(kTinyModelIr);
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

PipelineConfig Config(std::string_view yaml) {
  auto c = ParsePipelineConfig(yaml, "passes.yaml");
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : PipelineConfig{};
}

std::string ConfigError(std::string_view yaml) {
  auto c = ParsePipelineConfig(yaml, "passes.yaml");
  EXPECT_FALSE(c.ok());
  return std::string(c.status().message());
}

TEST(PipelineTest, RegistryOrderIsThePipelineOrder) {
  EXPECT_EQ(ValidPassNames(),
            "group-qkv, group-gate-up, fuse-rmsnorm-matmul, fuse-residual-add, fuse-swiglu, "
            "fuse-qknorm-rope, kv-dtype");
}

TEST(PipelineTest, AllPassesOnGiveTheFullyFusedGraph) {
  ir::Graph g = Tiny();
  auto runs = RunPipeline(g, DefaultPipelineConfig());
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(ir::Print(g), TinyModelFusedIr());
  testing::ExpectAttributesMatchConfig(ir::Print(g));
  ASSERT_EQ(runs->size(), 7u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"group-qkv", "grouped 1 q/k/v triples (f32+f32+f32 x1)"},
      {"group-gate-up", "grouped 1 gate/up pairs (f32+f32 x1)"},
      {"fuse-rmsnorm-matmul", "folded 2 rms_norms into 2 projections; 1 kept (they feed other ops)"},
      {"fuse-residual-add", "folded 2 residual adds into projections"},
      {"fuse-swiglu", "folded 1 swiglus into gate/up groups"},
      {"fuse-qknorm-rope", "fused 1 layers"},
      {"kv-dtype", "kv cache f16 in all 1 layers"},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*runs)[i].name, want[i].first);
    EXPECT_EQ((*runs)[i].report, want[i].second);
    EXPECT_TRUE((*runs)[i].enabled);
    EXPECT_EQ((*runs)[i].changed, want[i].first != "kv-dtype");
  }
}

TEST(PipelineTest, OneLineSwitchesOnePassOff) {
  ir::Graph g = Tiny();
  auto runs = RunPipeline(g, Config("passes:\n  fuse-swiglu: false\n"));
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(ir::Print(g),
            Edit(TinyModelFusedIr(),
                 {{"%blk.0.ffn_act: f32[T,16] = matmul_group(%blk.0.attn_res; @blk.0.ffn_gate.weight, "
                   "@blk.0.ffn_up.weight, @blk.0.ffn_norm.weight) norm_eps=1e-05 swiglu\n",
                   "%blk.0.gate: f32[T,16], %blk.0.up: f32[T,16] = matmul_group(%blk.0.attn_res; "
                   "@blk.0.ffn_gate.weight, @blk.0.ffn_up.weight, @blk.0.ffn_norm.weight) "
                   "norm_eps=1e-05\n"
                   "%blk.0.ffn_act: f32[T,16] = swiglu(%blk.0.gate, %blk.0.up)\n"}}));
  EXPECT_FALSE((*runs)[4].enabled);
  EXPECT_EQ((*runs)[4].report, "disabled");
}

TEST(PipelineTest, AllOffLeavesTheGraphUnchanged) {
  ir::Graph g = Tiny();
  std::string yaml = "passes:\n";
  for (const PassInfo& p : AllPasses()) yaml += "  " + std::string(p.name) + ": false\n";
  ASSERT_TRUE(RunPipeline(g, Config(yaml)).ok());
  EXPECT_EQ(ir::Print(g), kTinyModelIr);
}

TEST(PipelineTest, OptionsReachThePass) {
  ir::Graph g = Tiny();
  ASSERT_TRUE(RunPipeline(g, Config("passes:\n  kv-dtype: {enabled: true, dtype: int8}\n")).ok());
  EXPECT_EQ(g.kv_dtypes, std::vector<ir::KvDType>{ir::KvDType::kInt8});
}

TEST(PipelineTest, DumpAfterANamedPass) {
  ir::Graph g = Tiny();
  PipelineOptions options;
  options.dump_ir_after = "group-qkv";
  std::vector<std::string> dumped;
  options.dump = [&](std::string_view pass, const std::string& text) {
    dumped.push_back(std::string(pass) + "\n" + text);
  };
  ASSERT_TRUE(RunPipeline(g, DefaultPipelineConfig(), options).ok());
  ASSERT_EQ(dumped.size(), 1u);
  auto after_qkv = Tiny();
  ASSERT_TRUE(FindPass("group-qkv")->run(after_qkv, PassOptions()).ok());
  EXPECT_EQ(dumped[0], "group-qkv\n" + ir::Print(after_qkv));

  options.dump_ir_after = "fuse-everything";
  auto bad = RunPipeline(g, DefaultPipelineConfig(), options);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("--dump-ir-after: unknown pass 'fuse-everything' (valid: all, group-qkv, "));

  options.dump_ir_after = "all";
  dumped.clear();
  ir::Graph g2 = Tiny();
  ASSERT_TRUE(RunPipeline(g2, DefaultPipelineConfig(), options).ok());
  ASSERT_EQ(dumped.size(), AllPasses().size());
  EXPECT_EQ(dumped.back(), "kv-dtype\n" + TinyModelFusedIr());
}

TEST(PipelineTest, InvalidInputGraphIsRefusedBeforeAnyPass) {
  ir::Graph g = Tiny();
  g.kv_dtypes.clear();
  auto runs = RunPipeline(g, DefaultPipelineConfig());
  ASSERT_FALSE(runs.ok());
  EXPECT_THAT(std::string(runs.status().message()), HasSubstr("invalid before any pass"));
}

TEST(PipelineTest, PassErrorsNameThePass) {
  ir::Graph g = Tiny();
  auto runs = RunPipeline(g, Config("passes:\n  kv-dtype: {layers: {5: int8}}\n"));
  ASSERT_FALSE(runs.ok());
  EXPECT_THAT(std::string(runs.status().message()),
              HasSubstr("pass 'kv-dtype' failed: pass 'kv-dtype': option 'layers': layer 5 does "
                        "not exist"));
}

TEST(PipelineConfigTest, DefaultFileHasEverythingOnAndF16) {
  auto c = LoadPipelineConfig(JLLM_SOURCE_DIR "/passes/default_passes.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->passes.size(), AllPasses().size());
  for (const auto& [name, setting] : c->passes) EXPECT_TRUE(setting.enabled) << name;
  EXPECT_EQ(*c->passes.at("kv-dtype").options.String("dtype", ""), "f16");
}

TEST(PipelineConfigTest, YamlRoundTrip) {
  const PipelineConfig c = Config(
      "passes:\n  group-qkv: false\n"
      "  kv-dtype: {dtype: auto, memory_budget_mib: 6144, context_length: 4096, layers: {0: f16, 35: int8}}\n");
  const std::string yaml = PipelineConfigToYaml(c);
  EXPECT_EQ(yaml,
            "passes:\n"
            "  group-qkv: false\n"
            "  group-gate-up: true\n"
            "  fuse-rmsnorm-matmul: true\n"
            "  fuse-residual-add: true\n"
            "  fuse-swiglu: true\n"
            "  fuse-qknorm-rope: true\n"
            "  kv-dtype: {enabled: true, context_length: 4096, dtype: auto, layers: {0: f16, 35: int8}, "
            "memory_budget_mib: 6144}\n");
  EXPECT_EQ(Config(yaml), c);
}

TEST(PipelineConfigTest, EmptyFileMeansDefaults) {
  EXPECT_EQ(Config(""), DefaultPipelineConfig());
  EXPECT_EQ(Config("passes:\n"), DefaultPipelineConfig());
}

TEST(PipelineConfigTest, ErrorsNameTheKeyAndListTheValidOnes) {
  EXPECT_THAT(ConfigError("passes:\n  fuse-everything: true\n"),
              HasSubstr("passes.yaml: unknown pass 'fuse-everything' (line 2, column 3) (valid: "
                        "group-qkv, group-gate-up, fuse-rmsnorm-matmul, fuse-residual-add, "
                        "fuse-swiglu, fuse-qknorm-rope, kv-dtype)"));
  EXPECT_THAT(ConfigError("passes:\n  kv-dtype: {dtyp: int8}\n"),
              HasSubstr("passes.yaml: pass 'kv-dtype': unknown option 'dtyp' (valid: enabled, "
                        "dtype, memory_budget_mib, context_length, layers)"));
  EXPECT_THAT(ConfigError("passes:\n  group-qkv: {width: 2}\n"),
              HasSubstr("pass 'group-qkv': unknown option 'width' (this pass has no options "
                        "besides 'enabled')"));
  EXPECT_THAT(ConfigError("passes:\n  group-qkv: maybe\n"),
              HasSubstr("pass 'group-qkv': expected true, false or a map of options, found "
                        "'maybe'"));
  EXPECT_THAT(ConfigError("passes:\n  group-qkv: {enabled: sometimes}\n"),
              HasSubstr("'enabled' must be true or false"));
  EXPECT_THAT(ConfigError("pases:\n  group-qkv: true\n"),
              HasSubstr("passes.yaml: unknown key 'pases' (valid: passes)"));
  EXPECT_THAT(ConfigError("passes:\n  group-qkv: true\n  group-qkv: false\n"),
              HasSubstr("listed twice"));
  EXPECT_THAT(ConfigError("passes:\n  kv-dtype: {dtype: fp8}\n"),
              HasSubstr("option 'dtype': 'fp8' is not one of f16, int8, f32, auto"));
  EXPECT_THAT(ConfigError("passes: [group-qkv]\n"), HasSubstr("'passes' must be a map"));
  EXPECT_THAT(ConfigError("passes:\n  group-qkv: {\n"), HasSubstr("passes.yaml: bad YAML"));
  EXPECT_THAT(ConfigError("passes:\n  kv-dtype: {layers: [1, 2]}\n"),
              HasSubstr("option 'layers': expected a value or a map"));
}

TEST(PipelineConfigTest, MissingFileIsNamed) {
  auto c = LoadPipelineConfig("/nonexistent/passes.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("/nonexistent/passes.yaml: cannot open"));
}

}  // namespace
}  // namespace jllm::passes
