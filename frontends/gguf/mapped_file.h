// A read-only memory mapping of a whole file. Pages are read on first touch, so mapping a
// multi-gigabyte GGUF costs nothing until its bytes are used.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace jllm::gguf {

class MappedFile {
 public:
  // NotFound if `path` does not exist; other errors name the path and the system error.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }

  // Tells the kernel that bytes [offset, offset + size) are not needed any more: their mapped
  // pages and their page-cache copy may go (DESIGN.md, Jetson: after a device backend copied a
  // tensor, the file pages must not stay resident as a second copy). Reading them again later
  // still works; it just goes back to the disk.
  void DropPages(uint64_t offset, uint64_t size) const;

 private:
  MappedFile() = default;
  std::string path_;
  int fd_ = -1;  // kept open for posix_fadvise
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace jllm::gguf
