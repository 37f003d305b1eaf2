// Temporary files that must not outlive an interrupted process: a registry the SIGINT, SIGTERM
// and SIGHUP handlers walk to unlink them before the signal takes its default course (a killed
// `jllm-synth --preset 8b` must not leave gigabytes behind).
//
// The handlers are installed on the first registration, and only for signals whose disposition
// is still the default (a signal the program ignores, as under nohup, stays ignored). The
// registry is a fixed table of paths: registering takes no lock and no allocation inside the
// handler, which only reads it and calls unlink(), both async-signal-safe.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace jllm::fileio {

class TempFileCleanup {
 public:
  // Registers `path` for removal on a signal. The path must be shorter than kMaxPathBytes and
  // the table must have a free slot (kSlots); otherwise an error (the caller should then not
  // create the temporary file).
  static absl::Status Register(const std::string& path, int* slot);
  // Forgets the slot (after the file was renamed into place or removed).
  static void Unregister(int slot);
  // How many paths are registered now (for tests).
  static int RegisteredCount();

  static constexpr int kSlots = 64;
  static constexpr int kMaxPathBytes = 4096;
};

}  // namespace jllm::fileio
