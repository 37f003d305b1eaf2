// Creates a backend by the name users give on the command line (--backend): "cpu" (the
// reference backend), "cuda", or "auto" (the best one this build and machine can run).
// A stand-in until the CUDA backend lands with its own factory: "cuda" is refused with a
// message, and "auto" means cpu.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/backend.h"

namespace jllm::runtime {

inline constexpr std::string_view kBackendNames[] = {"auto", "cpu", "cuda"};

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view name);

}  // namespace jllm::runtime
