// The emulation's resident CTAs (EmuOptions::resident_ctas, emu_cuda_shim.h emu_launch): CTAs
// that wait on each other run when enough of them are resident and deadlock (as on a GPU with
// too few SMs) when not, and each resident CTA keeps its own static shared memory. And its warps
// in turn (EmuOptions::warps_in_turn): a read of another warp's unsynchronised write comes before
// the write in some CTAs.
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cuda/emu/emu_device.h"

namespace jllm::cuda::testing {
namespace {

// The emulation's options with the test kernel `kernel` (64 threads a CTA) given as `source`, and
// its spec.
emu::EmuOptions TestKernelOptions(const std::string& kernel, const char* source) {
  emu::EmuOptions o;
  o.extra_sources[kernel + "_test.cu"] = source;
  return o;
}
KernelSpec TestKernelSpec(const std::string& kernel) {
  KernelSpec spec;
  spec.label = spec.kernel = kernel;
  spec.source = kernel + "_test.cu";
  spec.threads = 64;
  return spec;
}

// A chain: CTA b waits until CTA b + 1 has finished (the last waits on none), then takes a
// ticket and finishes. Before its wait each CTA leaves its index in static shared memory and
// after it checks that the index is still there.
constexpr char kChainSource[] = R"(
#include "jllm_common.cuh"
struct ChainArgs {
  unsigned* done;    // [ctas]
  unsigned* ticket;  // [ctas]: the order CTAs finished in
  unsigned* next;    // the next ticket
  unsigned* clobbered;
};
JLLM_KERNEL(chain, ChainArgs, 64, 1) {
  __shared__ unsigned mine;
  if (threadIdx.x == 0) mine = blockIdx.x;
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x + 1 < gridDim.x) {
    emu_wait_until([&] { return __atomic_load_n(&args.done[blockIdx.x + 1], __ATOMIC_ACQUIRE) != 0; });
  }
  __syncthreads();
  if (mine != blockIdx.x) atomicAdd(args.clobbered, 1u);
  __syncthreads();
  if (threadIdx.x == 0) {
    args.ticket[blockIdx.x] = atomicAdd(args.next, 1u);
    __atomic_store_n(&args.done[blockIdx.x], 1u, __ATOMIC_RELEASE);
  }
}
)";

struct ChainArgs {
  unsigned* done;
  unsigned* ticket;
  unsigned* next;
  unsigned* clobbered;
};

// Runs the chain over `ctas` CTAs with `resident` of them at a time; the tickets.
std::vector<unsigned> RunChain(unsigned ctas, int resident, unsigned* clobbered_out) {
  emu::EmuOptions o = TestKernelOptions("chain", kChainSource);
  o.resident_ctas = resident;
  emu::EmuDevice dev(o);
  auto k = dev.LoadKernel(TestKernelSpec("chain"), "");
  EXPECT_TRUE(k.ok()) << k.status();
  auto mem = dev.Allocate(4 * (2 * ctas + 2), "chain");
  EXPECT_TRUE(mem.ok());
  auto* words = static_cast<unsigned*>(*mem);
  EXPECT_TRUE(dev.Fill(words, 0, 4 * (2 * ctas + 2)).ok());
  const ChainArgs args{words, words + ctas, words + 2 * ctas, words + 2 * ctas + 1};
  EXPECT_TRUE(dev.Launch(*k, {ctas, 1, 1}, {64, 1, 1}, 0, &args, sizeof(args)).ok());
  std::vector<unsigned> tickets(words + ctas, words + 2 * ctas);
  *clobbered_out = words[2 * ctas + 1];
  dev.Free(*mem);
  return tickets;
}

TEST(EmuResidentCtas, WaitingCtasFinishInDependencyOrderWhenAllAreResident) {
  unsigned clobbered = 0;
  const std::vector<unsigned> tickets = RunChain(6, 6, &clobbered);
  EXPECT_THAT(tickets, ::testing::ElementsAre(5u, 4u, 3u, 2u, 1u, 0u));  // the last CTA first
  EXPECT_EQ(clobbered, 0u) << "a CTA saw another CTA's static shared memory";
}

TEST(EmuResidentCtasDeathTest, WaitOnACtaThatIsNotResidentIsADeadlock) {
  unsigned clobbered = 0;
  EXPECT_DEATH(RunChain(6, 1, &clobbered), "deadlock");
}

// A race between warps: warp 0 writes a word of shared memory at once, warp 1 reads it after
// eight warp exchanges, with no barrier between them; each CTA reports what warp 1 read.
constexpr char kRaceSource[] = R"(
#include "jllm_common.cuh"
struct RaceArgs {
  unsigned* seen;  // [ctas]
};
JLLM_KERNEL(race, RaceArgs, 64, 1) {
  __shared__ unsigned word;
  if (threadIdx.x == 0) word = 1u;
  if (threadIdx.x >= 32) {
    unsigned v = threadIdx.x;
    for (int i = 0; i < 8; ++i) v = __shfl_xor_sync(0xffffffffu, v, 1);
    if (threadIdx.x == 32) args.seen[blockIdx.x] = word + (v & 0u);
  }
}
)";

// What warp 1 of each of `ctas` CTAs read.
std::vector<unsigned> RunRace(unsigned ctas, bool warps_in_turn) {
  emu::EmuOptions o = TestKernelOptions("race", kRaceSource);
  o.resident_ctas = 2;  // so each CTA's static shared memory starts as garbage (one at a time it carries over)
  o.warps_in_turn = warps_in_turn;
  emu::EmuDevice dev(o);
  auto k = dev.LoadKernel(TestKernelSpec("race"), "");
  EXPECT_TRUE(k.ok()) << k.status();
  auto mem = dev.Allocate(4 * ctas, "race");
  EXPECT_TRUE(mem.ok());
  auto* seen = static_cast<unsigned*>(*mem);
  EXPECT_TRUE(dev.Fill(seen, 0, 4 * ctas).ok());
  unsigned* const args = seen;
  EXPECT_TRUE(dev.Launch(*k, {ctas, 1, 1}, {64, 1, 1}, 0, &args, sizeof(args)).ok());
  std::vector<unsigned> out(seen, seen + ctas);
  dev.Free(*mem);
  return out;
}

// Every thread a step a round: the writer's one step lands before the reader's ninth, in every
// CTA — the race is invisible (stop 32's fused-head-append-by-warp-0 mutation survived so).
// Warps in turn: in the CTAs whose warp 1 runs first it reads the garbage shared memory starts
// as, in the others the write.
TEST(EmuWarpsInTurn, AReadOfAnotherWarpsUnsynchronisedWriteComesFirstInSomeCtas) {
  const std::vector<unsigned> round_robin = RunRace(32, false);
  EXPECT_THAT(round_robin, ::testing::Each(1u));
  const std::vector<unsigned> in_turn = RunRace(32, true);
  EXPECT_THAT(in_turn, ::testing::Contains(1u));
  EXPECT_THAT(in_turn, ::testing::Contains(::testing::Ne(1u)));
}

}  // namespace
}  // namespace jllm::cuda::testing
