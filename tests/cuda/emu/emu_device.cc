#include "tests/cuda/emu/emu_device.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/nvrtc/kernel_sources.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::cuda::emu {
namespace {

namespace fs = std::filesystem;

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 64-bit FNV-1a: names the compiled object of a module (source text included, so an edited
// kernel never reuses a stale object).
uint64_t Hash(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// The g++ options of every emulated module; the shim's precompiled header must be built with
// the same ones to be used.
constexpr const char* kEmuFlags[] = {"-std=c++20", "-O1", "-fPIC", "-w", "-pthread", "-DJLLM_EMULATE"};

std::string DefaultCacheDir() {
  if (const char* env = std::getenv("JLLM_EMU_CACHE"); env != nullptr && *env != '\0') return env;
  return JLLM_EMU_DEFAULT_CACHE;  // the build directory (tests/cuda/CMakeLists.txt)
}

}  // namespace

EmuDevice::EmuDevice(EmuOptions options) : options_(std::move(options)) {
  props_.name = "CPU emulation";
  props_.arch = "emu";
  props_.sm_count = options_.sm_count;
  props_.total_bytes = options_.memory_bytes;
  props_.shared_per_block_optin = options_.shared_per_block_optin;
  props_.l2_bytes = 0;
  props_.tensor_copies = true;  // (jllm_common.cuh emulates the bulk and tensor-map copies)
  if (options_.cache_dir.empty()) options_.cache_dir = DefaultCacheDir();
}

EmuDevice::~EmuDevice() {
  for (auto& [p, bytes] : allocations_) std::free(p);
  for (Kernel& k : kernels_) {
    if (k.library != nullptr) dlclose(k.library);
  }
}

absl::StatusOr<int64_t> EmuDevice::FreeBytes() { return options_.memory_bytes - allocated_; }

absl::StatusOr<void*> EmuDevice::Allocate(size_t bytes, std::string_view what) {
  if (static_cast<int64_t>(bytes) > options_.memory_bytes - allocated_) {
    return absl::ResourceExhaustedError(absl::StrCat("emu: out of memory allocating ", Sv(what)));
  }
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("emu: allocating ", Sv(what)));
  std::memset(p, 0xFF, bytes);  // NaN-filled, as garbage: an unwritten output shows
  allocations_[p] = bytes;
  allocated_ += static_cast<int64_t>(bytes);
  return p;
}

void EmuDevice::Free(void* p) {
  auto it = allocations_.find(p);
  if (it == allocations_.end()) return;
  allocated_ -= static_cast<int64_t>(it->second);
  allocations_.erase(it);
  std::free(p);
}

absl::StatusOr<void*> EmuDevice::AllocateHost(size_t bytes, std::string_view what) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("emu: host memory for ", Sv(what)));
  return p;
}

void EmuDevice::FreeHost(void* p) { std::free(p); }

absl::Status EmuDevice::CopyToDevice(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}
absl::Status EmuDevice::CopyToHost(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}
absl::Status EmuDevice::Fill(void* dst, uint8_t value, size_t bytes) {
  std::memset(dst, value, bytes);
  return absl::OkStatus();
}

