// The plan jllm-compile would write for a model, built in memory for runtime tests.
#pragma once

#include "frontends/gguf/tokenizer_data.h"
#include "gtest/gtest.h"
#include "passes/pipeline.h"
#include "runtime/plan_file.h"
#include "runtime/plan_weights.h"
#include "tests/support/gguf_model.h"

namespace jllm::testing {

// Every pass off: the graph as the builder made it (KV cache f16).
inline passes::PipelineConfig NoPasses() {
  passes::PipelineConfig c = passes::DefaultPipelineConfig();
  for (auto& [name, setting] : c.passes) setting.enabled = false;
  return c;
}

// `model` compiled with `config` (graph after the passes, the GGUF's tokenizer, its weight
// fingerprint), then serialized and read back as jllm-run would read it. An empty plan, with a
// test failure, if any step fails.
inline runtime::Plan CompilePlan(const GgufModel& model, const passes::PipelineConfig& config) {
  runtime::Plan plan;
  plan.graph = model.graph;
  auto runs = passes::RunPipeline(plan.graph, config);
  EXPECT_TRUE(runs.ok()) << runs.status();
  if (!runs.ok()) return {};
  plan.passes_yaml = passes::PipelineConfigToYaml(config);
  auto tokenizer = gguf::ReadTokenizerData(*model.file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  if (!tokenizer.ok()) return {};
  plan.tokenizer = *std::move(tokenizer);
  auto weights = runtime::DescribeGgufWeights(model.path, model.file->bytes(), model.file->data_offset());
  EXPECT_TRUE(weights.ok()) << weights.status();
  if (!weights.ok()) return {};
  plan.weights = *std::move(weights);
  auto back = runtime::DeserializePlan(runtime::SerializePlan(plan), model.path + ".plan");
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? *std::move(back) : runtime::Plan{};
}

}  // namespace jllm::testing
