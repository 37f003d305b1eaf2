// Runs a built tool as a user would and reports what happened: exit status or the signal that
// ended it, its standard output and error, and whether it had to be killed for running past a
// time limit (a hang). The one runner for every tool test: arguments are passed as a vector
// (no shell, no quoting), standard input is fed from a string, and standard output can be a
// pipe whose reader has already gone (to test EPIPE handling).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace jllm::testing {

struct ToolResult {
  int exit_code = -1;      // when it exited
  int signal = 0;          // when a signal ended it
  bool timed_out = false;  // killed after ToolRunOptions::timeout_seconds
  std::string out, err;

  bool exited() const { return signal == 0 && !timed_out && exit_code >= 0; }
  // A failure as the tools promise it: exited, non-zero, below 128 (not a signal's 128+n).
  bool failed_cleanly() const { return exited() && exit_code > 0 && exit_code < 128; }
  std::string Describe() const {
    std::string s = timed_out ? "timed out" : signal != 0 ? "killed by signal " + std::to_string(signal)
                                                          : "exit " + std::to_string(exit_code);
    return s + "\n--- stderr ---\n" + err.substr(0, 4000) + "\n--- stdout ---\n" + out.substr(0, 2000);
  }
};

struct ToolRunOptions {
  std::string stdin_data;
  double timeout_seconds = 120;
  bool stdout_reader_closed = false;  // stdout is a pipe nobody reads: writes get EPIPE
};

inline ToolResult RunTool(const std::string& binary, const std::vector<std::string>& args,
                          const ToolRunOptions& options = {}) {
  ToolResult r;
  std::vector<std::string> argv_s = {binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r.err = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  if (options.stdout_reader_closed) {
    // Closed before the child exists, so no write of its can ever find a reader.
    close(out[0]);
    out[0] = -1;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    signal(SIGPIPE, SIG_DFL);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Feed stdin and drain stdout/stderr together, so neither side blocks on a full pipe.
  size_t fed = 0;
  int in_fd = in[1];
  if (options.stdin_data.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(options.timeout_seconds * 1000));
  // Writing to a child that has closed its stdin must not kill the test.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  int fds[2] = {out[0], err[0]};
  std::string* sinks[2] = {&r.out, &r.err};
  while (fds[0] >= 0 || fds[1] >= 0 || in_fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      r.timed_out = true;
      break;
    }
    pollfd p[3];
    int n = 0, which[3];
    for (int i = 0; i < 2; ++i) {
      if (fds[i] >= 0) { p[n] = {fds[i], POLLIN, 0}; which[n++] = i; }
    }
    if (in_fd >= 0) { p[n] = {in_fd, POLLOUT, 0}; which[n++] = 2; }
    if (poll(p, n, static_cast<int>(std::min<int64_t>(left, 1000))) < 0 && errno != EINTR) break;
    for (int k = 0; k < n; ++k) {
      if (p[k].revents == 0) continue;
      if (which[k] == 2) {
        const ssize_t w = write(in_fd, options.stdin_data.data() + fed, options.stdin_data.size() - fed);
        if (w > 0) fed += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) fed = options.stdin_data.size();
        if (fed == options.stdin_data.size()) { close(in_fd); in_fd = -1; }
        continue;
      }
      char buf[65536];
      const ssize_t got = read(fds[which[k]], buf, sizeof(buf));
      if (got > 0) {
        sinks[which[k]]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[which[k]]);
        fds[which[k]] = -1;
      }
    }
  }
  for (int fd : {fds[0], fds[1], in_fd}) {
    if (fd >= 0) close(fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  sigaction(SIGPIPE, &old, nullptr);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !r.timed_out) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace jllm::testing