namespace {

// The shim as a precompiled header in the cache (built once, by whichever process gets there
// first; a rename puts it in place whole): the standard headers it includes are most of a small
// module's compile time (2.8 s -> 1.6 s a module, measured on CI's kind of machine). Returns the
// path to pass to -include: the header copy beside its .gch, or the shim itself where the
// precompiled header could not be built (g++ then reads the header as before).
std::string ShimInclude(const std::string& cache_dir, const std::string& shim) {
  static std::mutex mu;
  static std::map<std::string, std::string> done;  // cache dir -> include path
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = done.find(cache_dir); it != done.end()) return it->second;
  uint64_t h = Hash(shim);
  for (const char* f : kEmuFlags) h = Hash(f, h);
  const std::string dir = absl::StrCat(cache_dir, "/shim_", absl::StrFormat("%016x", h));
  const std::string header = dir + "/emu_cuda_shim.h";
  const std::string gch = header + ".gch";
  std::error_code ec;
  if (fs::exists(gch) && fs::exists(header)) return done[cache_dir] = header;
  fs::create_directories(dir, ec);
  const std::string tag = absl::StrCat(getpid());
  const std::string tmp_header = absl::StrCat(header, ".tmp_", tag);
  const std::string tmp_gch = absl::StrCat(gch, ".tmp_", tag);
  std::ofstream(tmp_header, std::ios::binary) << shim;
  std::vector<std::string> cmd = {"g++"};
  cmd.insert(cmd.end(), std::begin(kEmuFlags), std::end(kEmuFlags));
  cmd.insert(cmd.end(), {"-x", "c++-header", tmp_header, "-o", tmp_gch, "2>/dev/null"});
  const bool built = std::system(absl::StrJoin(cmd, " ").c_str()) == 0;
  // The header first: g++ uses the .gch only beside the header it was -include'd by.
  bool placed = false;
  if (built) fs::rename(tmp_header, header, ec);
  if (built && !ec) fs::rename(tmp_gch, gch, ec), placed = !ec;
  fs::remove(tmp_header, ec);
  fs::remove(tmp_gch, ec);
  if (!placed) {
    std::fprintf(stderr, "emu: no precompiled shim in %s; modules compile the shim each time\n", dir.c_str());
    return done[cache_dir] = JLLM_EMU_SHIM;
  }
  return done[cache_dir] = header;
}

}  // namespace

absl::StatusOr<std::string> EmuDevice::CompiledPath(const KernelSpec& spec) {
  auto it = compiled_.find(spec.ModuleKey());
  if (it != compiled_.end()) return it->second;
  // The sources the kernel sees, laid out by their include names, and the shim.
  uint64_t h = Hash(spec.ModuleKey());
  h = Hash(JLLM_EMU_SHIM, h);
  std::ifstream shim_in(JLLM_EMU_SHIM);
  const std::string shim((std::istreambuf_iterator<char>(shim_in)), {});
  if (shim.empty()) return absl::NotFoundError(absl::StrCat("emu: cannot read ", JLLM_EMU_SHIM));
  h = Hash(shim, h);
  for (const KernelSourceFile& f : KernelSourceFiles()) h = Hash(f.text, Hash(f.name, h));
  for (const auto& [name, text] : options_.extra_sources) h = Hash(text, Hash(name, h));
  const std::string dir = absl::StrCat(options_.cache_dir, "/", absl::StrFormat("%016x", h));
  const std::string so = dir + "/kernel.so";
  if (fs::exists(so)) return compiled_[spec.ModuleKey()] = so;
  // Private sources and output per process and thread: concurrent test processes may compile
  // the same module; the last rename wins whole.
  static std::atomic<int> serial{0};
  const std::string tag = absl::StrCat(getpid(), "_", serial++);
  const std::string src = absl::StrCat(dir, "/src_", tag);
  std::error_code ec;
  fs::create_directories(src, ec);
  if (ec) return absl::InternalError(absl::StrCat("emu: mkdir ", src, ": ", ec.message()));
  for (const KernelSourceFile& f : KernelSourceFiles()) {
    const fs::path p = fs::path(src) / std::string(f.name);
    fs::create_directories(p.parent_path(), ec);
    std::ofstream(p, std::ios::binary) << f.text;
  }
  for (const auto& [name, text] : options_.extra_sources) std::ofstream(fs::path(src) / name, std::ios::binary) << text;
  std::vector<std::string> cmd = {"g++"};
  cmd.insert(cmd.end(), std::begin(kEmuFlags), std::end(kEmuFlags));
  cmd.insert(cmd.end(), {"-shared", "-include", ShimInclude(options_.cache_dir, shim), "-I" + src});
  for (const auto& [name, value] : spec.DefineList()) cmd.push_back(absl::StrCat("-D", name, "=", value));
  const std::string tmp = absl::StrCat(so, ".tmp_", tag);
  const std::string log_path = absl::StrCat(dir, "/log_", tag, ".txt");
  cmd.insert(cmd.end(), {"-x", "c++", src + "/" + spec.source, "-o", tmp});
  const std::string line = absl::StrJoin(cmd, " ") + " 2>" + log_path;
  const int rc = std::system(line.c_str());
  fs::remove_all(src, ec);
  if (rc != 0) {
    std::ifstream log(log_path);
    const std::string text((std::istreambuf_iterator<char>(log)), {});
    return absl::InternalError(absl::StrCat("emu: g++ failed for ", spec.label, ":\n", text.substr(0, 4000)));
  }
  fs::remove(log_path, ec);
  fs::rename(tmp, so, ec);
  if (ec) return absl::InternalError(absl::StrCat("emu: rename ", so, ": ", ec.message()));
  return compiled_[spec.ModuleKey()] = so;
}

