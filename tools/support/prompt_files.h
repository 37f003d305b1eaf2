// Prompts that jllm-run reads from files: -f FILE (text; "-" is standard input, as llama-cli's
// -f) and --prompt-ids FILE (whitespace-separated token ids). Read through fileio::ReadFile, so
// a directory or a FIFO is a clear error, never an abort or a hang.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace jllm::tools {

// A prompt has at most this many bytes (far more than any context holds).
inline constexpr uint64_t kMaxPromptBytes = uint64_t{256} << 20;

// The text of `path` ("-": standard input). An empty file is an error naming it.
absl::StatusOr<std::string> ReadPromptText(const std::string& path);
// The ids in `path`; anything but whitespace-separated integers is an error naming the word.
absl::StatusOr<std::vector<int32_t>> ReadPromptIds(const std::string& path);

}  // namespace jllm::tools
