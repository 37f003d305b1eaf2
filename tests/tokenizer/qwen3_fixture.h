// Shared helpers for the tests that use the real Qwen3 vocabulary: the imported TokenizerData and tokenizers built from it (once per test process), JSONL reading.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/gguf_writer.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/support/test_data.h"

namespace jllm::testing_qwen3 {

using ::jllm::testing::Qwen3TokenizerDir;

inline constexpr int64_t kQwen3VocabSize = 151936;
inline constexpr char kQwen3Missing[] =
    "Qwen3 tokenizer files not found in ../shared/qwen3 or .deps/qwen3-tokenizer (scripts/setup.sh "
    "fetches them)";

// Imported once per process; nullptr (with the reason in *error) if it cannot be.
inline const gguf::TokenizerData* Qwen3Data(std::string* error) {
  static std::string import_error;
  static const std::unique_ptr<gguf::TokenizerData> data = [] {
    const std::string dir = Qwen3TokenizerDir();
    if (dir.empty()) {
      import_error = kQwen3Missing;
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

// Skips the test when the Qwen3 tokenizer files are not on this machine (fails under
// JLLM_REQUIRE_ORACLES=1); fails when they are but cannot be imported or built.
#define JLLM_REQUIRE_QWEN3_TOKENIZER(var)                                                      \
  JLLM_REQUIRE_TEST_DATA(!::jllm::testing_qwen3::Qwen3TokenizerDir().empty(),                  \
                         ::jllm::testing_qwen3::kQwen3Missing);                                \
  std::string var##_error;                                                                    \
  const ::jllm::runtime::Tokenizer* var = ::jllm::testing_qwen3::Qwen3Tokenizer(&var##_error); \
  ASSERT_NE(var, nullptr) << var##_error
