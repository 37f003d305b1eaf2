#include "fileio/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "fileio/file_kind.h"

namespace jllm::fileio {
namespace {

absl::StatusOr<std::string> ReadFd(int fd, const std::string& name, const std::string& what,
                                   uint64_t max_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(name, ": cannot read the ", what, ": ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISBLK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, " is ", FileKindName(st.st_mode), ", not a file; give the ", what, " as a file"));
  }
  std::string out;
  if (S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(name, ": the ", what, " is ", st.st_size,
                                                       " bytes, more than the ", max_bytes,
                                                       " this tool reads"));
    }
    out.reserve(static_cast<size_t>(st.st_size));
  }
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::DataLossError(
          absl::StrCat(name, ": reading the ", what, " failed: ", std::strerror(errno)));
    }
    if (n == 0) break;
    if (out.size() + static_cast<uint64_t>(n) > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          name, ": the ", what, " goes on past ", max_bytes, " bytes, more than this tool reads"));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path, const std::string& what,
                                     uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer. It is cleared at once so
  // that reads from a pipe with a writer wait for data as usual.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = absl::StrCat(path, ": cannot open the ", what, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  auto bytes = ReadFd(fd, path, what, max_bytes);
  ::close(fd);
  return bytes;
}

absl::StatusOr<std::string> ReadStdin(const std::string& what, uint64_t max_bytes) {
  return ReadFd(STDIN_FILENO, "standard input", what, max_bytes);
}

}  // namespace jllm::fileio