absl::Status EmuDevice::Prepare(absl::Span<const KernelSpec> specs) {
  // g++ runs in a thread each, a few at a time.
  const unsigned width = std::max(2u, std::thread::hardware_concurrency());
  std::vector<absl::Status> results(specs.size());
  std::vector<std::string> paths(specs.size());
  // CompiledPath touches compiled_: fill it after the parallel compiles from a private copy.
  auto compile_one = [&](size_t i) {
    EmuDevice scratch(options_);
    absl::StatusOr<std::string> p = scratch.CompiledPath(specs[i]);
    results[i] = p.status();
    if (p.ok()) paths[i] = *p;
  };
  for (size_t begin = 0; begin < specs.size(); begin += width) {
    std::vector<std::thread> threads;
    for (size_t i = begin; i < std::min(specs.size(), begin + width); ++i) threads.emplace_back(compile_one, i);
    for (auto& t : threads) t.join();
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    RETURN_IF_ERROR(results[i]);
    compiled_[specs[i].ModuleKey()] = paths[i];
  }
  return absl::OkStatus();
}

absl::StatusOr<KernelHandle> EmuDevice::LoadKernel(const KernelSpec& spec, std::string_view) {
  ASSIGN_OR_RETURN(const std::string so, CompiledPath(spec));
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return absl::InternalError(absl::StrCat("emu: dlopen ", so, ": ", dlerror()));
  Kernel k;
  k.library = lib;
  k.label = spec.label;
  k.key = spec.ModuleKey();
  k.max_smem = spec.smem;
  k.entry = reinterpret_cast<void (*)(const void*, uint64_t*)>(dlsym(lib, (spec.kernel + "_emu_entry").c_str()));
  k.launch = reinterpret_cast<decltype(k.launch)>(dlsym(lib, "emu_launch"));
  if (k.entry == nullptr || k.launch == nullptr) {
    dlclose(lib);
    return absl::NotFoundError(absl::StrCat("emu: ", so, " has no kernel ", spec.kernel));
  }
  if (spec.smem > props_.shared_per_block_optin) {
    dlclose(lib);
    return absl::ResourceExhaustedError(absl::StrCat(spec.label, " needs ", spec.smem,
                                                     " bytes of shared memory per block"));
  }
  kernels_.push_back(k);
  return static_cast<KernelHandle>(kernels_.size() - 1);
}

absl::Status EmuDevice::Run(const Recorded& r) {
  const Kernel& k = kernels_[r.kernel];
  if (static_cast<int64_t>(r.smem) > k.max_smem && r.smem > 48 * 1024) {
    return absl::InvalidArgumentError(absl::StrCat("emu: ", k.label, " launched with ", r.smem,
                                                   " bytes of shared memory, more than it was loaded for"));
  }
  if (r.grid.x == 0 || r.grid.y == 0 || r.grid.z == 0) {
    return absl::InvalidArgumentError(absl::StrCat("emu: ", k.label, ": empty grid"));
  }
  ++launches_;
  if (k.launch(k.entry, r.grid.x, r.grid.y, r.grid.z, r.block.x, r.smem, r.args.data(), r.trace,
               static_cast<unsigned>(std::max(1, options_.resident_ctas)), options_.warps_in_turn ? 1u : 0u) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("emu: ", k.label, ": bad block of ", r.block.x, " threads"));
  }
  return absl::OkStatus();
}

