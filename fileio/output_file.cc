#include "fileio/output_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fileio/file_kind.h"
#include "fileio/temp_file_cleanup.h"

namespace jllm::fileio {
namespace {

constexpr int kMaxSymlinkHops = 40;  // Linux's own limit (ELOOP)

std::string Errno(int err) { return std::strerror(err); }

std::string DirName(const std::string& p) {
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string BaseName(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The path that writing `path` must replace: symbolic links of the last component followed
// (the folders on the way are resolved by rename itself). `st` gets the target's status, or
// nullopt when it does not exist yet.
absl::StatusOr<std::string> FollowLinks(const std::string& path, std::optional<struct stat>* st) {
  std::string p = path;
  for (int hop = 0; hop <= kMaxSymlinkHops; ++hop) {
    struct stat ls {};
    if (::lstat(p.c_str(), &ls) != 0) {
      if (errno == ENOENT) {
        st->reset();
        return p;
      }
      return absl::PermissionDeniedError(absl::StrCat(path, ": cannot check it: ", Errno(errno)));
    }
    if (!S_ISLNK(ls.st_mode)) {
      *st = ls;
      return p;
    }
    std::vector<char> buf(static_cast<size_t>(ls.st_size > 0 ? ls.st_size : 4096) + 1);
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n < 0 || static_cast<size_t>(n) >= buf.size()) {
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot read the symbolic link ", p, ": ", Errno(errno)));
    }
    const std::string link(buf.data(), static_cast<size_t>(n));
    p = link.starts_with('/') ? link : DirName(p) + "/" + link;
  }
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": more than ", kMaxSymlinkHops, " symbolic links in a row (a loop?)"));
}

// The mode a new file gets: 0666 less the umask, read without changing it (umask() would race
// with other threads creating files).
mode_t NewFileMode() {
  mode_t mask = 022;
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "Umask:") {
      unsigned m = 0;
      if (status >> std::oct >> m) mask = static_cast<mode_t>(m);
      break;
    }
  }
  return 0666 & ~mask;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Create(
    const std::string& path, absl::Span<const std::string> inputs) {
  if (path.empty()) return absl::InvalidArgumentError("the output path is empty");
  std::optional<struct stat> st;
  auto target = FollowLinks(path, &st);
  if (!target.ok()) return target.status();
  const std::string shown =
      *target == path ? path : absl::StrCat(path, " (a symbolic link to ", *target, ")");
  if (st && S_ISDIR(st->st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(shown, " is a directory; give a file path to write"));
  }
  if (st && !S_ISREG(st->st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        shown, " is ", FileKindName(st->st_mode),
        ", not a regular file; jllm writes its outputs only as regular files (a temporary file "
        "renamed into place), so it will not replace or write into it: give a file path"));
  }
  if (st) {
    const FileIdentity out_id = IdentityOf(*st);
    for (const std::string& in : inputs) {
      if (in.empty()) continue;
      if (IdentityOf(in) == out_id) {
        return absl::FailedPreconditionError(absl::StrCat(
            shown, " is the same file as the input ", in,
            "; writing it would destroy that input: choose another output path"));
      }
    }
  }

  std::unique_ptr<OutputFile> f(new OutputFile());
  f->path_ = path;
  f->target_ = *target;
  std::string tmpl = absl::StrCat(DirName(*target), "/.", BaseName(*target), ".tmp.XXXXXX");
  // No signal between creating the temporary file and registering it for cleanup.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  const int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  const int err = errno;
  absl::Status registered = absl::OkStatus();
  if (fd >= 0) {
    registered = TempFileCleanup::Register(tmpl, &f->cleanup_slot_);
    if (!registered.ok()) {
      ::close(fd);
      ::unlink(tmpl.c_str());
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        shown, ": cannot create a temporary file in ", DirName(*target), ": ", Errno(err)));
  }
  if (!registered.ok()) return registered;
  f->fd_ = fd;
  f->temp_ = tmpl;
  // Replacing a file keeps its permissions; a new one gets the usual 0666 less the umask.
  ::fchmod(fd, st ? (st->st_mode & 07777) : NewFileMode());
  return f;
}

OutputFile::~OutputFile() { Discard(); }

void OutputFile::Discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  TempFileCleanup::Unregister(cleanup_slot_);
  cleanup_slot_ = -1;
}

absl::Status OutputFile::Write(const void* data, uint64_t n) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": written after Commit"));
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : EIO;
      Discard();
      return absl::ResourceExhaustedError(absl::StrCat(
          path_, ": writing failed after ", written_, " bytes: ", Errno(err),
          err == ENOSPC ? " (the disk is full; nothing was replaced)" : "; nothing was replaced"));
    }
    p += w;
    n -= static_cast<uint64_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  return absl::OkStatus();
}

absl::Status OutputFile::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": committed twice"));
  if (::fsync(fd_) != 0) {
    const int err = errno;
    Discard();
    return absl::DataLossError(absl::StrCat(path_, ": fsync failed: ", Errno(err)));
  }
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    const int err = errno;
    Discard();
    return absl::DataLossError(absl::StrCat(path_, ": close failed: ", Errno(err)));
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    Discard();
    return absl::PermissionDeniedError(
        absl::StrCat(path_, ": cannot rename ", temp_, " over ", target_, ": ", Errno(err)));
  }
  committed_ = true;
  TempFileCleanup::Unregister(cleanup_slot_);
  cleanup_slot_ = -1;
  // Make the rename itself durable; a failure here leaves the new file in place regardless.
  const int dir = ::open(DirName(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                                 absl::Span<const std::string> inputs) {
  auto out = OutputFile::Create(path, inputs);
  if (!out.ok()) return out.status();
  if (absl::Status st = (*out)->Write(bytes); !st.ok()) return st;
  return (*out)->Commit();
}

}  // namespace jllm::fileio
