// The jllm-server binary as users run it: on a jllm-synth tiny plan (start, a bad plan, SIGTERM
// in the middle of a stream, a burst of sequential and concurrent clients with a client killed
// mid-stream and the resident memory watched), on the trained tiny-coder (streamed text ==
// whole response == jllm-run's greedy output), and driven by the official openai npm client.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/server_test_support.h"
#include "tests/support/temp_files.h"
#include "tests/support/test_data.h"
#include "tests/support/tool_runner.h"

namespace jllm::server {
namespace {

using ::testing::HasSubstr;
using ::jllm::testing::ReadFile;
using ::jllm::testing::RunTool;
using ToolRun = ::jllm::testing::ToolResult;
using namespace testing;  // NOLINT: the helpers of server_test_support.h

// A jllm-server child process on a free port (it says which on stderr).
class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& args, const std::string& log_path) : log_(log_path) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(JLLM_SERVER_PATH));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(JLLM_SERVER_PATH, argv.data());
      _exit(127);
    }
  }
  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // The port from "listening on http://127.0.0.1:PORT"; 0 if it never says.
  int Port() {
    constexpr std::string_view kListening = "listening on http://127.0.0.1:";
    Eventually([&] {
      const std::string log = ReadFile(log_);
      const size_t at = log.find(kListening);
      if (at != std::string::npos) port_ = std::atoi(log.c_str() + at + kListening.size());
      return port_ != 0 || HasExited();
    });
    return port_;
  }
  bool WaitHealthy() {
    if (Port() == 0) return false;
    auto c = Client();
    return Eventually([&] {
      auto r = c->Get("/health");
      return r && r->status == 200;
    });
  }
  // The exit code once it exits (-1: killed by a signal, or still running after 10 s).
  int WaitExit() {
    Eventually([&] { return HasExited(); });
    return exited_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  bool HasExited() {
    if (!exited_ && waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return exited_;
  }
  void Signal(int sig) { kill(pid_, sig); }
  // A client that waits as long as a sanitized build may take to generate.
  std::unique_ptr<httplib::Client> Client() {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", Port());
    c->set_read_timeout(300, 0);
    return c;
  }
  // Resident memory, from /proc/PID/status, in KiB.
  int64_t RssKib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
    }
    return -1;
  }
  std::string log() const { return ReadFile(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  int status_ = 0;
  bool exited_ = false;
};

class JllmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::jllm::testing::TempPath("dir");
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // jllm-synth --preset tiny, then jllm-compile: the plan's path.
  std::string TinyPlan() {
    const std::string gguf = dir_ + "/tiny.gguf", plan = dir_ + "/tiny.plan";
    const ToolRun synth = RunTool(JLLM_SYNTH_PATH, {"--preset", "tiny", "--type", "q8_0", "--seed", "3", "-o", gguf});
    EXPECT_EQ(synth.exit_code, 0) << synth.err;
    const ToolRun compile = RunTool(JLLM_COMPILE_PATH, {gguf, "-o", plan});
    EXPECT_EQ(compile.exit_code, 0) << compile.err;
    return plan;
  }
  std::unique_ptr<ServerProcess> Start(std::vector<std::string> args) {
    auto p = std::make_unique<ServerProcess>(args, dir_ + "/server.log");
    EXPECT_TRUE(p->WaitHealthy()) << p->log();
    return p;
  }

  std::string dir_;
};

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // several times slower: fewer requests and tokens
#else
constexpr bool kSanitized = false;
#endif

const std::string kHiGreedy = R"({"messages": [{"role": "user", "content": "Hi"}], "temperature": 0)";

TEST_F(JllmServerTest, ABadPlanIsReportedAndExitsNonZero) {
  ServerProcess p({dir_ + "/missing.plan", "--port", "0"}, dir_ + "/server.log");
  EXPECT_EQ(p.WaitExit(), 1);
  EXPECT_THAT(p.log(), HasSubstr("cannot load " + dir_ + "/missing.plan"));
}

