// A whole model through the CUDA backend on the CPU emulation: the synthesized tiny Qwen3 (the
// Q4_K_M mix: q4_K and q6_K matrices, a q6_K embedding table tied to the output), lowered with
// the default passes and with every pass off, prefilled and decoded in lockstep with cpu_ref
// (runtime/validate.h: every step's logits within the bound, the same arg-max), then the same
// prompt generated through Session on both with greedy and with seeded sampling: identical text.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "backends/cpu_ref/cpu_ref_backend.h"
#include "backends/cuda/exec/cuda_backend.h"
#include "backends/cuda/exec/graph_runner.h"
#include "backends/cuda/exec/memory_plan.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/lowering/lowering.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/qwen3_graph.h"
#include "frontends/gguf/synth_model.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gtest/gtest.h"
#include "ir/status.h"
#include "passes/pipeline.h"
#include "runtime/session.h"
#include "runtime/validate.h"
#include "tests/cuda/emu/emu_device.h"
#include "tests/cuda/kernel_variants.h"
#include "tests/support/temp_files.h"

namespace jllm::cuda::emu {
namespace {

struct TinyModel {
  std::unique_ptr<gguf::GgufFile> file;
  gguf::TokenizerData tokenizer;
};

const TinyModel& Model() {
  static const TinyModel* model = [] {
    const std::string path = ::testing::TempDir() + "/jllm_emu_tiny_" + std::to_string(getpid()) + ".gguf";
    gguf::SynthOptions o;
    o.preset = "tiny";
    o.seed = 7;
    o.threads = 2;
    auto written = gguf::WriteSynthModel(o, path);
    EXPECT_TRUE(written.ok()) << written.status();
    auto* m = new TinyModel;
    auto file = gguf::GgufFile::Open(path);
    EXPECT_TRUE(file.ok()) << file.status();
    m->file = *std::move(file);
    std::filesystem::remove(path);  // the mapping stays valid; left behind, every test process leaked 2 MB
    auto tok = gguf::ReadTokenizerData(*m->file);
    EXPECT_TRUE(tok.ok()) << tok.status();
    m->tokenizer = *std::move(tok);
    return m;
  }();
  return *model;
}

absl::Span<const uint8_t> Blob() { return Model().file->bytes().subspan(Model().file->data_offset()); }

ir::Graph Lowered(bool passes_on) {
  auto g = gguf::BuildQwen3Graph(*Model().file);
  EXPECT_TRUE(g.ok()) << g.status();
  passes::PipelineConfig config = passes::DefaultPipelineConfig();
  for (auto& [name, setting] : config.passes) setting.enabled = passes_on || name == "kv-dtype";
  auto runs = passes::RunPipeline(*g, config);
  EXPECT_TRUE(runs.ok()) << runs.status();
  return *std::move(g);
}

std::unique_ptr<Backend> EmulatedCuda(EmuOptions emu = {}) {
  return CreateCudaBackendOn(std::make_unique<EmuDevice>(std::move(emu)), {});
}

// The emulated backend with `options`, `graph` loaded for `context` positions and steps of up to
// `step_tokens` tokens.
// `device`, if given, gets the emulated device the backend runs on (the backend owns it).
absl::StatusOr<std::unique_ptr<Backend>> LoadEmulated(const ir::Graph& graph, const WeightSource& weights,
                                                      int64_t context, int64_t step_tokens,
                                                      CudaBackendOptions options = {}, EmuOptions emu = {},
                                                      EmuDevice** device = nullptr) {
  auto owned = std::make_unique<EmuDevice>(std::move(emu));
  if (device != nullptr) *device = owned.get();
  auto gpu = CreateCudaBackendOn(std::move(owned), std::move(options));
  BackendOptions bo;
  bo.max_context = context;
  bo.max_step_tokens = step_tokens;
  bo.n_threads = 2;
  RETURN_IF_ERROR(gpu->Load(graph, weights, bo));
  return gpu;
}

const std::vector<int32_t> kHelloWorld = {72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100};

// Six greedy steps of the emulated backend in lockstep with cpu_ref (runtime/validate.h).
void CheckLockstepWithCpuRef(bool passes_on, const std::vector<int32_t>& prompt = kHelloWorld, EmuOptions emu = {}) {
  const ir::Graph graph = Lowered(passes_on);
  BlobWeightSource weights(Blob());
  BackendOptions bo;
  bo.max_context = 64;
  bo.max_step_tokens = std::max<int64_t>(16, static_cast<int64_t>(prompt.size()));  // one prefill step
  bo.n_threads = 2;
  auto cpu = CreateCpuRefBackend();
  auto gpu = EmulatedCuda(std::move(emu));
  ASSERT_TRUE(cpu->Load(graph, weights, bo).ok());
  absl::Status st = gpu->Load(graph, weights, bo);
  ASSERT_TRUE(st.ok()) << st;
  SamplingParams greedy;
  greedy.temperature = 0;
  auto report = runtime::ValidateLockstep(*cpu, *gpu, prompt, 6, greedy);
  ASSERT_TRUE(report.ok()) << report.status();
  if (!GemmTensorCores()) {  // else the prefill GEMM rounds to 10 mantissa bits: validate's bound
    for (const auto& s : report->steps) {
      EXPECT_LT(s.relative, 1e-4) << "position " << s.position;  // same f32 arithmetic, other order
    }
  }
  EXPECT_TRUE(report->passed) << report->Summary();
  EXPECT_EQ(report->top1_agree, static_cast<int64_t>(report->steps.size())) << report->Summary();
}

// The defaults (every pass, the tensor-core prefill, pairs, within validate's bound); and without the
// fusion passes, with the prefill on f32 FMAs — the same arithmetic as cpu_ref, so within 1e-4
// — and head_ops and attention prefetching the next GEMVs' weights (JLLM_PREFETCH: the ranges
// bind to the weights, the emulation reads each range's ends, and the results do not move).
TEST(EmuModelTest, LockstepWithCpuRef) {
  // As the reference model runs: its GEMVs are big enough for q4_K and q6_K pairs, the tiny one's
  // are not (lowering.cc, kGemvPairsMinMib). And attention_decode.cu with the head ops fused into
  // it (JLLM_ATTN_KERNEL=1; the other lockstep run has no fused head op node, and the default
  // decode attention, attention_mma.cu with the head ops, runs in the tests below).
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{
      {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_ATTN_FUSE_HEAD", "1"}, {"JLLM_ATTN_KERNEL", "1"}});
  CheckLockstepWithCpuRef(true);
}

TEST(EmuModelTest, LockstepWithCpuRefUnfusedF32PrefillAndPrefetch) {
  ::jllm::testing::ScopedEnv env(
      std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMM_MMA", "0"}, {"JLLM_PREFETCH", "1"}});
  ASSERT_TRUE(Prefetching());
  ASSERT_FALSE(GemmTensorCores());
  CheckLockstepWithCpuRef(false);
}

// Every kernel with its CTAs interleaved, eight resident at a time (EmuOptions::resident_ctas):
// the cross-CTA protocols — split-K tickets, attention's last-CTA merge, the grab counters —
// run with their CTAs' steps mixed, as on a GPU, rather than one CTA to its end after another;
// each CTA keeps its own static shared memory.
TEST(EmuModelTest, LockstepWithCpuRefCtasInterleaved) {
  EmuOptions emu;
  emu.resident_ctas = 8;
  CheckLockstepWithCpuRef(true, kHelloWorld, std::move(emu));
}

// The QKV GEMVs with the head ops in their tails (JLLM_GEMV_HEAD=1; the tiny model's head_dim 64
// rotates in registers too) and the default decode attention reading what they wrote.
TEST(EmuModelTest, LockstepWithCpuRefHeadOpsInTheQkvGemv) {
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_HEAD", "1"}});
  auto lg = LowerGraph(Lowered(true));
  ASSERT_TRUE(lg.ok()) << lg.status();
  int head_ops = 0, tails = 0;
  for (const NodeLowering& nl : lg->nodes) {
    for (const Launch& l : nl.decode) {
      head_ops += l.kind == LaunchKind::kHeadOps;
      tails += absl::EndsWith(lg->specs[l.spec].label, "+head_ops");
    }
  }
  EXPECT_EQ(head_ops, 0);
  EXPECT_EQ(tails, 4);  // one a layer
  CheckLockstepWithCpuRef(true);
}

// The number of head_ops decode launches and of decode attention_mma.cu launches with the head ops
// fused (JLLM_FUSED_HEAD=1) when the tiny model is lowered under the current switches.
std::pair<int, int> HeadOpsLaunchesAndFusedAttention() {
  auto lg = LowerGraph(Lowered(true));
  EXPECT_TRUE(lg.ok()) << lg.status();
  if (!lg.ok()) return {-1, -1};
  int head_ops = 0, fused = 0;
  for (const NodeLowering& nl : lg->nodes) {
    for (const Launch& l : nl.decode) {
      head_ops += l.kind == LaunchKind::kHeadOps;
      const KernelSpec& s = lg->specs[l.spec];
      fused += s.kernel == "attention_mma" && absl::StrContains(s.defines, "JLLM_FUSED_HEAD=1");
    }
  }
  return {head_ops, fused};
}

// attention_mma.cu with the layer's head ops (JLLM_ATTN_FUSE_HEAD=1, the default): no head_ops
// launch in the decode step, every lane group norms and rotates its query head, the warp holding
// the newest position appends it. With 8 CTAs interleaved, so a CTA's loads of the newest position that
// went to the cache rather than to the appended row would read whatever is there (the other
// splits' CTAs run beside it), and with every CTA's warps in turn, so a warp reading the row
// another warp appended without a barrier reads it before the append in some CTAs (the prompt
// puts positions 16 and 17 in warp 1's tile). Later steps read the appended rows from the cache.
// Every other kernel of the step runs with its warps in turn too.
TEST(EmuModelTest, LockstepWithCpuRefHeadOpsInAttention) {
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_ATTN_FUSE_HEAD", "1"}});
  EXPECT_EQ(HeadOpsLaunchesAndFusedAttention(), std::make_pair(0, 4));  // one attention a layer
  EmuOptions emu;
  emu.resident_ctas = 8;
  emu.warps_in_turn = true;
  CheckLockstepWithCpuRef(true, kHelloWorld, std::move(emu));
}

// The same with one warp a CTA on two splits and the first tile loaded after the grid wait: at
// 41..46 positions the newest lies in split 1's second tile (split 1 holds 21..41 at 41), so the
// appending warp reads it in its loop, not with the first tile.
TEST(EmuModelTest, LockstepWithCpuRefHeadOpsInAttentionLaterTileLate) {
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{
      {"JLLM_ATTN_FUSE_HEAD", "1"}, {"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_SPLITS", "2"}, {"JLLM_ATTN_MINCHUNK", "1"},
      {"JLLM_ATTN_EARLY", "0"}});
  EXPECT_EQ(HeadOpsLaunchesAndFusedAttention(), std::make_pair(0, 4));
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(kHelloWorld[i % kHelloWorld.size()] + i);
  CheckLockstepWithCpuRef(true, prompt);
}

// attention_mma.cu's warps grabbing tiles from a counter per kv head (JLLM_ATTN_DYNAMIC), one
// warp a CTA on two splits: at 41..46 positions split 0 takes tile 0, split 1 tile 1 and the
// grabs the rest (the emulation runs CTAs in turn: the first to run grabs them all). Each step's
// grabs start where the merging CTA reset the counter, so a counter left over from the step
// before would skip tiles and move the logits.
TEST(EmuModelTest, LockstepWithCpuRefAttentionTilesGrabbed) {
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{
      {"JLLM_ATTN_DYNAMIC", "1"}, {"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_SPLITS", "2"}, {"JLLM_ATTN_MINCHUNK", "1"}});
  auto lg = LowerGraph(Lowered(true));
  ASSERT_TRUE(lg.ok()) << lg.status();
  int grabbing = 0;
  for (const NodeLowering& nl : lg->nodes) {
    for (const Launch& l : nl.decode) {
      grabbing += absl::StrContains(lg->specs[l.spec].defines, "JLLM_DYNAMIC=1") &&
                  absl::StrContains(lg->specs[l.spec].defines, "JLLM_NSPLIT=2");
    }
  }
  EXPECT_EQ(grabbing, 4);  // one attention_mma.cu a layer
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(kHelloWorld[i % kHelloWorld.size()] + i);
  CheckLockstepWithCpuRef(true, prompt);
}

// JLLM_PREFETCH=2: attention_mma.cu's CTAs ask L2 for their shares of the attention output
// projection after their streams (the emulation reads each share's ends: a range bound wrong
// faults), the CTAs without positions at once; the logits do not move.
TEST(EmuModelTest, LockstepWithCpuRefAttentionPrefetchingItsSuccessorLate) {
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_PREFETCH", "2"}});
  ASSERT_EQ(PrefetchMode(), 2);
  CheckLockstepWithCpuRef(true);
}

// JLLM_PREFETCH_FORM: the shares prefetched per line by every thread of head_ops and attention
// (JLLM_PREFETCH=1), and by 4-byte loads with the 256-byte fetch size at attention's end
// (JLLM_PREFETCH=2): the emulation reads each line, so a line past a weight faults under the
// sanitizers, and the loads' values go nowhere — the logits do not move.
TEST(EmuModelTest, LockstepWithCpuRefPrefetchingPerLine) {
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{
      {"JLLM_PREFETCH", "1"}, {"JLLM_PREFETCH_FORM", "line"}, {"JLLM_ATTN_FUSE_HEAD", "0"}});
  ASSERT_EQ(PrefetchForm(), kL2PrefetchLine);
  CheckLockstepWithCpuRef(true);
}

TEST(EmuModelTest, LockstepWithCpuRefPrefetchingByBlockLoadsLate) {
  ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{
      {"JLLM_PREFETCH", "2"}, {"JLLM_PREFETCH_FORM", "load256"}});
  ASSERT_EQ(PrefetchForm(), kL2PrefetchLoad256);
  CheckLockstepWithCpuRef(true);
}

// JLLM_TRACE=1: every kernel is built to stamp the step's trace, and a profiled decode step also
// runs as its captured graph does: each decode kernel gets its time on the step's critical path
// (the emulation runs one kernel after another, so their sum is the step), the GEMVs the time
// they staged x in and streamed their weights in (decode attention: q staged, its tiles), and
// nothing the step computes changes.
TEST(EmuModelTest, TracedDecodeStepPutsEveryKernelOnTheTimeline) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111};
  // With the trace, every CTA's stamps go to a file too (RunnerOptions::trace_dump).
  const std::string dump = ::jllm::testing::TempPath("trace.tsv");
  auto decode_logits = [&](bool trace) {
    std::optional<::jllm::testing::ScopedEnv> env;
    if (trace) env.emplace(std::vector<std::pair<std::string, std::string>>{{"JLLM_TRACE", "1"}});
    std::vector<float> prefill, decode;
    CudaBackendOptions o;
    if (trace) o.trace_dump = dump;
    EmuOptions emu;
    emu.resident_ctas = 4;  // CTAs side by side, each on its own "SM" (the dump's sm column)
    auto gpu = LoadEmulated(graph, weights, /*context=*/32, /*step_tokens=*/8, o, std::move(emu));
    EXPECT_TRUE(gpu.ok()) << gpu.status();
    if (!gpu.ok()) return decode;
    EXPECT_TRUE((*gpu)->Forward(prompt, 0, LogitsRows::kLast, &prefill).ok());
    EXPECT_TRUE((*gpu)->Forward(std::vector<int32_t>{44}, 5, LogitsRows::kLast, &decode).ok());
    if (trace) {
      auto timings = (*gpu)->Profile(std::vector<int32_t>{44}, 5, nullptr);
      EXPECT_TRUE(timings.ok()) << timings.status();
      if (!timings.ok()) return decode;
      int gemvs = 0, attentions = 0;
      double step = 0;
      for (const KernelTiming& k : *timings) {
        EXPECT_GT(k.step_us, 0) << k.name;
        EXPECT_GE(k.spread_us, 0) << k.name;
        step += k.step_us;
        // The GEMVs mark x staged and their stream's end, attention_mma.cu q staged and its
        // warps' last tiles; no other kernel marks.
        const bool gemv = absl::StartsWith(k.name, "gemv "), attention = absl::StartsWith(k.name, "attention_mma ");
        gemvs += gemv;
        attentions += attention;
        if (gemv || attention) {
          EXPECT_GT(k.staged_us, 0) << k.name;
          EXPECT_GT(k.stream_us, 0) << k.name;
          EXPECT_GE(k.tail_us, 0) << k.name;
        } else {
          EXPECT_EQ(k.staged_us + k.stream_us + k.tail_us, 0) << k.name;
        }
      }
      EXPECT_GE(gemvs, 5);  // QKV, attention output, gate+up, down, logits
      EXPECT_EQ(attentions, 1);  // the layers' decode attention, one row of the table
      EXPECT_GT(step, 0);
      // The dump: a row a CTA of every launch, each launch's label a row of the table above,
      // its stamps in order (entry <= wait <= exit; GEMVs: wait <= mark <= streamed <= exit).
      const std::vector<std::string> lines = absl::StrSplit(::jllm::testing::ReadFile(dump), '\n', absl::SkipEmpty());
      EXPECT_FALSE(lines.empty()) << dump;
      if (lines.empty()) return decode;
      EXPECT_EQ(lines[0], "launch\tlabel\tx\ty\tsm\tentry_ns\twait_ns\tmark_ns\tstreamed_ns\texit_ns");
      std::set<int> launches, sms;
      std::set<std::string> labels;
      for (size_t i = 1; i < lines.size(); ++i) {
        const std::vector<std::string> f = absl::StrSplit(lines[i], '\t');
        EXPECT_EQ(f.size(), 10u) << lines[i];
        if (f.size() != 10) continue;
        launches.insert(std::stoi(f[0]));
        labels.insert(f[1]);
        sms.insert(std::stoi(f[4]));
        const double entry = std::stod(f[5]), wait = std::stod(f[6]), mark = std::stod(f[7]),
                     streamed = std::stod(f[8]), exit = std::stod(f[9]);
        EXPECT_GE(entry, 0) << lines[i];
        if (wait >= 0) {
          EXPECT_LE(entry, wait) << lines[i];
        }
        EXPECT_LE(std::max(entry, wait), exit) << lines[i];
        if (absl::StartsWith(f[1], "gemv ") && streamed >= 0) {
          EXPECT_LE(wait, mark) << lines[i];
          EXPECT_LE(mark, streamed) << lines[i];
          EXPECT_LE(streamed, exit) << lines[i];
        }
      }
      std::set<std::string> names;
      for (const KernelTiming& k : *timings) names.insert(k.name);
      EXPECT_EQ(labels, names);
      EXPECT_EQ(static_cast<int>(launches.size()), *launches.rbegin() + 1);  // every launch, from 0
      EXPECT_EQ(sms, (std::set<int>{0, 1, 2, 3}));  // the SM: the CTA's slot of the 4 resident ones
      std::remove(dump.c_str());
    }
    return decode;
  };
  const std::vector<float> plain = decode_logits(false);
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(decode_logits(true), plain);
}

