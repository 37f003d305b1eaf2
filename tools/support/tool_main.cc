#include "tools/support/tool_main.h"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace jllm::tools {
namespace {

std::string_view g_name = "jllm";
bool g_stdout_failed = false;
int g_stdout_errno = 0;  // why the first write to standard output failed, if known

void StdoutFailed(int err) {
  if (!g_stdout_failed) g_stdout_errno = err;
  g_stdout_failed = true;
}

// Control bytes as \xNN (tab and newline kept), everything else as is, so that a message never
// stops at a NUL and never moves the cursor about.
std::string Printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char buf[8];
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

void WriteStderr(std::string_view prefix, std::string_view message) {
  const std::string line = std::string(g_name) + ": " + std::string(prefix) + Printable(message) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

std::string_view ToolName() { return g_name; }

void PrintError(std::string_view message) { WriteStderr("", message); }

int Fail(const absl::Status& status) {
  PrintError(std::string(status.message()));
  return 1;
}

int Fail(std::string_view message) {
  PrintError(message);
  return 1;
}

int UsageError(std::string_view message) {
  PrintError(message);
  return 2;
}

void Warn(std::string_view message) { WriteStderr("warning: ", message); }

bool WriteStdout(std::string_view bytes) {
  if (bytes.empty()) return StdoutOk();
  errno = 0;
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() ||
      std::fflush(stdout) != 0) {
    StdoutFailed(errno);
    return false;
  }
  return StdoutOk();
}

bool StdoutOk() { return !g_stdout_failed && !std::ferror(stdout) && !std::cout.bad(); }

int RunTool(std::string_view name, int argc, char** argv, int (*main)(int, char**)) {
  g_name = name;
  ::signal(SIGPIPE, SIG_IGN);
  int rc = main(argc, argv);
  // The first failing flush says why (EPIPE, ENOSPC); a failure seen earlier inside printf
  // left only the stream's error flag, so the reason may be unknown.
  errno = 0;
  std::cout.flush();
  int err = errno;
  if (std::fflush(stdout) != 0 && err == 0) err = errno;
  const bool ok = StdoutOk();
  if (!ok) StdoutFailed(err);
  errno = 0;
  const bool closed = std::fclose(stdout) == 0;
  if (!closed) StdoutFailed(errno);
  if ((!ok || !closed) && rc == 0) {
    PrintError(std::string("writing standard output failed") +
               (g_stdout_errno != 0 ? std::string(": ") + std::strerror(g_stdout_errno) : "") +
               "; the output is incomplete");
    rc = 1;
  }
  return rc;
}

}  // namespace jllm::tools
