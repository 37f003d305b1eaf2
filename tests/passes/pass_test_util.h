// Helpers for pass tests: IR text in, IR text out.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/text.h"
#include "ir/verify.h"
#include "passes/pass.h"
#include "passes/pipeline.h"

namespace jllm::passes::testing {

// `text` with each `from` (which must occur exactly once) replaced by its `to`, so an
// expectation reads as "these lines become those".
inline std::string Edit(std::string text,
                        const std::vector<std::pair<std::string, std::string>>& edits) {
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << "not found: " << from;
    if (at == std::string::npos) continue;
    EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "found twice: " << from;
    text.replace(at, from.size(), to);
  }
  return text;
}

struct Ran {
  std::string ir;  // Print() of the graph after the pass, or the error message
  PassResult result;
};

// Parses `text` (which must verify), runs the pass and checks the result verifies.
inline Ran RunPass(PassFn pass, std::string_view text, const PassOptions& options = PassOptions()) {
  auto g = ir::Parse(text);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return {std::string(g.status().message()), {}};
  EXPECT_TRUE(ir::Verify(*g).ok()) << "input does not verify: " << ir::Verify(*g);
  auto result = pass(*g, options);
  if (!result.ok()) return {std::string(result.status().message()), {}};
  EXPECT_TRUE(ir::Verify(*g).ok()) << "pass left an invalid graph: " << ir::Verify(*g);
  return {ir::Print(*g), *result};
}

// Runs the pipeline with only `pass` switched to `enabled` and every other pass off.
inline std::string RunOnly(std::string_view pass, bool enabled, std::string_view text) {
  PipelineConfig config = DefaultPipelineConfig();
  for (auto& [name, setting] : config.passes) setting.enabled = (name == pass) && enabled;
  auto g = ir::Parse(text);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return "";
  auto runs = RunPipeline(*g, config);
  EXPECT_TRUE(runs.ok()) << runs.status();
  return ir::Print(*g);
}

}  // namespace jllm::passes::testing