// JLLM_OMIT's launches filter (RunnerOptions::omit_kernels): a label that matches nothing
// leaves every logit as it was; leaving decode attention (any of its kernels) out changes the decode step's logits
// (its output keeps what the prefill left there) but not the prefill's, which has its own kernel.
TEST(EmuModelTest, OmittedKernelsAreLeftOutOfTheStep) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111};
  auto run = [&](std::vector<std::string> omit) {
    CudaBackendOptions o;
    o.omit_kernels = std::move(omit);
    std::vector<float> prefill, decode;
    auto gpu = LoadEmulated(graph, weights, /*context=*/32, /*step_tokens=*/8, std::move(o));
    EXPECT_TRUE(gpu.ok()) << gpu.status();
    if (!gpu.ok()) return std::make_pair(prefill, decode);
    EXPECT_TRUE((*gpu)->Forward(prompt, 0, LogitsRows::kLast, &prefill).ok());
    EXPECT_TRUE((*gpu)->Forward(std::vector<int32_t>{44}, 5, LogitsRows::kLast, &decode).ok());
    return std::make_pair(prefill, decode);
  };
  const auto full = run({});
  ASSERT_FALSE(full.second.empty());
  const auto none = run({"no kernel is called this"});
  EXPECT_EQ(none.first, full.first);
  EXPECT_EQ(none.second, full.second);
  const auto omitted = run({"attention_rows", "attention_mma", "attention_decode"});  // whichever decodes
  EXPECT_EQ(omitted.first, full.first);
  ASSERT_EQ(omitted.second.size(), full.second.size());
  EXPECT_NE(omitted.second, full.second);
}

