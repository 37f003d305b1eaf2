// CPU emulation harness for the GEMV kernels: runs the real kernel source (one std::thread per
// CUDA thread, CTAs one after another, cp.async as a plain copy) on random valid blocks and checks
// every row against dequantizers written independently from FORMATS.md. A development aid for
// index math when no GPU is at hand; the gpu test is the real check. Driven by run_emulation.sh.
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>
#include "jllm_common.cuh"  // the shim + the real helpers (run_emulation.sh)

thread_local dim3 threadIdx, blockIdx;
dim3 gridDim, blockDim;
unsigned char* emu_dynamic_smem;
unsigned emu_dynamic_smem_bytes;

static std::barrier<>* g_cta;
struct Warp { std::barrier<>* bar; float f[32]; unsigned u[32]; };
static std::vector<Warp> g_warps;

void __syncthreads() { g_cta->arrive_and_wait(); }
float __shfl_xor_sync(unsigned, float v, int off) {
  Warp& w = g_warps[threadIdx.x / 32]; int lane = threadIdx.x % 32;
  w.f[lane] = v; w.bar->arrive_and_wait(); float r = w.f[lane ^ off]; w.bar->arrive_and_wait(); return r;
}
unsigned __shfl_xor_sync(unsigned, unsigned v, int off) {
  Warp& w = g_warps[threadIdx.x / 32]; int lane = threadIdx.x % 32;
  w.u[lane] = v; w.bar->arrive_and_wait(); unsigned r = w.u[lane ^ off]; w.bar->arrive_and_wait(); return r;
}
float emu_half_to_float(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  float v;
  if (e == 0) v = std::ldexp(float(m), -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = std::ldexp(float(m + 1024), e - 25);
  return s ? -v : v;
}

extern "C" void EMU_KERNEL(const jllm_u8* w, const float* x, float* y);

// Independent dequantizers, written from FORMATS.md section 2.
static void DequantQ4K(const uint8_t* b, float* out) {
  uint16_t dh, mh; std::memcpy(&dh, b, 2); std::memcpy(&mh, b + 2, 2);
  const float d = emu_half_to_float(dh), dmin = emu_half_to_float(mh);
  const uint8_t* s = b + 4; const uint8_t* qs = b + 16;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    if (j < 4) { sc = s[j] & 63; m = s[j + 4] & 63; }
    else { sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4); m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4); }
    const int c = j / 2, hi = j % 2;
    for (int l = 0; l < 32; ++l) {
      const int q = hi ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 15);
      out[64 * c + 32 * hi + l] = d * sc * q - dmin * m;
    }
  }
}
static void DequantQ6K(const uint8_t* b, float* out) {
  const uint8_t* ql = b; const uint8_t* qh = b + 128; const int8_t* sc = (const int8_t*)(b + 192);
  uint16_t dh; std::memcpy(&dh, b + 208, 2); const float d = emu_half_to_float(dh);
  for (int h = 0; h < 2; ++h) for (int l = 0; l < 32; ++l) {
    const uint8_t* L = ql + 64 * h; const int H = qh[32 * h + l];
    const int q[4] = {(L[l] & 15) | ((H & 3) << 4), (L[l + 32] & 15) | (((H >> 2) & 3) << 4),
                      (L[l] >> 4) | (((H >> 4) & 3) << 4), (L[l + 32] >> 4) | (((H >> 6) & 3) << 4)};
    for (int k = 0; k < 4; ++k) { const int e = 128 * h + 32 * k + l; out[e] = d * sc[e / 16] * (q[k] - 32); }
  }
}

int main(int argc, char** argv) {
  const int rows = JLLM_ROWS, cols = JLLM_COLS, nb = cols / 256;
  const int threads = 32 * JLLM_NRG * JLLM_KS, tile_rows = JLLM_R * JLLM_NRG;
  const int tiles = (rows + tile_rows - 1) / tile_rows;
#ifdef EMU_Q6
  const int block_bytes = 210;
  const int grid = argc > 1 ? std::min(atoi(argv[1]), tiles) : tiles;
  const int units = 8 * nb, warps = JLLM_NRG * JLLM_KS;
  emu_dynamic_smem_bytes = 8 * units * 16 + (warps * JLLM_R * 4 + 15) / 16 * 16 +
                           JLLM_STAGES * tile_rows * nb * 210;
#else
  const int block_bytes = 144;
  const int grid = tiles;
  emu_dynamic_smem_bytes = 0;
#endif
  std::vector<uint8_t> dyn(emu_dynamic_smem_bytes + 64);
  emu_dynamic_smem = dyn.data() + (16 - reinterpret_cast<uintptr_t>(dyn.data()) % 16) % 16;
  const size_t row_bytes = size_t(nb) * block_bytes, total = row_bytes * rows;
  std::vector<uint8_t> wraw(total + 64);
  uint8_t* w = wraw.data() + (16 - reinterpret_cast<uintptr_t>(wraw.data()) % 16) % 16;
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < total; ++i) w[i] = uint8_t(rng());
  for (int b = 0; b < rows * nb; ++b) {
    uint8_t* blk = w + size_t(b) * block_bytes;
    auto f16 = [&](int lo, int hi, bool neg) { return uint16_t((neg ? 0x8000 : 0) | ((lo + rng() % (hi - lo + 1)) << 10) | (rng() & 1023)); };
#ifdef EMU_Q6
    uint16_t d = f16(3, 7, rng() & 1); std::memcpy(blk + 208, &d, 2);
#else
    uint16_t d = f16(5, 9, false), m = f16(4, 8, false); std::memcpy(blk, &d, 2); std::memcpy(blk + 2, &m, 2);
#endif
  }
  std::vector<float> xraw(cols + 8);
  float* x = xraw.data() + (16 - reinterpret_cast<uintptr_t>(xraw.data()) % 16) % 16 / 4;
  std::uniform_real_distribution<float> u(-1, 1);
  for (int i = 0; i < cols; ++i) x[i] = u(rng);
  std::vector<float> y(rows, NAN);

  gridDim.x = grid; blockDim.x = threads;
  for (int b = 0; b < grid; ++b) {
    std::barrier<> cta(threads);
    g_cta = &cta;
    std::vector<std::barrier<>*> bars;
    g_warps.assign(threads / 32, Warp{});
    for (auto& wp : g_warps) wp.bar = new std::barrier<>(32);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { threadIdx.x = t; blockIdx.x = b; EMU_KERNEL(w, x, y.data()); });
    for (auto& t : ts) t.join();
    for (auto& wp : g_warps) delete wp.bar;
  }
  std::vector<float> row(cols);
  int bad = 0; double worst = 0;
  for (int r = 0; r < rows; ++r) {
    for (int b = 0; b < nb; ++b) {
#ifdef EMU_Q6
      DequantQ6K(w + r * row_bytes + b * 210, row.data() + 256 * b);
#else
      DequantQ4K(w + r * row_bytes + b * 144, row.data() + 256 * b);
#endif
    }
    double dot = 0, sc = 0;
    for (int i = 0; i < cols; ++i) { dot += double(row[i]) * x[i]; sc += std::fabs(double(row[i]) * x[i]); }
    const double rel = std::fabs(y[r] - dot) / sc;
    if (!(rel <= 1e-4)) { if (++bad < 5) std::printf("row %d: kernel %g ref %g rel %g\n", r, y[r], dot, rel); }
    if (rel > worst) worst = rel;
  }
  std::printf("%s rows=%d cols=%d grid=%d threads=%d: %d bad rows, worst rel %.3g\n", argv[0], rows, cols, grid, threads, bad, worst);
  return bad != 0;
}