// SIGTERM while a stream runs: the stream ends with an error event, the process exits 0.
// Command-line values out of range are refused before the server listens, naming the flag and
// the range (tools/support/flag_checks.h, as for every tool).
TEST_F(JllmServerTest, FlagsOutsideTheirRangeNameTheFlagAndTheRange) {
  const std::string plan = TinyPlan();
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--port", "70000"}, "--port: 70000 is out of range: give an integer in [0, 65535]"},
      {{"-c", "-1"}, "--ctx-size: -1 is out of range"},
      {{"-t", "-1"}, "--threads: -1 is out of range"},
      {{"-n", "-3"}, "--n-predict: -3 is out of range"},
      {{"--temp", "nan"}, "--temp: 'nan' is not a finite number"},
      {{"--top-p", "0"}, "--top-p: 0 is out of range: give a number in (0, 1]"},
      {{"--top-k", "-5"}, "--top-k: -5 is out of range"},
      {{"--repeat-penalty", "0"}, "--repeat-penalty: 0 is out of range"},
      {{"--presence-penalty", "-3"}, "--presence-penalty: -3 is out of range"},
      {{"--frequency-penalty", "inf"}, "--frequency-penalty: 'inf' is not a finite number"},
      {{"--seed", "-2"}, "--seed: -2 is out of range: give an integer >= -1"},
      {{"--host", ""}, "--host: must not be empty"},
      {{"--timeout", "0"}, "--timeout: 0 is out of range"},
      {{"--max-body-bytes", "0"}, "--max-body-bytes: 0 is out of range"},
  };
  ::jllm::testing::ToolRunOptions quick;
  quick.timeout_seconds = 30;  // a value accepted by mistake would start a server: a hang
  for (const auto& c : cases) {
    std::vector<std::string> args = {plan, "--port", "0"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const ToolRun r = RunTool(JLLM_SERVER_PATH, args, quick);
    EXPECT_TRUE(r.failed_cleanly()) << c.args[0] << ": " << r.Describe();
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args[0];
  }
}

TEST_F(JllmServerTest, SigtermDuringAStreamExitsCleanly) {
  auto server = Start({TinyPlan(), "--port", "0", "--alias", "tiny"});
  RawConnection conn(server->Port());
  ASSERT_TRUE(conn.Send(ChatPostRequest(kHiGreedy + R"(, "stream": true, "max_tokens": 100000})")));
  ASSERT_TRUE(conn.ReadUntil("\"content\":")) << conn.received();  // generating
  server->Signal(SIGTERM);
  EXPECT_TRUE(conn.ReadUntilClosed());
  EXPECT_THAT(conn.received(), HasSubstr("shutting_down"));
  EXPECT_EQ(server->WaitExit(), 0) << server->log();
  EXPECT_THAT(server->log(), HasSubstr("SIGTERM: stopping"));
}

