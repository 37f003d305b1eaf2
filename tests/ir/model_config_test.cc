// ValidateModelConfig: the ranges a graph's hyper-parameters must lie in, each refused with a
// message that names the field and the value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ir/model_config.h"

namespace jllm::ir {
namespace {

using ::testing::HasSubstr;

// Qwen3-0.6B (FORMATS.md §5): head_dim 128 while n_embd/n_head = 64.
ModelConfig Qwen3_0_6B() {
  return {"qwen3", 1024, 28, 16, 8, 128, 3072, 151936, 40960, 1e6f, 1.0f, 1e-6f, true};
}

std::string Error(const ModelConfig& c) {
  const absl::Status s = ValidateModelConfig(c);
  EXPECT_FALSE(s.ok()) << "accepted";
  return std::string(s.message());
}

TEST(ModelConfigTest, RealConfigsAreValid) {
  EXPECT_TRUE(ValidateModelConfig(Qwen3_0_6B()).ok());
  ModelConfig c = Qwen3_0_6B();
  c.n_head_kv = c.n_head;  // no GQA
  EXPECT_TRUE(ValidateModelConfig(c).ok());
  c.rope_freq_scale = 0.25f;
  EXPECT_TRUE(ValidateModelConfig(c).ok());
}

TEST(ModelConfigTest, EverySizeMustBePositive) {
  struct Field {
    const char* name;
    int64_t ModelConfig::*member;
  };
  for (const Field& f : {Field{"n_embd", &ModelConfig::n_embd}, Field{"n_layer", &ModelConfig::n_layer},
                         Field{"n_head", &ModelConfig::n_head}, Field{"n_head_kv", &ModelConfig::n_head_kv},
                         Field{"head_dim", &ModelConfig::head_dim}, Field{"n_ff", &ModelConfig::n_ff},
                         Field{"n_vocab", &ModelConfig::n_vocab},
                         Field{"context_length", &ModelConfig::context_length}}) {
    for (int64_t bad : {int64_t{0}, int64_t{-1}}) {
      ModelConfig c = Qwen3_0_6B();
      c.*f.member = bad;
      EXPECT_THAT(Error(c), HasSubstr(std::string(f.name) + " = " + std::to_string(bad) +
                                      " is outside [1, "));
    }
  }
}

TEST(ModelConfigTest, SizesHaveUpperBoundsSoProductsCannotOverflow) {
  ModelConfig c = Qwen3_0_6B();
  c.n_embd = (int64_t{1} << 24) + 1;
  EXPECT_THAT(Error(c), HasSubstr("n_embd = 16777217 is outside [1, 16777216]"));
  c = Qwen3_0_6B();
  c.n_layer = 4097;
  EXPECT_THAT(Error(c), HasSubstr("n_layer = 4097 is outside [1, 4096]"));
  c = Qwen3_0_6B();
  c.context_length = (int64_t{1} << 24) + 1;
  EXPECT_THAT(Error(c), HasSubstr("context_length = 16777217 is outside [1, 16777216]"));
  c = Qwen3_0_6B();
  c.n_vocab = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(Error(c), HasSubstr("n_vocab"));
  // The bounds themselves are accepted.
  c = Qwen3_0_6B();
  c.n_layer = 4096;
  c.context_length = int64_t{1} << 24;
  EXPECT_TRUE(ValidateModelConfig(c).ok());
}

TEST(ModelConfigTest, QueryHeadsAreAMultipleOfKvHeads) {
  ModelConfig c = Qwen3_0_6B();
  c.n_head_kv = 5;
  EXPECT_THAT(Error(c), HasSubstr("n_head = 16 is not a multiple of n_head_kv = 5"));
  c.n_head_kv = 32;  // more kv heads than query heads
  EXPECT_THAT(Error(c), HasSubstr("n_head = 16 is not a multiple of n_head_kv = 32"));
}

TEST(ModelConfigTest, OddHeadDimIsRefused) {
  ModelConfig c = Qwen3_0_6B();
  c.head_dim = 127;
  EXPECT_THAT(Error(c), HasSubstr("head_dim = 127 is odd (RoPE rotates pairs)"));
  c.head_dim = 1;
  EXPECT_THAT(Error(c), HasSubstr("head_dim = 1 is odd"));
}

TEST(ModelConfigTest, RopeAndEpsMustBeFiniteAndPositive) {
  struct Field {
    const char* name;
    float ModelConfig::*member;
  };
  for (const Field& f : {Field{"rope_base", &ModelConfig::rope_base},
                         Field{"rope_freq_scale", &ModelConfig::rope_freq_scale},
                         Field{"rms_eps", &ModelConfig::rms_eps}}) {
    for (float bad : {0.0f, -1e-6f, -1e6f, std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity(), std::nanf("")}) {
      SCOPED_TRACE(bad);
      ModelConfig c = Qwen3_0_6B();
      c.*f.member = bad;
      const std::string e = Error(c);
      EXPECT_THAT(e, HasSubstr(std::string("model config: ") + f.name + " = "));
      EXPECT_THAT(e, HasSubstr("must be finite and positive"));
    }
    ModelConfig c = Qwen3_0_6B();
    c.*f.member = std::numeric_limits<float>::denorm_min();  // tiny but positive
    EXPECT_TRUE(ValidateModelConfig(c).ok()) << f.name;
  }
}

TEST(ModelConfigTest, ArchitectureIsNamed) {
  ModelConfig c = Qwen3_0_6B();
  c.arch = "";
  EXPECT_THAT(Error(c), HasSubstr("arch is empty"));
}

}  // namespace
}  // namespace jllm::ir