// On a GPU whose CTAs may take 99 KiB of shared memory (sm_86, sm_89), lowered as on sm_90 the
// tiny model's gate+up GEMV (112 KiB) and its logits' prefill GEMM (100 KiB) would not load: the
// backend lowers for the device it runs on, whose shallower ring and narrower token tiles change
// no sum's order, so prefill and decode logits equal those of the 227 KiB device bit for bit.
TEST(EmuModelTest, RunsWithinTheSharedMemoryOfA99KiBGpu) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111};
  auto run = [&](int64_t smem) -> absl::StatusOr<std::pair<std::vector<float>, std::vector<float>>> {
    EmuOptions eo;
    eo.shared_per_block_optin = smem;
    ASSIGN_OR_RETURN(std::unique_ptr<Backend> gpu, LoadEmulated(graph, weights, /*context=*/16, /*step_tokens=*/8, {}, eo));
    std::vector<float> prefill, decode;
    RETURN_IF_ERROR(gpu->Forward(prompt, 0, LogitsRows::kLast, &prefill));
    RETURN_IF_ERROR(gpu->Forward(std::vector<int32_t>{44}, 5, LogitsRows::kLast, &decode));
    return std::make_pair(prefill, decode);
  };
  auto wide = run(kSmemPerBlockSm90);
  ASSERT_TRUE(wide.ok()) << wide.status();
  auto narrow = run(kSmemPerBlockSm86);
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  ASSERT_EQ(narrow->first.size(), static_cast<size_t>(graph.config.n_vocab));
  EXPECT_EQ(narrow->first, wide->first);
  EXPECT_EQ(narrow->second, wide->second);
}