// 200 requests in a row, then 4 clients at once (one waiting place) and a client killed in
// the middle of its stream: every request is answered (200, or 503 when the queue is full),
// /health still answers, and the resident memory does not grow with the request count.
TEST_F(JllmServerTest, BurstOfClientsWithStableMemory) {
  auto server = Start({TinyPlan(), "--port", "0", "--max-waiting", "1", "-n", "4"});
  auto client = server->Client();
  httplib::Client& c = *client;
  // The in-process HTTP test runs the full counts in every build; here they serve the RSS check.
  const int sequential = kSanitized ? 20 : 200, per_client = kSanitized ? 5 : 25;
  const auto request = [&](httplib::Client& client, int i) {
    return Post(client, "/v1/chat/completions", kHiGreedy + (i % 2 ? R"(, "stream": true})" : "}"));
  };
  for (int i = 0; i < 20; ++i) ASSERT_EQ(request(c, i).status, 200);  // warm-up
  const int64_t rss_warm = server->RssKib();
  ASSERT_GT(rss_warm, 0);
  for (int i = 0; i < sequential; ++i) {
    const HttpResult r = request(c, i);
    ASSERT_EQ(r.status, 200) << "request " << i << ": " << r.body;
    if (i % 2) {
      ASSERT_TRUE(ParseSse(r.body).done) << r.body;
    }
  }
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      auto mine = server->Client();
      for (int i = 0; i < per_client; ++i) {
        const HttpResult r = request(*mine, i + t);
        if (r.status == 200) {
          ok++;
        } else if (r.status == 503 && !r.retry_after.empty()) {
          busy++;
        } else {
          other++;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok + busy, 4 * per_client) << ok << " ok, " << busy << " refused, " << other << " other";
  EXPECT_GT(ok, 0);
  {
    RawConnection killed(server->Port());
    ASSERT_TRUE(killed.Send(ChatPostRequest(kHiGreedy + R"(, "stream": true, "max_tokens": 100000})")));
    ASSERT_TRUE(killed.ReadUntil("\"content\":"));
  }  // gone mid-stream
  EXPECT_EQ(Get(c, "/health").status, 200);
  EXPECT_EQ(request(c, 0).status, 200);  // the killed client's generation was cancelled
  const int64_t rss_end = server->RssKib();
#if defined(__SANITIZE_ADDRESS__)
  (void)rss_warm, (void)rss_end;  // AddressSanitizer's quarantine holds freed memory by design
#else
  RecordProperty("rss_growth_kib", static_cast<int>(rss_end - rss_warm));
  EXPECT_LT(rss_end - rss_warm, 8 * 1024) << "RSS " << rss_warm << " KiB after warm-up, " << rss_end
                                          << " KiB after 300 more requests";
#endif
  server->Signal(SIGINT);
  EXPECT_EQ(server->WaitExit(), 0) << server->log();
}

// Where the text matters: the trained tiny-coder answers the same greedy text through the
// server, streamed or not, as jllm-run prints for the same conversation and prompt.
TEST_F(JllmServerTest, TinyCoderMatchesJllmRun) {
  JLLM_REQUIRE_TINY_CODER();
  const std::string plan = dir_ + "/coder.plan";
  const ToolRun compile = RunTool(JLLM_COMPILE_PATH, {::jllm::testing::TinyCoderPath(), "-o", plan});
  ASSERT_EQ(compile.exit_code, 0) << compile.err;
  const std::string question = "Write a function that adds two numbers.";
  const std::string n = kSanitized ? "8" : "24";
  ::jllm::testing::ToolRunOptions with_question;
  with_question.stdin_data = question + "\n";
  const ToolRun chat_run =
      RunTool(JLLM_RUN_PATH, {plan, "--chat", "--no-think", "--temp", "0", "-n", n}, with_question);
  ASSERT_EQ(chat_run.exit_code, 0) << chat_run.err;
  const std::string prompt = "def fibonacci(n):";
  const ToolRun code_run =
      RunTool(JLLM_RUN_PATH, {plan, "-p", prompt, "--no-display-prompt", "--temp", "0", "-n", n});
  ASSERT_EQ(code_run.exit_code, 0) << code_run.err;

  auto server = Start({plan, "--port", "0"});
  auto client = server->Client();
  httplib::Client& c = *client;
  const std::string chat = R"({"messages": [{"role": "user", "content": ")" + question +
                           R"("}], "temperature": 0, "max_tokens": )" + n +
                           R"(, "chat_template_kwargs": {"enable_thinking": false})";
  const HttpResult whole = Post(c, "/v1/chat/completions", chat + "}");
  ASSERT_EQ(whole.status, 200) << whole.body;
  const std::string text = whole.json["choices"][0]["message"]["content"];
  EXPECT_EQ(whole.json["usage"]["completion_tokens"], std::stoi(n));
  EXPECT_EQ(text + "\n", chat_run.out);  // jllm-run ends the reply with a newline
  const StreamedChat streamed = Assemble(ParseSse(Post(c, "/v1/chat/completions", chat + R"(, "stream": true})").body));
  EXPECT_EQ(streamed.content, text);
  EXPECT_EQ(streamed.finish_reason, whole.json["choices"][0]["finish_reason"]);

  const std::string completion = R"({"prompt": ")" + prompt + R"(", "temperature": 0, "max_tokens": )" + n;
  const HttpResult code = Post(c, "/v1/completions", completion + "}");
  ASSERT_EQ(code.status, 200) << code.body;
  EXPECT_EQ(code.json["choices"][0]["text"].get<std::string>() + "\n", code_run.out);
  EXPECT_EQ(Assemble(ParseSse(Post(c, "/v1/completions", completion + R"(, "stream": true})").body)).content,
            code.json["choices"][0]["text"]);
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitExit(), 0);
}

// A real client we did not write: its parsing of our responses and streams is the check.
TEST_F(JllmServerTest, OfficialOpenAiClient) {
  const std::string package = ::jllm::testing::NpmOracleModules() + "/openai";
  JLLM_REQUIRE_TEST_DATA(::jllm::testing::NodeIsInstalled(), "node is not installed (scripts/setup.sh)");
  JLLM_REQUIRE_TEST_DATA(std::filesystem::exists(package + "/package.json"),
                         package << " is missing (scripts/setup.sh installs it)");
  auto server = Start({TinyPlan(), "--port", "0", "--api-key", "test-key", "--alias", "tiny"});
  const std::string script = std::string(JLLM_SOURCE_DIR) + "/tests/server/openai_client_check.js";
  const ToolRun r = RunTool("/usr/bin/env", {"node", script, package,
                                             "http://127.0.0.1:" + std::to_string(server->Port()) + "/v1",
                                             "test-key"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("openai-client-check: 13 ok, 0 failing")) << r.out << r.err;
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitExit(), 0);
}

}  // namespace
}  // namespace jllm::server
