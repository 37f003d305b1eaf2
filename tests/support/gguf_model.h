// A GGUF model opened for a test: the mapped file and the graph the Qwen3 builder makes of it.
#pragma once

#include <memory>
#include <string>

#include "absl/types/span.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/qwen3_graph.h"
#include "gtest/gtest.h"
#include "ir/graph.h"

namespace jllm::testing {

struct GgufModel {
  std::string path;
  std::unique_ptr<gguf::GgufFile> file;  // the mapping stays valid if the file is removed
  ir::Graph graph;                       // unlowered, as the builder makes it
  absl::Span<const uint8_t> blob() const { return file->bytes().subspan(file->data_offset()); }
};

// nullptr, with a test failure, if the file does not open or its graph does not build.
inline std::unique_ptr<GgufModel> OpenGgufModel(const std::string& path) {
  auto m = std::make_unique<GgufModel>();
  m->path = path;
  auto file = gguf::GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return nullptr;
  m->file = *std::move(file);
  auto graph = gguf::BuildQwen3Graph(*m->file);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  m->graph = *std::move(graph);
  return m;
}

}  // namespace jllm::testing