// The backend lowers for its device's SMs as well as its shared memory: on an emulated 132-SM GPU
// it loads the kernels LowerGraph gives for 132 SMs (the H200's, the default target), on a 4-SM
// one those for 4 — which differ for the tiny model (a prefill GEMM's token tile, gate+up as one
// pair: the rules that fill the GPU with CTAs).
TEST(EmuModelTest, LowersForTheSmsOfItsGpu) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  auto loaded = [&](int sms) -> absl::StatusOr<std::set<std::string>> {
    EmuOptions eo;
    eo.sm_count = sms;
    EmuDevice* emu = nullptr;
    ASSIGN_OR_RETURN(std::unique_ptr<Backend> gpu,
                     LoadEmulated(graph, weights, /*context=*/16, /*step_tokens=*/8, {}, eo, &emu));
    const std::vector<std::string> keys = emu->loaded_keys();
    return std::set<std::string>(keys.begin(), keys.end());
  };
  auto lowered = [&](int sms) {
    auto lg = LowerGraph(graph, nullptr, LoweringTarget{227 * 1024, sms});
    std::set<std::string> keys;
    EXPECT_TRUE(lg.ok()) << lg.status();
    if (!lg.ok()) return keys;
    for (const KernelSpec& s : lg->specs) keys.insert(s.ModuleKey());
    return keys;
  };
  ASSERT_NE(lowered(4), lowered(132)) << "the tiny model must lower differently on 4 and 132 SMs";
  for (int sms : {4, 132}) {
    auto keys = loaded(sms);
    ASSERT_TRUE(keys.ok()) << keys.status();
    EXPECT_EQ(*keys, lowered(sms)) << sms << " SMs";
  }
}

