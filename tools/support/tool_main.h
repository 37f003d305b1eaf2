// The frame of every tool's main: how it starts, prints errors and exits.
//
//   int Main(int argc, char** argv) { ...; return jllm::tools::Fail(status); ... }
//   int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-x", argc, argv, Main); }
//
// RunTool ignores SIGPIPE, so that writing to a pipe whose reader has gone is an EPIPE error
// instead of a silent death, and after the tool's main flushes and checks standard output: a
// failed write, flush or close turns a successful exit into exit 1 with a message (output that
// was lost is never reported as success).
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace jllm::tools {

int RunTool(std::string_view name, int argc, char** argv, int (*main)(int, char**));

// The name RunTool was given ("jllm-run"), for messages.
std::string_view ToolName();

// "TOOL: message" on stderr, the whole message (a NUL or control byte in it is escaped, never
// cuts it short). Fail returns 1, the exit status of a tool error.
void PrintError(std::string_view message);
int Fail(const absl::Status& status);
int Fail(std::string_view message);
// The same for a command line that makes no sense (flags that exclude each other, a missing
// prompt): exit status 2.
int UsageError(std::string_view message);
// "TOOL: warning: message".
void Warn(std::string_view message);

// Writes to standard output; false once any write failed (the failure is reported at exit).
bool WriteStdout(std::string_view bytes);
// False if a write to standard output has failed so far (stdio or std::cout).
bool StdoutOk();

}  // namespace jllm::tools
