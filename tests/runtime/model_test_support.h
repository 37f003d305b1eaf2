// The trained tiny-coder model (../shared/models/tiny-coder-q8_0.gguf) opened for the model
// tests: its graph as the Qwen3 builder makes it, its tokenizer, and cpu_ref runs of the graph
// after a given pass configuration. Tests skip when the file is absent.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu_ref/cpu_ref_backend.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/qwen3_graph.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gtest/gtest.h"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "runtime/tokenizer/tokenizer.h"

namespace jllm::runtime::testing {

// $JLLM_TINY_CODER overrides the path (the GPU machine gets the model carried elsewhere).
inline std::string TinyCoderPath() {
  const char* env = std::getenv("JLLM_TINY_CODER");
  return env != nullptr && *env != '\0' ? env : JLLM_TINY_CODER_PATH;
}

struct TinyCoder {
  std::unique_ptr<gguf::GgufFile> file;
  ir::Graph graph;  // unlowered
  gguf::TokenizerData tokenizer_data;
  std::unique_ptr<Tokenizer> tokenizer;
  absl::Span<const uint8_t> blob() const { return file->bytes().subspan(file->data_offset()); }
};

// nullptr (with a test failure) if the file exists but does not load.
inline std::unique_ptr<TinyCoder> OpenTinyCoder() {
  auto m = std::make_unique<TinyCoder>();
  auto file = gguf::GgufFile::Open(TinyCoderPath());
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return nullptr;
  m->file = *std::move(file);
  auto graph = gguf::BuildQwen3Graph(*m->file);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  m->graph = *std::move(graph);
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

#define JLLM_SKIP_WITHOUT_TINY_CODER()                                              \
  if (!std::filesystem::exists(::jllm::runtime::testing::TinyCoderPath())) {        \
    GTEST_SKIP() << ::jllm::runtime::testing::TinyCoderPath() << " is not present"; \
  }

// Every pass off: the graph as the builder made it (KV cache f16).
inline passes::PipelineConfig NoPasses() {
  passes::PipelineConfig c = passes::DefaultPipelineConfig();
  for (auto& [name, setting] : c.passes) setting.enabled = false;
  return c;
}

}  // namespace jllm::runtime::testing