// A tuning table (CudaBackendOptions::tuning, from the plan's TUNE section) reaches the
// lowering at load: the down projections of the tiny model split in two along K and read through
// registers compute the same decode logits as the built-in choices, up to the order of the sums
// (one decode step at position 0: the tuned GEMVs are decode kernels); a table naming a shape the
// model lacks is refused at load, naming it.
TEST(EmuModelTest, TunedLoweringComputesTheSameLogits) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  auto run = [&](TuningTable table) -> absl::StatusOr<std::vector<float>> {
    CudaBackendOptions o;
    o.tuning = std::move(table);
    ASSIGN_OR_RETURN(std::unique_ptr<Backend> gpu, LoadEmulated(graph, weights, /*context=*/8, /*step_tokens=*/1, std::move(o)));
    std::vector<float> decode;
    RETURN_IF_ERROR(gpu->Forward(std::vector<int32_t>{72}, 0, LogitsRows::kLast, &decode));
    return decode;
  };
  auto plain = run({});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_EQ(plain->size(), static_cast<size_t>(graph.config.n_vocab));
  TuningTable table;
  table.gemv["q6_K 256x768 +residual"] = {{"ksplit", 2}, {"ring", 0}};
  auto tuned = run(table);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  ASSERT_EQ(tuned->size(), plain->size());
  float scale = 0, diff = 0;
  for (size_t i = 0; i < plain->size(); ++i) {
    scale = std::max(scale, std::fabs((*plain)[i]));
    diff = std::max(diff, std::fabs((*plain)[i] - (*tuned)[i]));
  }
  EXPECT_LT(diff, 1e-5f * scale);  // f32 sums in another order, one matrix in 4 layers
  table.gemv["q4_K 2560x4096 +residual"] = {{"nw", 16}};  // the 4b preset's, not tiny's
  auto refused = run(table);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'q4_K 2560x4096 +residual' is not one of this graph's"),
            std::string_view::npos)
      << refused.status();
}

// Backend::Retune lowers the loaded model again with another table, keeping its weights: the
// decode logits equal those of a model loaded with that table (the q6_K down projections split in
// two along K — their scratch grows — through registers, x quantized per 64-element pair: other
// logits than the built-in choices') bit for bit, and an empty table brings back the built-in
// choices' logits. A table for a shape the model lacks, or measured on another GPU, is
// refused, and the model runs on as before. The decode graph captured with the old kernels is
// freed.
TEST(EmuModelTest, RetuneKeepsTheWeightsAndComputesAsAFreshLoad) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  auto decode = [&](Backend& gpu) -> absl::StatusOr<std::vector<float>> {
    std::vector<float> out;
    RETURN_IF_ERROR(gpu.Forward(std::vector<int32_t>{72}, 0, LogitsRows::kLast, &out));
    return out;
  };
  TuningTable table;
  table.gemv["q6_K 256x768 +residual"] = {{"ksplit", 2}, {"ring", 0}, {"pairs", 2}, {"pairs_min_mib", 0}};
  CudaBackendOptions with_table;
  with_table.tuning = table;
  auto fresh = LoadEmulated(graph, weights, /*context=*/8, /*step_tokens=*/1, with_table);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto want_tuned = decode(**fresh);
  ASSERT_TRUE(want_tuned.ok()) << want_tuned.status();

  auto device = std::make_unique<EmuDevice>();
  const EmuDevice* emu = device.get();
  std::unique_ptr<Backend> loaded = CreateCudaBackendOn(std::move(device), {});
  ASSERT_TRUE(loaded->Load(graph, weights, {.max_context = 8, .max_step_tokens = 1, .n_threads = 2}).ok());
  auto plain = decode(*loaded);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_NE(*plain, *want_tuned);  // (else the table would test nothing)
  EXPECT_EQ(emu->live_graphs(), 1);  // the decode step's
  ASSERT_TRUE(loaded->Retune(TuningToYaml(table)).ok());
  auto tuned = decode(*loaded);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ(*tuned, *want_tuned);
  EXPECT_EQ(emu->live_graphs(), 1);  // the old kernels' graph freed
  ASSERT_TRUE(loaded->Retune("").ok());
  auto back = decode(*loaded);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *plain);

  TuningTable wrong;
  wrong.gemv["q4_K 2560x4096 +residual"] = {{"nw", 16}};
  absl::Status st = loaded->Retune(TuningToYaml(wrong));
  EXPECT_NE(st.message().find("'q4_K 2560x4096 +residual' is not one of this graph's"), std::string_view::npos) << st;
  table.device = "Another GPU (sm_90, 132 SMs)";
  st = loaded->Retune(TuningToYaml(table));
  EXPECT_NE(st.message().find("measured on Another GPU (sm_90, 132 SMs)"), std::string_view::npos) << st;
  auto after = decode(*loaded);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *plain);
}

// A table whose scratch would not fit in the memory left is refused before anything changes:
// the model runs on with the kernels it had. (The tiny model's downs are not split by default,
// so a K split grows the workspace from nothing.)
TEST(EmuModelTest, RetuneWithoutMemoryForItsScratchChangesNothing) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  const BackendOptions bo{.max_context = 8, .max_step_tokens = 1, .n_threads = 2};
  auto decode = [&](Backend& gpu) -> absl::StatusOr<std::vector<float>> {
    std::vector<float> out;
    RETURN_IF_ERROR(gpu.Forward(std::vector<int32_t>{72}, 0, LogitsRows::kLast, &out));
    return out;
  };
  auto device = std::make_unique<EmuDevice>();
  EmuDevice* emu = device.get();
  auto gpu = CreateCudaBackendOn(std::move(device), {});
  absl::Status loaded = gpu->Load(graph, weights, bo);
  ASSERT_TRUE(loaded.ok()) << loaded;
  // Another user of the GPU takes all but the reserve the runner keeps free.
  auto free_bytes = emu->FreeBytes();
  ASSERT_TRUE(free_bytes.ok());
  auto other = emu->Allocate(*free_bytes - RunnerOptions{}.reserve_bytes, "another process");
  ASSERT_TRUE(other.ok()) << other.status();
  auto plain = decode(*gpu);
  ASSERT_TRUE(plain.ok()) << plain.status();
  TuningTable table;  // the downs split in three along K: partial sums of every row, three times
  table.gemv["q6_K 256x768 +residual"] = {{"ksplit", 3}};
  table.gemv["q4_K 256x768 +residual"] = {{"ksplit", 3}};
  absl::Status st = gpu->Retune(TuningToYaml(table));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  auto after = decode(*gpu);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *plain);
}

