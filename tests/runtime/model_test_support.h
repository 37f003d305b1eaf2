// The trained tiny-coder model (tests/support/test_data.h says where it lives) opened for the
// runtime's model tests: its graph as the Qwen3 builder makes it, and its tokenizer.
#pragma once

#include <memory>

#include "backends/cpu_ref/cpu_ref_backend.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gtest/gtest.h"
#include "passes/registry.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/support/compile_plan.h"
#include "tests/support/gguf_model.h"
#include "tests/support/test_data.h"

namespace jllm::runtime::testing {

using ::jllm::testing::CompilePlan;
using ::jllm::testing::NoPasses;
using ::jllm::testing::TinyCoderPath;

struct TinyCoder : ::jllm::testing::GgufModel {
  gguf::TokenizerData tokenizer_data;
  std::unique_ptr<Tokenizer> tokenizer;
};

// nullptr (with a test failure) if the file exists but does not load.
inline std::unique_ptr<TinyCoder> OpenTinyCoder() {
  auto opened = ::jllm::testing::OpenGgufModel(TinyCoderPath());
  if (opened == nullptr) return nullptr;
  auto m = std::make_unique<TinyCoder>();
  static_cast<::jllm::testing::GgufModel&>(*m) = std::move(*opened);
  auto tok = gguf::ReadTokenizerData(*m->file);
  EXPECT_TRUE(tok.ok()) << tok.status();
  if (!tok.ok()) return nullptr;
  m->tokenizer_data = *std::move(tok);
  auto t = Tokenizer::Create(m->tokenizer_data);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return nullptr;
  m->tokenizer = *std::move(t);
  return m;
}

}  // namespace jllm::runtime::testing

// The name tests/cuda uses; the same rule (skip, or fail under JLLM_REQUIRE_ORACLES=1).
#define JLLM_SKIP_WITHOUT_TINY_CODER() JLLM_REQUIRE_TINY_CODER()
