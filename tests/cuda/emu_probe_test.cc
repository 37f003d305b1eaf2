// The device probes (exec/device_probes.h) on the CPU emulation: what their kernels read is
// checked here (timings mean nothing on the emulation; the GPU machine runs jllm-bench --probe).
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cuda/exec/device_probes.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cuda/emu/emu_device.h"

namespace jllm::cuda::testing {
namespace {

using ::testing::HasSubstr;

// A buffer of distinct 32-bit words on the device, for a kernel's checksum to depend on each.
std::vector<uint32_t> FillDistinct(emu::EmuDevice& dev, void* p, int64_t bytes) {
  std::vector<uint32_t> words(static_cast<size_t>(bytes / 4));
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(i * 2654435761u + 12345u);
  EXPECT_TRUE(dev.CopyToDevice(p, words.data(), bytes).ok());
  return words;
}

absl::StatusOr<KernelHandle> LoadProbeKernel(emu::EmuDevice& dev) {
  KernelSpec spec;
  spec.label = spec.kernel = "l2_prefetch_probe";
  spec.source = "l2_prefetch_probe.cu";
  spec.threads = 256;
  return dev.LoadKernel(spec, "");
}

// The XOR of the CTAs' words after one launch of the probe kernel with `form`.
uint32_t ProbeChecksum(emu::EmuDevice& dev, const void* src, int64_t bytes, int form, unsigned ctas) {
  auto k = LoadProbeKernel(dev);
  EXPECT_TRUE(k.ok()) << k.status();
  auto out = dev.Allocate(4 * ctas, "out");
  EXPECT_TRUE(out.ok());
  const L2PrefetchProbeArgs args{src, static_cast<unsigned long long>(bytes), 4096, form, 0, static_cast<unsigned*>(*out)};
  EXPECT_TRUE(dev.Launch(*k, {ctas, 1, 1}, {256, 1, 1}, 0, &args, sizeof(args)).ok());
  std::vector<uint32_t> words(ctas);
  EXPECT_TRUE(dev.CopyToHost(words.data(), *out, 4 * ctas).ok());
  dev.Free(*out);
  uint32_t x = 0;
  for (uint32_t w : words) x ^= w;
  return x;
}

// The warm reference reads every word once (a word read twice or skipped changes the XOR), also
// where the grid's threads do not divide the buffer.
TEST(EmuDeviceProbes, L2ProbeLoadReadsEveryWordOnce) {
  emu::EmuDevice dev;
  const int64_t bytes = 256 * 1000;  // 16,000 words of 16 bytes for 768 threads
  auto src = dev.Allocate(bytes, "src");
  ASSERT_TRUE(src.ok());
  const std::vector<uint32_t> words = FillDistinct(dev, *src, bytes);
  uint32_t want = 0;
  for (uint32_t w : words) want ^= w;
  EXPECT_EQ(ProbeChecksum(dev, *src, bytes, kL2PrefetchLoad, 3), want);
}

// The L2::256B form reads the first word of every 256-byte block, each once.
TEST(EmuDeviceProbes, L2ProbeLoad256ReadsOneWordPerBlock) {
  emu::EmuDevice dev;
  const int64_t bytes = 256 * 1000;
  auto src = dev.Allocate(bytes, "src");
  ASSERT_TRUE(src.ok());
  const std::vector<uint32_t> words = FillDistinct(dev, *src, bytes);
  uint32_t want = 0;
  for (size_t i = 0; i < words.size(); i += 64) want ^= words[i];
  EXPECT_EQ(ProbeChecksum(dev, *src, bytes, kL2PrefetchLoad256, 3), want);
}

// Every form and size of the probe runs (the emulated prefetches touch each range's ends, so a
// range past the buffer shows under the sanitizers) and the table has a row for each, with the
// cold and warm rows first for every size.
TEST(EmuDeviceProbes, L2ProbeTableHasEveryFormForEverySize) {
  emu::EmuDevice dev;
  L2ProbeOptions o;
  o.sizes = {256 * 100, 1 << 20};  // the first one smaller than one bulk chunk per CTA
  o.flush_bytes = 1 << 20;
  o.reps = 1;
  o.settle_ns = 1000;
  auto table = MeasureL2Prefetch(dev, o);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->columns.size(), 7u);
  const size_t forms = 5 + 3;  // none, load, two line prefetches, L2::256B loads; 3 bulk chunks
  ASSERT_EQ(table->rows.size(), 2 * forms);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_THAT(table->rows[s * forms].label, HasSubstr("cold"));
    EXPECT_THAT(table->rows[s * forms + 1].label, HasSubstr("warm"));
    EXPECT_THAT(table->rows[s * forms + forms - 1].label, HasSubstr("1024 KiB"));
    for (size_t f = 0; f < forms; ++f) {
      ASSERT_EQ(table->rows[s * forms + f].values.size(), 6u);
      EXPECT_DOUBLE_EQ(table->rows[s * forms + f].values[0], static_cast<double>(o.sizes[s]) / (1 << 20));
    }
  }
}

// The settled timing's kernel stays open for spin_ns (a lower bound on its time, whatever the
// machine's speed), asking nothing of L2 for a form outside L2PrefetchForm.
TEST(EmuDeviceProbes, L2ProbeKernelHoldsOpenForItsSpin) {
  emu::EmuDevice dev;
  auto k = LoadProbeKernel(dev);
  ASSERT_TRUE(k.ok()) << k.status();
  auto out = dev.Allocate(8, "out");
  ASSERT_TRUE(out.ok());
  const L2PrefetchProbeArgs args{nullptr, 0, 0, -1, 30'000'000, static_cast<unsigned*>(*out)};
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(dev.Launch(*k, {2, 1, 1}, {256, 1, 1}, 0, &args, sizeof(args)).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
  dev.Free(*out);
}

TEST(EmuDeviceProbes, L2ProbeRejectsSizesThatAreNotWholeBlocks) {
  emu::EmuDevice dev;
  L2ProbeOptions o;
  o.sizes = {1000};
  auto table = MeasureL2Prefetch(dev, o);
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("multiples of 256"));
}

}  // namespace
}  // namespace jllm::cuda::testing
