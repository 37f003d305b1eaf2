#include "fileio/temp_file_cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace jllm::fileio {
namespace {

enum SlotState : int { kFree = 0, kFilling = 1, kActive = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[TempFileCleanup::kMaxPathBytes];
};

Slot g_slots[TempFileCleanup::kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void UnlinkAndReraise(int sig) {
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) == kActive) ::unlink(s.path);
  }
  // The signal is blocked while its handler runs: with the default action back in place it is
  // delivered on return, so the process ends as that signal says (exit status included).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void InstallHandlers() {
  for (int sig : kSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    // Leave alone a signal the program ignores (nohup) or handles itself.
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = &UnlinkAndReraise;
    sigemptyset(&sa.sa_mask);
    for (int other : kSignals) sigaddset(&sa.sa_mask, other);  // one cleanup at a time
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

absl::Status TempFileCleanup::Register(const std::string& path, int* slot) {
  static std::once_flag once;
  std::call_once(once, InstallHandlers);
  if (path.size() >= static_cast<size_t>(kMaxPathBytes) || path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("temporary file name of ", path.size(),
                                                   " bytes is too long or has a NUL byte"));
  }
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acq_rel)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(kActive, std::memory_order_release);
      *slot = i;
      return absl::OkStatus();
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("more than ", kSlots, " output files are being written at once"));
}

void TempFileCleanup::Unregister(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(kFree, std::memory_order_release);
}

int TempFileCleanup::RegisteredCount() {
  int n = 0;
  for (const Slot& s : g_slots) n += s.state.load(std::memory_order_acquire) == kActive;
  return n;
}

}  // namespace jllm::fileio
