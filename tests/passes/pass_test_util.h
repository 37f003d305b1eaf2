// Helpers for pass tests: IR text in, IR text out.
//
//   Ran ran = RunPass(RunFuseSwiGlu, text);         // runs one pass, checks Verify before/after
//   EXPECT_EQ(ran.ir, Edit(text, {{from, to}}));    // the whole expected text, as an edit
//   EXPECT_TRUE(MatchesCheckLines(ran.ir, R"(
//     CHECK:      matmul_group(%x;
//     CHECK-NEXT: = attention(
//     CHECK-NOT:  rms_norm(
//   )"));                                           // or only the lines that matter
//   ExpectNoChange(RunGroupQkv, text);              // the pass leaves `text` alone
//   ExpectAttributesMatchConfig(ran.ir);            // no attribute fell back to a default
#pragma once

#include <gtest/gtest.h>

#include <cmath>
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

// Runs the pass on `text` and expects it to report no change and leave the text as it was.
inline Ran ExpectNoChange(PassFn pass, std::string_view text,
                          const PassOptions& options = PassOptions()) {
  Ran ran = RunPass(pass, text, options);
  EXPECT_EQ(ran.ir, text);
  EXPECT_FALSE(ran.result.changed) << ran.result.report;
  return ran;
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

// `s` cut at each '\n' (a final '\n' gives a last, empty piece), and `s` without the
// surrounding blanks.
inline std::vector<std::string_view> SplitLines(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t at; (at = s.find('\n')) != std::string_view::npos; s.remove_prefix(at + 1)) {
    out.push_back(s.substr(0, at));
  }
  out.push_back(s);
  return out;
}
inline std::string_view Strip(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Matches `text` against CHECK lines, as LLVM's FileCheck does (a subset): each line of
// `checks` is blank or one of
//   CHECK: s       the next line containing s, at or after the previous match;
//   CHECK-NEXT: s  the line right after the previous match contains s;
//   CHECK-NOT: s   no line between the previous match and the next one (or the end) contains s.
// The failure message says which check failed and where the search stood.
inline ::testing::AssertionResult MatchesCheckLines(std::string_view text,
                                                    std::string_view checks) {
  const std::vector<std::string_view> lines = SplitLines(text);
  size_t next = 0;  // first line the next CHECK may match
  std::vector<std::string_view> pending_not;
  auto fail = [&](std::string_view what) {
    return ::testing::AssertionFailure()
           << what << " (searching from line " << next + 1 << ") in:\n" << text;
  };
  // The CHECK-NOTs waiting since the previous match must not occur in lines [next, end).
  auto check_nots = [&](size_t end) -> std::string {
    for (std::string_view s : pending_not) {
      for (size_t i = next; i < end && i < lines.size(); ++i) {
        if (lines[i].find(s) != std::string_view::npos) {
          return "CHECK-NOT: " + std::string(s) + " found on line " + std::to_string(i + 1);
        }
      }
    }
    pending_not.clear();
    return "";
  };
  auto consume = [](std::string_view* s, std::string_view prefix) {
    if (!s->starts_with(prefix)) return false;
    *s = Strip(s->substr(prefix.size()));
    return true;
  };
  for (std::string_view raw : SplitLines(checks)) {
    const std::string_view line = Strip(raw);
    if (line.empty()) continue;
    std::string_view pattern = line;
    if (consume(&pattern, "CHECK-NOT:")) {
      pending_not.push_back(pattern);
    } else if (consume(&pattern, "CHECK-NEXT:")) {
      if (next >= lines.size() || lines[next].find(pattern) == std::string_view::npos) {
        return fail("CHECK-NEXT: " + std::string(pattern) + " is not on the next line");
      }
      if (std::string e = check_nots(next); !e.empty()) return fail(e);
      ++next;
    } else if (consume(&pattern, "CHECK:")) {
      size_t at = next;
      while (at < lines.size() && lines[at].find(pattern) == std::string_view::npos) ++at;
      if (at == lines.size()) return fail("CHECK: " + std::string(pattern) + " not found");
      if (std::string e = check_nots(at); !e.empty()) return fail(e);
      next = at + 1;
    } else {
      return ::testing::AssertionFailure() << "not a CHECK line: " << line;
    }
  }
  if (std::string e = check_nots(lines.size()); !e.empty()) return fail(e);
  return ::testing::AssertionSuccess();
}

// Every attribute that passes carry from node to node equals the model's own value from the
// config line: eps, RoPE base and scale, head_dim (and n_rot = head_dim), kv heads, and the
// attention scale 1/sqrt(head_dim). The test IR sets each away from its default (eps 1e-6,
// base 1e4, scale 1, head_dim = n_embd/n_head), so a pass that writes a default, or derives a
// value from the wrong field, fails here; that precondition is checked too.
inline void ExpectAttributesMatchConfig(std::string_view text) {
  auto g = ir::Parse(text);
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::ModelConfig& c = g->config;
  ASSERT_NE(c.rms_eps, 1e-6f) << "the test IR must not use the default eps";
  ASSERT_NE(c.rope_base, 10000.0f) << "the test IR must not use the default RoPE base";
  ASSERT_NE(c.rope_freq_scale, 1.0f) << "the test IR must not use the default RoPE scale";
  ASSERT_NE(c.head_dim, c.n_embd / c.n_head) << "the test IR must have head_dim != n_embd/n_head";
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  int checked = 0;
  for (const ir::Node& n : g->nodes) {
    const std::string where = std::string(ir::OpName(n.op)) + " -> %" + g->name_of(n.outputs[0]);
    if (const auto* a = std::get_if<ir::RmsNormAttrs>(&n.attrs)) {
      EXPECT_EQ(a->eps, c.rms_eps) << where;
      ++checked;
    } else if (const auto* a = std::get_if<ir::MatMulAttrs>(&n.attrs)) {
      if (a->norm_eps) {
        EXPECT_EQ(*a->norm_eps, c.rms_eps) << where;
      }
      checked += a->norm_eps.has_value();
    } else if (const auto* a = std::get_if<ir::HeadRmsNormAttrs>(&n.attrs)) {
      EXPECT_EQ(a->eps, c.rms_eps) << where;
      EXPECT_EQ(a->head_dim, c.head_dim) << where;
      ++checked;
    } else if (const auto* a = std::get_if<ir::RopeAttrs>(&n.attrs)) {
      EXPECT_EQ(a->head_dim, c.head_dim) << where;
      EXPECT_EQ(a->n_rot, c.head_dim) << where;
      EXPECT_EQ(a->freq_base, c.rope_base) << where;
      EXPECT_EQ(a->freq_scale, c.rope_freq_scale) << where;
      ++checked;
    } else if (const auto* a = std::get_if<ir::KvAppendAttrs>(&n.attrs)) {
      EXPECT_EQ(a->head_dim, c.head_dim) << where;
      EXPECT_EQ(a->n_head_kv, c.n_head_kv) << where;
      ++checked;
    } else if (const auto* a = std::get_if<ir::AttentionAttrs>(&n.attrs)) {
      EXPECT_EQ(a->head_dim, c.head_dim) << where;
      EXPECT_EQ(a->n_head, c.n_head) << where;
      EXPECT_EQ(a->n_head_kv, c.n_head_kv) << where;
      EXPECT_EQ(a->scale, scale) << where << ": the scale must be 1/sqrt(head_dim)";
      ++checked;
    } else if (const auto* a = std::get_if<ir::QkNormRopeKvAppendAttrs>(&n.attrs)) {
      EXPECT_EQ(a->n_head, c.n_head) << where;
      EXPECT_EQ(a->n_head_kv, c.n_head_kv) << where;
      EXPECT_EQ(a->head_dim, c.head_dim) << where;
      EXPECT_EQ(a->eps, c.rms_eps) << where;
      EXPECT_EQ(a->n_rot, c.head_dim) << where;
      EXPECT_EQ(a->freq_base, c.rope_base) << where;
      EXPECT_EQ(a->freq_scale, c.rope_freq_scale) << where;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << "no node with model attributes in:\n" << text;
}

}  // namespace jllm::passes::testing