// RunnerOptions::decode_ahead: after a sampled decode step the next one is replayed before the
// host has read the token. The tokens are those of one step at a time — continuing, after a
// token the host forces (the step ahead ran on another token: dropped, its cache row written
// again), with logits asked for (none ahead of it), after Backend::Wait (the step ahead
// finished and dropped), and up to the context's last position (nothing ahead past it) —, the
// logits bit for bit, and the three dropped steps are the only extra launches.
TEST(EmuModelTest, DecodeAheadGeneratesWhatOneStepAtATimeDoes) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  constexpr int64_t kContext = 24, kForced = 16, kLogitsAt = 19, kWaitAt = 21;
  struct Run {
    std::vector<int32_t> tokens;
    std::vector<float> logits;
    int64_t launches = 0, step_launches = 0;
  };
  auto generate = [&](bool ahead, Run& r) {
    CudaBackendOptions o;
    o.decode_ahead = ahead;
    EmuDevice* emu = nullptr;
    auto gpu = LoadEmulated(graph, weights, kContext, 16, o, {}, &emu);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    const SamplingParams greedy{.temperature = 0};
    auto first = (*gpu)->Step(kHelloWorld, 0, StepOptions{.sampling = &greedy});
    ASSERT_TRUE(first.ok()) << first.status();
    int32_t token = *first;
    for (int64_t pos = static_cast<int64_t>(kHelloWorld.size()); pos < kContext; ++pos) {
      if (pos == kForced) token = 33;  // not what the step before sampled
      StepOptions so{.sampling = &greedy};
      if (pos == kLogitsAt) so.logits = &r.logits;
      if (pos == kWaitAt) {
        ASSERT_TRUE((*gpu)->Wait().ok());  // the step ahead finishes, dropped
      }
      const int64_t before = emu->launches();
      auto next = (*gpu)->Step(absl::MakeConstSpan(&token, 1), pos, so);
      ASSERT_TRUE(next.ok()) << "position " << pos << ": " << next.status();
      if (!ahead && r.step_launches == 0) r.step_launches = emu->launches() - before;
      r.tokens.push_back(token = *next);
    }
    r.launches = emu->launches();
  };
  Run plain, ahead;
  generate(false, plain);
  generate(true, ahead);
  ASSERT_EQ(plain.tokens.size(), static_cast<size_t>(kContext) - kHelloWorld.size());
  EXPECT_EQ(ahead.tokens, plain.tokens);
  ASSERT_FALSE(plain.logits.empty());
  EXPECT_EQ(ahead.logits, plain.logits);
  ASSERT_GT(plain.step_launches, 0);
  // Dropped: the steps ahead of the forced token's, of the logits' step and of Backend::Wait.
  EXPECT_EQ(ahead.launches, plain.launches + 3 * plain.step_launches);
}

// The decode steps of the tiny model after kHelloWorld's greedy prefill, up to position `end`,
// one step's launches at a time (no step ahead): position p draws with *sampling(p), position
// logits_at keeps its logits; each step's token and launch count. `gpu`, if given, gets the
// backend, still loaded.
struct StepsRun {
  std::vector<int32_t> tokens;
  std::vector<float> logits;
  std::vector<int64_t> launches;  // a step's
};
void RunSteps(const ir::Graph& graph, int64_t context, int64_t end, int64_t logits_at,
              const std::function<const SamplingParams*(int64_t)>& sampling, StepsRun& r,
              std::unique_ptr<Backend>* gpu = nullptr) {
  static BlobWeightSource weights(Blob());  // (outlives the backend handed out)
  CudaBackendOptions o;
  o.decode_ahead = false;
  EmuDevice* emu = nullptr;
  auto loaded = LoadEmulated(graph, weights, context, 16, o, {}, &emu);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const SamplingParams greedy{.temperature = 0};
  auto first = (*loaded)->Step(kHelloWorld, 0, StepOptions{.sampling = &greedy});
  ASSERT_TRUE(first.ok()) << first.status();
  int32_t token = *first;
  for (int64_t pos = static_cast<int64_t>(kHelloWorld.size()); pos < end; ++pos) {
    StepOptions so{.sampling = sampling(pos)};
    if (pos == logits_at) so.logits = &r.logits;
    const int64_t before = emu->launches();
    auto next = (*loaded)->Step(absl::MakeConstSpan(&token, 1), pos, so);
    ASSERT_TRUE(next.ok()) << "position " << pos << ": " << next.status();
    r.launches.push_back(emu->launches() - before);
    r.tokens.push_back(token = *next);
  }
  if (gpu != nullptr) *gpu = *std::move(loaded);
}

