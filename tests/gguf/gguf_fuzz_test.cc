// Random mutations of a valid file (fixed seed): every one must parse or return an error, never
// crash. Runs under ASan+UBSan in CI; files are parsed from exact-size heap buffers so that any
// read past the end is caught.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "frontends/gguf/gguf_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/raw_gguf.h"

namespace jllm::gguf {
namespace {

// Values that tend to hit edge cases when written over a length, count or offset.
constexpr uint64_t kInteresting[] = {0, 1, 2, 3, 4, 31, 32, 33, 63, 64, 255, 0x7FFFFFFF,
                                     0x80000000, 0xFFFFFFFF, 0x7FFFFFFFFFFFFFFF,
                                     0x8000000000000000, 0xFFFFFFFFFFFFFFFF};

void Mutate(std::vector<uint8_t>& b, std::mt19937_64& rng) {
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  switch (pick(5)) {
    case 0:  // flip one bit
      b[pick(b.size())] ^= static_cast<uint8_t>(1u << pick(8));
      break;
    case 1:  // random byte
      b[pick(b.size())] = static_cast<uint8_t>(pick(256));
      break;
    case 2: {  // an interesting value over 1, 2, 4 or 8 bytes
      const uint64_t v = kInteresting[pick(std::size(kInteresting))];
      const size_t width = size_t{1} << pick(4);
      const size_t at = pick(b.size());
      for (size_t i = 0; i < width && at + i < b.size(); ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
      break;
    }
    case 3:  // truncate
      b.resize(pick(b.size()) + 1);
      break;
    case 4: {  // duplicate a chunk elsewhere (shifts everything after it)
      const size_t from = pick(b.size()), len = pick(16) + 1;
      std::vector<uint8_t> chunk(b.begin() + from, b.begin() + std::min(b.size(), from + len));
      b.insert(b.begin() + pick(b.size()), chunk.begin(), chunk.end());
      break;
    }
  }
}

// What must hold of any file the parser accepted.
void CheckInvariants(const GgufFile& f) {
  const uint32_t align = f.alignment();
  ASSERT_TRUE(align != 0 && (align & (align - 1)) == 0);
  ASSERT_EQ(f.data_offset() % align, 0u);
  uint64_t expected = 0;
  for (const TensorInfo& t : f.tensors()) {
    ASSERT_LE(t.n_dims, 4u);
    ASSERT_LT(t.name.size(), 64u);
    ASSERT_EQ(t.offset, expected);
    expected += (t.nbytes + align - 1) / align * align;
    auto data = f.TensorData(t);
    ASSERT_EQ(data.size(), t.nbytes);
    if (t.nbytes > 0) {
      ASSERT_GE(data.data(), f.bytes().data());
      ASSERT_LE(data.data() + data.size(), f.bytes().data() + f.bytes().size());
      // Touch the first and last byte: ASan would flag any out-of-bounds span.
      volatile uint8_t sink = data.front() ^ data.back();
      (void)sink;
    }
  }
}

TEST(GgufFuzz, RandomMutationsParseOrFailCleanly) {
  const std::vector<uint8_t> valid = testing::SmallValidFile().bytes;
  std::mt19937_64 rng(20240531);
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    std::vector<uint8_t> b = valid;
    const int n_mutations = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < n_mutations && !b.empty(); ++m) Mutate(b, rng);
    auto f = GgufFile::OpenBuffer("fuzz.gguf", std::move(b));
    if (f.ok()) {
      ++accepted;
      CheckInvariants(**f);
      if (::testing::Test::HasFatalFailure()) FAIL() << "invariant broken at iteration " << iter;
    } else {
      ++rejected;
      ASSERT_THAT(std::string(f.status().message()), ::testing::StartsWith("fuzz.gguf: "))
          << "iteration " << iter;
    }
  }
  RecordProperty("accepted", accepted);
  RecordProperty("rejected", rejected);
  // Both outcomes must occur, or the mutations are not exercising the parser.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace jllm::gguf