// The driver's limits for a 2-D map of 8-byte elements (cuTensorMapEncodeTiled), checked here so
// that a geometry the GPU would refuse fails on the CPU too; then the emulation's own encoding.
absl::Status EmuDevice::EncodeTileMap(const TileBox& box, TileMap* out) {
  const auto base = reinterpret_cast<uintptr_t>(box.base);
  if (base % 16 != 0 || box.row_bytes <= 0 || box.row_bytes % 8 != 0 || box.rows <= 0 || box.row_stride % 16 != 0 ||
      box.row_stride < box.row_bytes || box.box_bytes <= 0 || box.box_bytes % 16 != 0 || box.box_bytes / 8 > 256 ||
      box.box_rows <= 0 || box.box_rows > 256) {
    return absl::InvalidArgumentError(
        absl::StrFormat("emulated cuTensorMapEncodeTiled: %lld rows of %lld bytes, stride %lld, boxes of %d x %d at %p",
                        box.rows, box.row_bytes, box.row_stride, box.box_bytes, box.box_rows, box.base));
  }
  *out = TileMap{};
  EmuTileMap m{kEmuTileMapMagic, box};
  std::memcpy(out, &m, sizeof(m));
  return absl::OkStatus();
}

absl::Status EmuDevice::Launch(KernelHandle k, Dim3 grid, Dim3 block, size_t dynamic_smem,
                               const void* args, size_t args_bytes) {
  if (k < 0 || k >= static_cast<int>(kernels_.size())) return absl::InvalidArgumentError("emu: bad kernel");
  Recorded r{k, grid, block, dynamic_smem,
             std::vector<uint8_t>(static_cast<const uint8_t*>(args), static_cast<const uint8_t*>(args) + args_bytes),
             trace_};
  if (capturing_) {
    capture_.push_back(std::move(r));
    return absl::OkStatus();
  }
  return Run(r);
}

absl::Status EmuDevice::BeginCapture() {
  if (capturing_) return absl::FailedPreconditionError("emu: already capturing");
  capturing_ = true;
  capture_.clear();
  return absl::OkStatus();
}

absl::StatusOr<GraphHandle> EmuDevice::EndCapture() {
  if (!capturing_) return absl::FailedPreconditionError("emu: not capturing");
  capturing_ = false;
  graphs_.push_back(std::move(capture_));
  graph_live_.push_back(true);
  capture_.clear();
  return static_cast<GraphHandle>(graphs_.size() - 1);
}

void EmuDevice::DestroyGraph(GraphHandle g) {
  if (g < 0 || g >= static_cast<int>(graphs_.size())) return;
  graphs_[g].clear();
  graph_live_[g] = false;
}

absl::Status EmuDevice::Replay(GraphHandle g) {
  if (g < 0 || g >= static_cast<int>(graphs_.size()) || !graph_live_[g]) {
    return absl::InvalidArgumentError("emu: a graph that was destroyed or never captured");
  }
  for (const Recorded& r : graphs_[g]) RETURN_IF_ERROR(Run(r));
  return absl::OkStatus();
}

absl::StatusOr<EventHandle> EmuDevice::CreateEvent() {
  events_.push_back(0);
  return static_cast<EventHandle>(events_.size() - 1);
}
absl::Status EmuDevice::Record(EventHandle e) {
  events_[e] = NowMs();
  return absl::OkStatus();
}
absl::StatusOr<float> EmuDevice::ElapsedMs(EventHandle from, EventHandle to) {
  return static_cast<float>(events_[to] - events_[from]);
}

}  // namespace jllm::cuda::emu
