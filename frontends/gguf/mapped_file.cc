#include "frontends/gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "fileio/file_kind.h"

namespace jllm::gguf {

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot stat: ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is ", fileio::FileKindName(st.st_mode),
        ", not a regular file; a model or checkpoint must be a regular file"));
  }
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      f->fd_ = -1;
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": cannot map ", f->size_, " bytes: ", std::strerror(err)));
    }
    f->data_ = static_cast<const uint8_t*>(p);
  }
  f->fd_ = fd;
  return f;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::DropPages(uint64_t offset, uint64_t size) const {
  if (offset >= size_ || size == 0) return;
  size = std::min(size, size_ - offset);
  // madvise wants a page-aligned start; widening to whole pages only drops pages that the
  // range touches, which is what the caller asked for.
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = offset / page * page;
  ::madvise(const_cast<uint8_t*>(data_) + begin, offset + size - begin, MADV_DONTNEED);
  if (fd_ >= 0) {
    ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(size),
                    POSIX_FADV_DONTNEED);
  }
}

}  // namespace jllm::gguf
