#include "fileio/output_file.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "fileio/temp_file_cleanup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fileio/fileio_test_support.h"

namespace jllm::fileio {
namespace {

using ::testing::HasSubstr;
using testing::IsFifo;
using testing::ReadFile;
using testing::WriteFile;

class OutputFileTest : public testing::TempDirTest {};

TEST_F(OutputFileTest, WritesTheWholeFileAndLeavesNoTemporary) {
  const std::string out = Path("out.bin");
  WriteFile(out, "old contents");
  auto f = OutputFile::Create(out);
  ASSERT_TRUE(f.ok()) << f.status();
  // Until the commit the target is untouched and the temporary sits beside it.
  ASSERT_TRUE((*f)->Write("new ").ok());
  ASSERT_TRUE((*f)->Write("contents").ok());
  EXPECT_EQ(ReadFile(out), "old contents");
  EXPECT_EQ(std::filesystem::path((*f)->temp_path()).parent_path(), dir_);
  EXPECT_EQ(Names().size(), 2u);
  ASSERT_TRUE((*f)->Commit().ok());
  EXPECT_EQ(ReadFile(out), "new contents");
  EXPECT_EQ(Names(), std::set<std::string>({"out.bin"}));
  EXPECT_EQ(TempFileCleanup::RegisteredCount(), 0);
}

TEST_F(OutputFileTest, AnUncommittedFileLeavesTheTargetAndNoTemporary) {
  const std::string out = Path("out.bin");
  WriteFile(out, "keep me");
  {
    auto f = OutputFile::Create(out);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE((*f)->Write("half a file").ok());
  }
  EXPECT_EQ(ReadFile(out), "keep me");
  EXPECT_EQ(Names(), std::set<std::string>({"out.bin"}));
  EXPECT_EQ(TempFileCleanup::RegisteredCount(), 0);
}

TEST_F(OutputFileTest, RefusesAnInputByIdentityNotByName) {
  const std::string in = Path("model.gguf");
  WriteFile(in, "the model");
  ASSERT_EQ(link(in.c_str(), Path("hardlink.gguf").c_str()), 0);
  ASSERT_EQ(symlink("model.gguf", Path("symlink.gguf").c_str()), 0);
  const std::string spellings[] = {in, Path("hardlink.gguf"), Path("symlink.gguf"),
                                   dir_ + "/./model.gguf"};
  for (const std::string& out : spellings) {
    const std::string inputs[] = {in};
    absl::Status st = WriteFileAtomically(out, "a plan", inputs);
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << out;
    EXPECT_THAT(st.message(), HasSubstr("is the same file as the input " + in)) << out;
  }
  EXPECT_EQ(ReadFile(in), "the model");
  EXPECT_EQ(Names(), std::set<std::string>({"model.gguf", "hardlink.gguf", "symlink.gguf"}));
  // A different file of the same contents is not the input.
  WriteFile(Path("copy.gguf"), "the model");
  const std::string inputs[] = {in};
  EXPECT_TRUE(WriteFileAtomically(Path("copy.gguf"), "a plan", inputs).ok());
}

TEST_F(OutputFileTest, WritesThroughASymlinkToItsTarget) {
  std::filesystem::create_directories(Path("real"));
  WriteFile(Path("real/target.bin"), "old");
  ASSERT_EQ(symlink("real/target.bin", Path("link.bin").c_str()), 0);
  ASSERT_EQ(symlink("link.bin", Path("link2.bin").c_str()), 0);  // a chain
  ASSERT_TRUE(WriteFileAtomically(Path("link2.bin"), "new").ok());
  EXPECT_EQ(ReadFile(Path("real/target.bin")), "new");
  EXPECT_TRUE(std::filesystem::is_symlink(Path("link.bin")));
  EXPECT_TRUE(std::filesystem::is_symlink(Path("link2.bin")));
  EXPECT_EQ(std::filesystem::read_symlink(Path("link.bin")), "real/target.bin");
  // The temporary went into the target's folder and is gone.
  EXPECT_EQ(Names(), std::set<std::string>({"real", "link.bin", "link2.bin"}));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(Path("real")), {}), 1);
  // A dangling link creates its target.
  ASSERT_EQ(symlink("real/new.bin", Path("dangling.bin").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(Path("dangling.bin"), "created").ok());
  EXPECT_EQ(ReadFile(Path("real/new.bin")), "created");
  // A loop is an error, not a hang.
  ASSERT_EQ(symlink("loop.b", Path("loop.a").c_str()), 0);
  ASSERT_EQ(symlink("loop.a", Path("loop.b").c_str()), 0);
  EXPECT_THAT(WriteFileAtomically(Path("loop.a"), "x").message(), HasSubstr("symbolic links"));
}

TEST_F(OutputFileTest, NeverReplacesAFifoOrADirectory) {
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0644), 0);
  absl::Status st = WriteFileAtomically(Path("fifo"), "x");
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("is a FIFO, not a regular file"));
  EXPECT_TRUE(IsFifo(Path("fifo")));
  // Through a symlink too.
  ASSERT_EQ(symlink("fifo", Path("to_fifo").c_str()), 0);
  EXPECT_THAT(WriteFileAtomically(Path("to_fifo"), "x").message(), HasSubstr("a FIFO"));
  EXPECT_TRUE(IsFifo(Path("fifo")));

  std::filesystem::create_directories(Path("folder"));
  st = WriteFileAtomically(Path("folder"), "x");
  EXPECT_THAT(st.message(), HasSubstr("is a directory"));
  EXPECT_TRUE(std::filesystem::is_directory(Path("folder")));
  EXPECT_EQ(Names(), std::set<std::string>({"fifo", "to_fifo", "folder"}));

  EXPECT_THAT(WriteFileAtomically(Path("no/such/dir/x"), "x").message(),
              HasSubstr("cannot create a temporary file in"));
  EXPECT_FALSE(WriteFileAtomically("", "x").ok());
}

