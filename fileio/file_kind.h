// What a path names, said in words, and whether two paths name the same file — by identity
// (device and inode, following symbolic links), never by spelling.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace jllm::fileio {

// "a regular file", "a directory", "a FIFO", "a character device", "a block device",
// "a socket", "a symbolic link" or "a special file".
const char* FileKindName(mode_t mode);

struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};
FileIdentity IdentityOf(const struct stat& st);
// The identity of the file `path` names (symbolic links followed); nullopt if there is none.
std::optional<FileIdentity> IdentityOf(const std::string& path);

// OK if `path` names a regular file (symbolic links followed). Otherwise NotFound (missing) or
// FailedPrecondition saying what it is instead, e.g. "m.plan is a directory, not a regular
// file"; `what` names the role in the message ("plan file", "GGUF model"). Only stats: never
// opens, so a FIFO cannot block it.
absl::Status CheckRegularFile(const std::string& path, const std::string& what);

}  // namespace jllm::fileio
