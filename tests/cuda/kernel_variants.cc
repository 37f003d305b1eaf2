#include "tests/cuda/kernel_variants.h"

#include <cstdlib>

namespace jllm::testing {

ScopedEnv::ScopedEnv(const std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& [name, value] : env) {
    setenv(name.c_str(), value.c_str(), 1);
    names_.push_back(name);
  }
}

ScopedEnv::~ScopedEnv() {
  for (const std::string& name : names_) unsetenv(name.c_str());
}

}  // namespace jllm::testing
