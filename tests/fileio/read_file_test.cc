#include "fileio/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include "fileio/file_kind.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fileio/fileio_test_support.h"

namespace jllm::fileio {
namespace {

using ::testing::HasSubstr;
using testing::WriteFile;

class ReadFileTest : public testing::TempDirTest {};

TEST_F(ReadFileTest, ReadsARegularFileWhole) {
  std::string bytes(100000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  WriteFile(Path("f"), bytes);
  auto got = ReadFile(Path("f"), "prompt file");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, bytes);
}

TEST_F(ReadFileTest, RefusesADirectoryByName) {
  std::filesystem::create_directories(Path("d"));
  auto got = ReadFile(Path("d"), "passes file");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(), HasSubstr(Path("d") + " is a directory"));
  EXPECT_THAT(got.status().message(), HasSubstr("passes file"));
  EXPECT_EQ(ReadFile(Path("missing"), "x").status().code(), absl::StatusCode::kNotFound);
}

// A FIFO nobody writes: the open does not wait for a writer, and it reads as empty.
TEST_F(ReadFileTest, AFifoWithoutAWriterReadsAsEmpty) {
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0644), 0);
  auto got = ReadFile(Path("fifo"), "prompt file");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "");
}

// A stream (a pipe, read through its /proc/self/fd name) is read to its end, and never past
// the limit: /dev/zero would be an error, not a hang.
TEST_F(ReadFileTest, AStreamIsReadToItsEndButNotPastTheLimit) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  std::thread w2([&] {
    const std::string chunk(4096, 'y');
    for (int i = 0; i < 4; ++i) (void)!write(p[1], chunk.data(), chunk.size());
    close(p[1]);
  });
  auto got = ReadFile("/proc/self/fd/" + std::to_string(p[0]), "prompt file", 1 << 20);
  w2.join();
  close(p[0]);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 4u * 4096);

  // The reader stops at the limit and closes its end while the writer may still be writing:
  // the writer must see EPIPE, not die of SIGPIPE (which would end the whole test process).
  struct IgnoreSigpipe {
    void (*old)(int) = std::signal(SIGPIPE, SIG_IGN);
    ~IgnoreSigpipe() { std::signal(SIGPIPE, old); }
  } ignore_sigpipe;
  int q[2];
  ASSERT_EQ(pipe(q), 0);
  std::thread w3([&] {
    const std::string chunk(4096, 'y');
    for (int i = 0; i < 4; ++i) {
      if (write(q[1], chunk.data(), chunk.size()) < 0) break;
    }
    close(q[1]);
  });
  auto over = ReadFile("/proc/self/fd/" + std::to_string(q[0]), "prompt file", 5000);
  close(q[0]);
  w3.join();
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("5000"));
}

TEST_F(ReadFileTest, CheckRegularFileSaysWhatAPathIs) {
  std::filesystem::create_directories(Path("d"));
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0644), 0);
  WriteFile(Path("f"), "x");
  EXPECT_TRUE(CheckRegularFile(Path("f"), "plan file").ok());
  EXPECT_THAT(CheckRegularFile(Path("d"), "plan file").message(),
              HasSubstr("is a directory, not a regular file; give the plan file"));
  EXPECT_THAT(CheckRegularFile(Path("fifo"), "plan file").message(), HasSubstr("is a FIFO"));
  EXPECT_EQ(CheckRegularFile(Path("none"), "plan file").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(IdentityOf(Path("f")), IdentityOf(dir_ + "/./f"));
  EXPECT_NE(IdentityOf(Path("f")), IdentityOf(Path("d")));
  EXPECT_FALSE(IdentityOf(Path("none")).has_value());
}

}  // namespace
}  // namespace jllm::fileio
