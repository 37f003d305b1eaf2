// Temporary paths and whole-file reads and writes for tests.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace jllm::testing {

// A path in the test temp folder that no other test, and no other process running the same
// test (CTest runs tests in parallel processes), uses: pid, suite and test name, then `name`.
inline std::string TempPath(const std::string& name) {
  std::string base = "jllm_" + std::to_string(getpid()) + "_";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    base += std::string(info->test_suite_name()) + "_" + info->name() + "_";
  }
  return (std::filesystem::path(::testing::TempDir()) / (base + name)).string();
}

// The whole file; empty if it cannot be read (tests then fail on the contents).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  const std::string s = ReadFile(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

}  // namespace jllm::testing
