// The on-disk CUBIN cache: a second request is a hit with identical bytes, different constants
// or architectures get different entries, and a corrupt entry is recompiled, not loaded.
#include <filesystem>
#include <fstream>
#include <string>

#include "backends/cuda/nvrtc/cubin_cache.h"
#include "gtest/gtest.h"

namespace jllm::cuda {
namespace {

namespace fs = std::filesystem;

class CubinCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("jllm_cubin_cache_" + std::string(
                ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // rms_norm.cu specialised for rows of `width`: a small kernel, quick to compile.
  static NvrtcOptions Options(const char* arch, int64_t width) {
    NvrtcOptions o;
    o.arch = arch;
    o.defines = {{"JLLM_E", std::to_string(width)}};
    return o;
  }

  fs::path dir_;
};

TEST_F(CubinCacheTest, SecondRequestIsAHitWithTheSameBytes) {
  CubinCache cache(dir_.string());
  bool hit = true;
  auto first = cache.GetOrCompile("rms_norm.cu", Options("sm_90", 256), &hit);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(hit);
  auto key = CubinCache::Key("rms_norm.cu", Options("sm_90", 256));
  ASSERT_TRUE(key.ok());
  EXPECT_TRUE(fs::exists(dir_ / (*key + ".cubin")));

  auto second = cache.GetOrCompile("rms_norm.cu", Options("sm_90", 256), &hit);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(hit);
  EXPECT_EQ(*first, *second);
}

TEST_F(CubinCacheTest, KeyDependsOnConstantsAndArch) {
  auto a = CubinCache::Key("rms_norm.cu", Options("sm_90", 256));
  auto b = CubinCache::Key("rms_norm.cu", Options("sm_90", 512));
  auto c = CubinCache::Key("rms_norm.cu", Options("sm_87", 256));
  auto d = CubinCache::Key("elementwise.cu", Options("sm_90", 256));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
  EXPECT_NE(*a, *c);
  EXPECT_NE(*a, *d);
  EXPECT_EQ(*a, *CubinCache::Key("rms_norm.cu", Options("sm_90", 256)));
}

TEST_F(CubinCacheTest, CorruptEntryIsRecompiled) {
  CubinCache cache(dir_.string());
  auto good = cache.GetOrCompile("rms_norm.cu", Options("sm_87", 64));
  ASSERT_TRUE(good.ok()) << good.status();
  auto key = CubinCache::Key("rms_norm.cu", Options("sm_87", 64));
  ASSERT_TRUE(key.ok());
  { std::ofstream(dir_ / (*key + ".cubin"), std::ios::binary | std::ios::trunc) << "garbage"; }
  bool hit = true;
  auto again = cache.GetOrCompile("rms_norm.cu", Options("sm_87", 64), &hit);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(hit);
  EXPECT_EQ(*again, *good);
}

TEST_F(CubinCacheTest, DisabledCacheWritesNothing) {
  CubinCache cache("");
  EXPECT_FALSE(cache.enabled());
  bool hit = true;
  auto cubin = cache.GetOrCompile("rms_norm.cu", Options("sm_90", 64), &hit);
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_FALSE(hit);
  EXPECT_FALSE(fs::exists(dir_));
}

}  // namespace
}  // namespace jllm::cuda
