// One output file, written whole or not at all. Every writer of a user-named path (GGUF, plan,
// --dump-logits) goes through it:
//  - the bytes go to a unique temporary file in the target's own folder (mkstemp), which is
//    fsync'ed and renamed over the target: readers and concurrent writers never see a mix, the
//    last rename wins whole;
//  - a symbolic link is followed: its target is replaced, the link stays;
//  - a directory, FIFO, socket or device is refused (renaming over it would destroy it, writing
//    into it would not be atomic: a device node is never replaced);
//  - an output that is the same file as one of the inputs (same device and inode, whatever the
//    names) is refused before anything is written;
//  - the temporary file is removed on error, when the OutputFile is destroyed uncommitted, and
//    on SIGINT/SIGTERM/SIGHUP (temp_file_cleanup.h).
//
//   ASSIGN_OR_RETURN(auto out, OutputFile::Create(path, {model_path}));
//   RETURN_IF_ERROR(out->Write(bytes));
//   RETURN_IF_ERROR(out->Commit());
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace jllm::fileio {

class OutputFile {
 public:
  // Checks the target and creates the temporary file. Errors name `path` (and the input it
  // would overwrite) and say what to do instead.
  static absl::StatusOr<std::unique_ptr<OutputFile>> Create(
      const std::string& path, absl::Span<const std::string> inputs = {});
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  absl::Status Write(const void* data, uint64_t n);
  absl::Status Write(std::string_view bytes) { return Write(bytes.data(), bytes.size()); }
  // fsync, close, rename over the target. After an error the temporary file is gone and the
  // target untouched.
  absl::Status Commit();

  const std::string& path() const { return path_; }      // as given
  const std::string& target() const { return target_; }  // with symbolic links followed
  const std::string& temp_path() const { return temp_; }
  uint64_t bytes_written() const { return written_; }

 private:
  OutputFile() = default;
  void Discard();
  std::string path_, target_, temp_;
  int fd_ = -1;
  int cleanup_slot_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

// Create + Write + Commit.
absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                                 absl::Span<const std::string> inputs = {});

}  // namespace jllm::fileio