TEST_F(OutputFileTest, KeepsTheModeOfTheFileItReplaces) {
  const std::string out = Path("out.bin");
  WriteFile(out, "x");
  ASSERT_EQ(chmod(out.c_str(), 0640), 0);
  ASSERT_TRUE(WriteFileAtomically(out, "y").ok());
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

// Two writers of different contents on one path, many times over: after every round the file is
// exactly one of the two, never a mix (each writes its own temporary, the last rename wins).
TEST_F(OutputFileTest, ConcurrentWritersLeaveOneWholeFile) {
  const std::string out = Path("shared.bin");
  const std::string a(1 << 20, 'a'), b(1 << 20, 'b');
  for (int round = 0; round < 50; ++round) {
    absl::Status sa, sb;
    std::thread ta([&] { sa = WriteFileAtomically(out, a); });
    std::thread tb([&] { sb = WriteFileAtomically(out, b); });
    ta.join();
    tb.join();
    ASSERT_TRUE(sa.ok()) << sa;
    ASSERT_TRUE(sb.ok()) << sb;
    const std::string got = ReadFile(out);
    ASSERT_TRUE(got == a || got == b) << "round " << round << ": a mixed file of " << got.size() << " bytes";
    ASSERT_EQ(Names(), std::set<std::string>({"shared.bin"})) << "round " << round;
  }
}

// A SIGTERM while the file is being written removes the temporary (the registry's handler) and
// still ends the process by that signal; the target stays as it was.
TEST_F(OutputFileTest, ASignalRemovesTheTemporaryFile) {
  for (int sig : {SIGTERM, SIGINT}) {
    const std::string out = Path("out.bin");
    WriteFile(out, "before");
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      signal(SIGINT, SIG_DFL);  // a test runner may ignore it
      auto f = OutputFile::Create(out);
      if (!f.ok() || !(*f)->Write(std::string(1 << 16, 'x')).ok()) _exit(3);
      (void)!write(ready[1], "r", 1);
      while (true) pause();
    }
    close(ready[1]);
    char c;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    close(ready[0]);
    EXPECT_EQ(Names().size(), 2u);  // the target and the temporary
    ASSERT_EQ(kill(pid, sig), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    EXPECT_EQ(Names(), std::set<std::string>({"out.bin"}));
    EXPECT_EQ(ReadFile(out), "before");
  }
}

TEST_F(OutputFileTest, SignalHandlersLeaveAnIgnoredSignalIgnored) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGHUP, SIG_IGN);  // as nohup does
    auto f = OutputFile::Create(Path("out.bin"));
    if (!f.ok()) _exit(3);
    raise(SIGHUP);            // must not kill: still ignored
    _exit((*f)->Commit().ok() ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace jllm::fileio
