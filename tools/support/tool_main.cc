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
int g_stdout_errno = 0;  // the first error writing standard output

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
    if (g_stdout_errno == 0) g_stdout_errno = errno != 0 ? errno : EIO;
    return false;
  }
  return StdoutOk();
}

bool StdoutOk() { return g_stdout_errno == 0 && !std::ferror(stdout) && !std::cout.bad(); }

int RunTool(std::string_view name, int argc, char** argv, int (*main)(int, char**)) {
  g_name = name;
  ::signal(SIGPIPE, SIG_IGN);
  int rc = main(argc, argv);
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (g_stdout_errno == 0 && !flushed) g_stdout_errno = errno != 0 ? errno : EIO;
  const bool ok = StdoutOk();
  errno = 0;
  const bool closed = std::fclose(stdout) == 0;
  if (g_stdout_errno == 0 && !closed) g_stdout_errno = errno != 0 ? errno : EIO;
  if ((!ok || !closed) && rc == 0) {
    PrintError(std::string("writing standard output failed") +
               (g_stdout_errno != 0 ? std::string(": ") + std::strerror(g_stdout_errno) : "") +
               "; the output is incomplete");
    rc = 1;
  }
  return rc;
}

}  // namespace jllm::tools
