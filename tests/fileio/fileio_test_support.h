// A fresh directory per test, and small file helpers for the fileio tests.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/temp_files.h"

namespace jllm::fileio::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "jllm_fileio_" + info->test_suite_name() + "_" + info->name() +
           "_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // The names in the directory: a leftover temporary file shows up here.
  std::set<std::string> Names() const {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) names.insert(e.path().filename());
    return names;
  }
  std::string dir_;
};

using ::jllm::testing::ReadFile;
using ::jllm::testing::WriteFile;

inline bool IsFifo(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

}  // namespace jllm::fileio::testing