// JLLM_GREEDY_LOGITS (on by default): a greedy step without penalties draws in the logits GEMV's
// epilogue, with no sampler launch; every other draw runs the sampler. Against the sampler alone
// (the switch at 0): the same tokens and logits through greedy steps, a logits step, a seeded
// draw and a greedy one with a repetition penalty (the runner changes graphs at each), and
// exactly one launch a greedy step fewer.
TEST(EmuModelTest, GreedyStepsDrawInTheLogitsGemvAsTheSamplerDoes) {
  const ir::Graph graph = Lowered(true);
  constexpr int64_t kContext = 26, kLogitsAt = 15, kSeededAt = 17, kPenaltyAt = 19;
  const SamplingParams greedy{.temperature = 0};
  const SamplingParams seeded{.temperature = 0.9f, .top_k = 20, .seed = 99};
  const SamplingParams penalized{.temperature = 0, .repeat_penalty = 1.5f, .repeat_last_n = 16};
  auto generate = [&](const char* greedy_logits, StepsRun& r) {
    ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_GREEDY_LOGITS", greedy_logits}});
    RunSteps(graph, kContext, kContext, kLogitsAt, [&](int64_t pos) {
      return pos == kSeededAt ? &seeded : pos == kPenaltyAt ? &penalized : &greedy;
    }, r);
  };
  StepsRun sampler, gemv;
  generate("0", sampler);
  generate("1", gemv);
  ASSERT_EQ(sampler.tokens.size(), static_cast<size_t>(kContext) - kHelloWorld.size());
  EXPECT_EQ(gemv.tokens, sampler.tokens);
  ASSERT_FALSE(sampler.logits.empty());
  EXPECT_EQ(gemv.logits, sampler.logits);
  ASSERT_EQ(gemv.launches.size(), sampler.launches.size());
  for (size_t i = 0; i < gemv.launches.size(); ++i) {
    const int64_t pos = static_cast<int64_t>(kHelloWorld.size() + i);
    const bool drawn_by_gemv = pos != kSeededAt && pos != kPenaltyAt;
    EXPECT_EQ(gemv.launches[i], sampler.launches[i] - (drawn_by_gemv ? 1 : 0)) << "position " << pos;
  }
}

// Backend::Profile ends the profiled step with the draw it is given, as a generated step would: a
// greedy one in the logits GEMV ("+argmax") and no sampler, a sampled one with the plain logits
// GEMV and the sampler, none with neither (jllm-run --profile --temp 0 profiles tg128's step).
TEST(EmuModelTest, ProfiledDecodeStepEndsWithTheDrawItIsGiven) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  auto gpu = LoadEmulated(graph, weights, /*context=*/32, /*step_tokens=*/8, CudaBackendOptions{}, EmuOptions{});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111};
  std::vector<float> logits;
  ASSERT_TRUE((*gpu)->Forward(prompt, 0, LogitsRows::kLast, &logits).ok());
  auto draws = [&](const SamplingParams* sampling) {  // "argmax-gemv/sampler" kernels of the step
    auto timings = (*gpu)->Profile(std::vector<int32_t>{44}, 5, sampling);
    EXPECT_TRUE(timings.ok()) << timings.status();
    int argmax = 0, sampler = 0, gemvs = 0;
    for (const KernelTiming& k : timings.ok() ? *timings : std::vector<KernelTiming>{}) {
      argmax += absl::StrContains(k.name, "+argmax");
      sampler += absl::StartsWith(k.name, "sample ");
      gemvs += absl::StartsWith(k.name, "gemv ");
    }
    EXPECT_GE(gemvs, 5);  // QKV, attention output, gate+up, down, logits: the step ran
    return absl::StrCat(argmax, "/", sampler);
  };
  const SamplingParams greedy{.temperature = 0};
  const SamplingParams seeded{.temperature = 0.9f, .top_k = 20, .seed = 99};
  EXPECT_EQ(draws(&greedy), "1/0");
  EXPECT_EQ(draws(&seeded), "0/1");
  EXPECT_EQ(draws(nullptr), "0/0");
}

// A graph whose output is not named %logits has no sampler: a draw asked of it — by Step or by
// Profile — is refused with the reason (GraphRunner::CheckSampleable), not run on a missing row;
// the same steps without a draw run.
TEST(EmuModelTest, ADrawFromAGraphWithoutLogitsIsRefused) {
  ir::Graph graph = Lowered(true);
  int renamed = 0;
  for (ir::ValueId v : graph.outputs) {
    if (graph.name_of(v) == ir::kLogitsOutput) {
      graph.values[v].name = "scores";
      ++renamed;
    }
  }
  ASSERT_EQ(renamed, 1);
  BlobWeightSource weights(Blob());
  auto gpu = LoadEmulated(graph, weights, /*context=*/16, /*step_tokens=*/8, CudaBackendOptions{}, EmuOptions{});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const SamplingParams greedy{.temperature = 0};
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111};
  StepOptions drawing;
  drawing.sampling = &greedy;
  auto drawn = (*gpu)->Step(prompt, 0, drawing);
  EXPECT_EQ(drawn.status().code(), absl::StatusCode::kFailedPrecondition) << drawn.status();
  EXPECT_TRUE(absl::StrContains(drawn.status().message(), "no %logits output")) << drawn.status();
  auto plain = (*gpu)->Step(prompt, 0, StepOptions{});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(*plain, -1);
  auto profiled = (*gpu)->Profile(std::vector<int32_t>{44}, 5, &greedy);
  EXPECT_EQ(profiled.status().code(), absl::StatusCode::kFailedPrecondition) << profiled.status();
  EXPECT_TRUE(absl::StrContains(profiled.status().message(), "no %logits output")) << profiled.status();
  EXPECT_TRUE((*gpu)->Profile(std::vector<int32_t>{44}, 5, nullptr).ok());
}

