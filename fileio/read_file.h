// Reading a whole input file that a user named, with an error for everything that is not one:
// a directory is refused by name (std::ifstream would throw std::ios_base::failure on it, or
// read it as empty), a stream (pipe, FIFO, character device such as /dev/stdin) is read to
// its end but never past `max_bytes` (so /dev/zero is an error, not a hang), and a FIFO that no
// process writes reads as empty instead of blocking the open.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace jllm::fileio {

inline constexpr uint64_t kDefaultMaxReadBytes = uint64_t{1} << 30;

// `what` names the file's role in messages ("passes file", "prompt file").
absl::StatusOr<std::string> ReadFile(const std::string& path, const std::string& what,
                                     uint64_t max_bytes = kDefaultMaxReadBytes);
// The same for standard input (named "standard input" in messages).
absl::StatusOr<std::string> ReadStdin(const std::string& what,
                                      uint64_t max_bytes = kDefaultMaxReadBytes);

}  // namespace jllm::fileio
