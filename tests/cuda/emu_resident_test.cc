// The emulation's resident CTAs (EmuOptions::resident_ctas, emu_cuda_shim.h emu_launch): CTAs
// that wait on each other run when enough of them are resident and deadlock (as on a GPU with
// too few SMs) when not, and each resident CTA keeps its own static shared memory.
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cuda/emu/emu_device.h"

namespace jllm::cuda::testing {
namespace {

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
  emu::EmuOptions o;
  o.resident_ctas = resident;
  o.extra_sources["chain_test.cu"] = kChainSource;
  emu::EmuDevice dev(o);
  KernelSpec spec;
  spec.label = spec.kernel = "chain";
  spec.source = "chain_test.cu";
  spec.threads = 64;
  auto k = dev.LoadKernel(spec, "");
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

}  // namespace
}  // namespace jllm::cuda::testing
