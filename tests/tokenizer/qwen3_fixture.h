// Shared helpers for the tests that use the real Qwen3 vocabulary: where its files live, the
// imported TokenizerData and tokenizers built from it (once per test process), JSONL reading.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/gguf_writer.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/tokenizer/tokenizer.h"

namespace jllm::testing_qwen3 {

// The Qwen3 tokenizer folder: ../shared/qwen3 beside the checkout, else the copy that
// scripts/setup.sh fetches into .deps/. Empty if neither exists.
inline std::string Qwen3Dir() {
  for (const char* rel : {"/../shared/qwen3", "/.deps/qwen3-tokenizer"}) {
    const std::string dir = std::string(JLLM_SOURCE_DIR) + rel;
    if (std::filesystem::exists(dir + "/tokenizer.json")) return dir;
  }
  return "";
}

inline constexpr int64_t kQwen3VocabSize = 151936;

// A path in the test temp folder that no other test process uses at the same time.
inline std::string UniqueTempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / (std::to_string(getpid()) + "_" + name)).string();
}

// Imported once per process; nullptr (with the reason in *error) if it cannot be.
inline const gguf::TokenizerData* Qwen3Data(std::string* error) {
  static std::string import_error;
  static const std::unique_ptr<gguf::TokenizerData> data = [] {
    const std::string dir = Qwen3Dir();
    if (dir.empty()) {
      import_error = "Qwen3 tokenizer files not found in ../shared/qwen3 or .deps/qwen3-tokenizer";
      return std::unique_ptr<gguf::TokenizerData>();
    }
    absl::StatusOr<gguf::TokenizerData> d = gguf::ImportHfTokenizer(dir, kQwen3VocabSize);
    if (!d.ok()) {
      import_error = d.status().ToString();
      return std::unique_ptr<gguf::TokenizerData>();
    }
    return std::make_unique<gguf::TokenizerData>(*std::move(d));
  }();
  if (error) *error = import_error;
  return data.get();
}

inline const runtime::Tokenizer* Qwen3Tokenizer(std::string* error) {
  static std::string build_error;
  static const std::unique_ptr<runtime::Tokenizer> tok = [] {
    std::string err;
    const gguf::TokenizerData* data = Qwen3Data(&err);
    if (data == nullptr) {
      build_error = err;
      return std::unique_ptr<runtime::Tokenizer>();
    }
    absl::StatusOr<std::unique_ptr<runtime::Tokenizer>> t = runtime::Tokenizer::Create(*data);
    if (!t.ok()) {
      build_error = t.status().ToString();
      return std::unique_ptr<runtime::Tokenizer>();
    }
    return *std::move(t);
  }();
  if (error) *error = build_error;
  return tok.get();
}

// The same vocabulary after a trip through a GGUF file: WriteTokenizerData, then ReadTokenizerData.
inline absl::StatusOr<gguf::TokenizerData> ThroughGguf(const gguf::TokenizerData& data,
                                                       const std::string& path) {
  gguf::GgufWriter writer;
  gguf::WriteTokenizerData(data, writer);
  absl::Status written = writer.Write(path);
  if (!written.ok()) return written;
  absl::StatusOr<std::unique_ptr<gguf::GgufFile>> file = gguf::GgufFile::Open(path);
  if (!file.ok()) return file.status();
  return gguf::ReadTokenizerData(**file);
}

inline std::vector<nlohmann::json> ReadJsonl(const std::string& path) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  }
  return rows;
}

}  // namespace jllm::testing_qwen3

// Skips the test when the Qwen3 tokenizer files are not on this machine; fails when they are
// but cannot be imported or built.
#define JLLM_REQUIRE_QWEN3_TOKENIZER(var)                                                     \
  if (::jllm::testing_qwen3::Qwen3Dir().empty())                                              \
    GTEST_SKIP() << "Qwen3 tokenizer files not found in ../shared/qwen3 or .deps/qwen3-tokenizer"; \
  std::string var##_error;                                                                    \
  const ::jllm::runtime::Tokenizer* var = ::jllm::testing_qwen3::Qwen3Tokenizer(&var##_error); \
  ASSERT_NE(var, nullptr) << var##_error