// JLLM_GEMV_EMBED=1: the first QKV GEMV stages the token's embedding row itself (gemv.cu EMBED)
// and embed.cu leaves the decode step. Against embed.cu (the switch at 0): the same tokens and
// logits through greedy steps and one with a repetition penalty (which reads the context record
// the GEMV's CTA 0 writes), one launch a step fewer, the lowering's one "+embed" GEMV; and an
// out-of-vocabulary token is still refused by the step, not read past the table.
TEST(EmuModelTest, FirstGemvStagesTheEmbeddingRowAsEmbedDoes) {
  const ir::Graph graph = Lowered(true);
  constexpr int64_t kContext = 24, kLogitsAt = 14, kPenaltyAt = 17;
  const SamplingParams greedy{.temperature = 0};
  const SamplingParams penalized{.temperature = 0, .repeat_penalty = 1.5f, .repeat_last_n = 16};
  struct Run : StepsRun {
    int embed_launches = -1, embed_gemvs = -1;  // in the lowered decode step
    absl::Status out_of_vocabulary;
  };
  auto generate = [&](const char* fold, Run& r) {
    ::jllm::testing::ScopedEnv env(std::vector<std::pair<std::string, std::string>>{{"JLLM_GEMV_EMBED", fold}});
    auto lg = LowerGraph(graph);
    ASSERT_TRUE(lg.ok()) << lg.status();
    r.embed_launches = r.embed_gemvs = 0;
    for (const NodeLowering& nl : lg->nodes) {
      for (const Launch& l : nl.decode) {
        r.embed_launches += l.kind == LaunchKind::kEmbed;
        r.embed_gemvs += absl::EndsWith(lg->specs[l.spec].label, "+embed");
      }
    }
    std::unique_ptr<Backend> gpu;
    RunSteps(graph, kContext, kContext - 1, kLogitsAt, [&](int64_t pos) {
      return pos == kPenaltyAt ? &penalized : &greedy;
    }, r, &gpu);
    ASSERT_NE(gpu, nullptr);
    const int32_t bad = 1 << 20;  // past any table of the tiny model
    r.out_of_vocabulary = gpu->Step(absl::MakeConstSpan(&bad, 1), kContext - 1, StepOptions{.sampling = &greedy}).status();
  };
  Run embed, fold;
  generate("0", embed);
  generate("1", fold);
  EXPECT_EQ(embed.embed_launches, 1);
  EXPECT_EQ(embed.embed_gemvs, 0);
  EXPECT_EQ(fold.embed_launches, 0);
  EXPECT_EQ(fold.embed_gemvs, 1);
  ASSERT_EQ(embed.tokens.size(), static_cast<size_t>(kContext - 1) - kHelloWorld.size());
  EXPECT_EQ(fold.tokens, embed.tokens);
  ASSERT_FALSE(embed.logits.empty());
  EXPECT_EQ(fold.logits, embed.logits);
  ASSERT_EQ(fold.launches.size(), embed.launches.size());
  for (size_t i = 0; i < fold.launches.size(); ++i) {
    EXPECT_EQ(fold.launches[i], embed.launches[i] - 1) << "position " << kHelloWorld.size() + i;
  }
  EXPECT_EQ(embed.out_of_vocabulary.code(), absl::StatusCode::kOutOfRange) << embed.out_of_vocabulary;
  EXPECT_EQ(fold.out_of_vocabulary.code(), absl::StatusCode::kOutOfRange) << fold.out_of_vocabulary;
}

TEST(EmuModelSessionTest, GeneratesCpuRefsTokensGreedyAndSeeded) {
  const ir::Graph graph = Lowered(true);
  for (const SamplingParams sampling :
       {SamplingParams{.temperature = 0}, SamplingParams{.temperature = 0.9f, .top_k = 20, .top_p = 0.9f,
                                                        .min_p = 0.02f, .repeat_penalty = 1.3f,
                                                        .repeat_last_n = 8, .seed = 1234}}) {
    std::vector<std::vector<int32_t>> tokens;
    for (bool emulated : {false, true}) {
      runtime::SessionOptions so;
      so.context = 64;
      so.prefill_chunk = 8;  // a prompt of 12: two chunks
      so.n_threads = 2;
      auto session = runtime::Session::Create(graph, Model().tokenizer,
                                              emulated ? EmulatedCuda() : CreateCpuRefBackend(),
                                              std::make_unique<BlobWeightSource>(Blob()), so);
      ASSERT_TRUE(session.ok()) << session.status();
      auto prompt = (*session)->Tokenize("Hello, world");
      ASSERT_TRUE(prompt.ok());
      runtime::Sampler sampler(sampling);
      runtime::GenerateOptions go;
      go.max_tokens = 6;
      auto r = (*session)->Generate(*prompt, sampler, go);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->tokens.size(), 6u);
      tokens.push_back(r->tokens);
      // A second turn reuses the cached prefix on both.
      std::vector<int32_t> turn2 = *prompt;
      turn2.insert(turn2.end(), r->tokens.begin(), r->tokens.end());
      turn2.push_back(33);
      auto r2 = (*session)->Generate(turn2, sampler, go);
      ASSERT_TRUE(r2.ok()) << r2.status();
      // The cache holds the prompt and every sampled token but the last (never fed back).
      EXPECT_EQ(r2->stats.reused_tokens, static_cast<int64_t>(prompt->size() + r->tokens.size()) - 1);
      tokens.push_back(r2->tokens);
    }
    EXPECT_EQ(tokens[0], tokens[2]) << "temperature " << sampling.temperature;
    EXPECT_EQ(tokens[1], tokens[3]) << "temperature " << sampling.temperature << ", second turn";
  }
}

}  // namespace
}  // namespace jllm::cuda::emu

namespace jllm::cuda::emu {
namespace {

// A context that does not fit is refused before anything is allocated, with the numbers and
// the context that would fit; the default context comes from the memory free.
TEST(EmuMemoryPlan, ContextThatDoesNotFitIsRefusedWithWhatWouldFit) {
  const ir::Graph graph = Lowered(true);
  BlobWeightSource weights(Blob());
  auto plan_backend = EmulatedCuda();
  auto lowered = LowerGraph(graph);
  ASSERT_TRUE(lowered.ok());
  auto small = PlanMemory(graph, *lowered, 1024, 16);
  ASSERT_TRUE(small.ok());
  // A device with room for a 1024-position plan (plus the reserve) but not for 4096.
  EmuOptions o;
  o.memory_bytes = small->total_bytes() + RunnerOptions{}.reserve_bytes + 4096;
  auto device = std::make_unique<EmuDevice>(o);
  EmuDevice* raw = device.get();
  auto backend = CreateCudaBackendOn(std::move(device), {});
  BackendOptions bo;
  bo.max_context = 4096;
  bo.max_step_tokens = 16;
  const absl::Status st = backend->Load(graph, weights, bo);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  const std::string msg(st.message());
  EXPECT_NE(msg.find("does not fit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("KV cache"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-c 10"), std::string::npos) << msg;  // a context of ~1024 fits
  EXPECT_EQ(raw->launches(), 0);
  auto fits = backend->DefaultContext(graph, bo);
  ASSERT_TRUE(fits.ok());
  EXPECT_GE(*fits, 1024);
  EXPECT_LT(*fits, 4096);
  bo.max_context = *fits;
  EXPECT_TRUE(backend->Load(graph, weights, bo).ok());
}

}  // namespace
}  // namespace jllm::cuda::emu
