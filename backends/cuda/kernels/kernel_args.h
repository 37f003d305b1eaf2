// The argument struct of every jllm kernel: one struct per kernel, passed by value, filled by the
// host binder (backends/cuda/exec/kernel_binder.cc) and read by the kernel. Compiled by host C++
// and by NVRTC, so it holds only pointers and plain numbers and includes no header.
//
// Shapes, types and fusion flags are compile-time constants of each kernel (the -D constants
// of its KernelSpec); only what changes between steps or buffers is here.
#pragma once

namespace jllm::cuda {

// Per-step values the host sets (prefill) or the sampler advances (decode), in device memory so
// that a captured decode graph replays unchanged.
struct StepState {
  int token;      // decode: the token fed at this step; the sampler writes the next one here
  int pos;        // decode: its position; the sampler advances it
  unsigned serial;  // sampling calls so far (the repetition penalty's dedupe stamp)
  unsigned error;   // bit flags a kernel sets on bad input (kStepError*); the host checks them
};
inline constexpr unsigned kStepErrorTokenRange = 1u;  // a token id outside the vocabulary

// Qwen3's q/k RMSNorm + RoPE + KV append (ir's qk_norm_rope_kv_append) done inside another
// kernel: decode attention (attention_decode.cu, JLLM_FUSED_HEAD) or the QKV GEMV's tail
// (gemv.cu, JLLM_HEAD). Its inputs, the caches it appends to, and its attributes.
struct FusedHeadArgs {
  const float* xq;
  const float* q_gamma;
  const float* xk;
  const float* k_gamma;
  const float* xv;
  void* k_cache;  // [Hkv][max_ctx][D] of the cache element type
  void* v_cache;
  unsigned short* k_scales;  // int8 caches: [Hkv][max_ctx] fp16
  unsigned short* v_scales;
  float eps;
  float rope_step;   // base^(-2/n_rot), as HeadOpsArgs
  float rope_scale;  // freq_scale
};

// A 2-D tiled view of a weight matrix for the copy engine (sm_90 tensor-map copies, gemv.cu's
// JLLM_TMA): rows of `row_bytes` body bytes (16-byte multiples), `row_stride` bytes apart, read
// in boxes of `box_bytes` × `box_rows`; a box's bytes past a row's body or past the last row
// land as zeros. The lowering gives the geometry, the binder the base.
struct TileBox {
  const void* base;
  long long row_bytes;
  long long rows;
  long long row_stride;
  int box_bytes;
  int box_rows;
};
// The encoded descriptor (DeviceApi::EncodeTileMap): the driver's opaque CUtensorMap on a GPU
// (128 bytes, 128-byte aligned as cuda.h declares it, read by the copy engine from the kernel's
// parameters), or, in the CPU emulation, an EmuTileMap.
struct alignas(128) TileMap {
  unsigned long long words[16];
};
inline constexpr unsigned long long kEmuTileMapMagic = 0x4a4c4c4d54494c45ull;  // "JLLMTILE"
struct EmuTileMap {
  unsigned long long magic;  // kEmuTileMapMagic: a map the emulation encoded (an unset one aborts)
  TileBox box;
};
static_assert(sizeof(EmuTileMap) <= sizeof(TileMap), "the emulation's map fits the descriptor");

// y_m = W_m · x for up to three matrices sharing x (one token), with the fusions of ir's
// MatMulAttrs: RMSNorm of x first (gamma), + residual, or silu(y_0)·y_1 into y[0].
struct GemvArgs {
  const void* w[3];
  const float* x;
  const float* gamma;      // NORM only
  const float* residual;   // RESIDUAL only: added to y[0]
  float* y[3];
  float* partials;         // KSPLIT > 1: [KSPLIT][rows of all members]
  unsigned* counters;      // KSPLIT > 1: one per tile; HEAD: one per head after those; zero between launches
  float eps;
  // HEAD: the next node's head ops in this GEMV's tail, on y[0..2] (head.xq, xk, xv): the
  // rotated q into yq, k and v into the caches at position *pos (gemv.cu, HeadTail).
  FusedHeadArgs head;
  float* yq;
  const int* pos;
  int max_ctx;
  // ARGMAX (the logits of a greedy step): the draw's scratch, the sampler's — a key per CTA in
  // its weights, the ticket in its stamps (geometry::SampleTicketWord, zero between launches) —
  // and the step state it advances, as SampleArgs.
  unsigned long long* draw_keys;
  unsigned* draw_stamps;
  StepState* state;
  TileMap tmap[3];  // TMA: member m's tile map (the ring's boxes of w[m]); else unset
  // EMBED (the step's first GEMV): x is row tokens[0] of `table`, dequantized as embed.cu does;
  // CTA 0 writes it to `y` (the residual stream's first value) and records the token at
  // ctx_tokens[pos[0]]; an out-of-vocabulary id sets the step state's error and reads zeros.
  const void* embed_table;
  const int* embed_tokens;
  int* ctx_tokens;
  float* embed_y;
};

// y = W · x for T tokens (x [T, K], y [T, N]), + residual [T, N].
struct GemmArgs {
  const void* w;
  const void* w2;  // gemm_f16.cu's SwiGLU pair: the up matrix (w the gate); else null
  const float* x;
  const float* residual;
  float* y;
  int n_tokens;
};

// y[t] = row tokens[t] of the table, dequantized; also records tokens[t] at ctx_tokens[pos[t]]
// (the context the sampler's repetition penalty looks back on).
struct EmbedArgs {
  const void* table;
  const int* tokens;
  const int* pos;
  float* y;
  int* ctx_tokens;
  StepState* state;  // error flags
  int n_tokens;
};

// y = x / sqrt(mean(x²) + eps) · gamma over rows of width E, for T rows.
struct RmsNormArgs {
  const float* x;
  const float* gamma;
  float* y;
  float eps;
  int n_tokens;
};

// Up to two weight ranges a latency-bound decode kernel (head_ops, attention) prefetches into L2
// for the GEMVs after it, each CTA its share (jllm_prefetch_l2_share); bytes 0: none.
struct L2Prefetch {
  const void* p[2];
  unsigned long long bytes[2];
};

// Per-head transforms on the heads of one token: q heads (x_q -> y_q) and kv heads (x_k -> K
// cache, x_v -> V cache), each optionally RMS-normed (own gamma) and rotated (NEOX RoPE).
struct HeadOpsArgs {
  const float* xq;
  const float* q_gamma;
  float* yq;
  const float* xk;
  const float* k_gamma;
  const float* xv;
  void* k_cache;        // [Hkv][max_ctx][D] of the cache element type
  void* v_cache;
  unsigned short* k_scales;  // int8 caches: [Hkv][max_ctx] fp16
  unsigned short* v_scales;
  const int* pos;
  int max_ctx;       // cache positions per kv head
  float eps;
  float rope_step;   // base^(-2/n_rot), computed by the host as cpu_ref does
  float rope_scale;  // freq_scale
  int n_tokens;
  L2Prefetch prefetch;  // decode: weights a later kernel reads (JLLM_PREFETCH)
};

// Causal GQA attention over a layer's cache, decode (one token, split over the sequence) and
// prefill (T tokens). out [T, H·D].
struct AttentionArgs {
  const float* q;
  const void* k_cache;
  const void* v_cache;
  const unsigned short* k_scales;
  const unsigned short* v_scales;
  const int* pos;
  float* out;
  float* partials;     // decode: [H][NSPLIT][D + 2] (acc, max, sum)
  unsigned* counters;  // decode: two per kv head (tickets, then attention_mma.cu's grabs), zero between launches
  int max_ctx;         // cache positions per kv head
  float scale;         // applied to q·k before the softmax
  int n_tokens;
  L2Prefetch prefetch;  // decode: weights a later kernel reads (JLLM_PREFETCH)
  // Decode with the head ops fused (JLLM_FUSED_HEAD): q is normed and rotated from head.xq as it
  // is staged, and the CTA whose split holds the new position appends its k and v to the cache.
  FusedHeadArgs head;
};

// Elementwise: y = a + b, or y = silu(a)·b, over n elements.
struct ElementwiseArgs {
  const float* a;
  const float* b;
  float* y;
  long long n;
};

// Sampling of the next token from one row of logits (runtime/sampler semantics).
struct SampleArgs {
  const float* logits;           // [V]
  float* work;                   // [V]: the penalized logits
  double* weights;               // [V]: scratch for the mass-weighted selections (greedy: the
                                 // CTAs' best keys, one a double)
  unsigned* stamps;              // [V + kSampleStampsExtra]: penalty dedupe stamps, then the
                                 // greedy CTAs' ticket (zero at allocation; the last CTA resets it)
  const int* ctx_tokens;         // the context, by position
  const void* params;            // a jllm::SamplingParams (backends/sampling_params.h)
  StepState* state;              // reads pos (of the token whose logits these are); writes the
                                 // sampled token and advances pos to it
};

// read_bandwidth.cu: streams n16 16-byte words from src; one word per CTA to out.
struct ReadBandwidthArgs {
  const void* src;
  unsigned long long n16;
  unsigned* out;
};

// The forms of asking L2 for bytes a later kernel reads: what a latency-bound decode kernel
// prefetches its successor's weights with (JLLM_PREFETCH_FORM, jllm_prefetch_l2_share) and what
// l2_prefetch_probe.cu compares (jllm-bench --probe l2-prefetch), which also loads (the warm
// reference).
enum L2PrefetchForm : int {
  kL2PrefetchLoad = 0,           // every 16-byte word loaded (ld.global.nc): the probe's warm reference
  kL2PrefetchLine = 1,           // prefetch.global.L2 per 128-byte line, by every thread of the CTA
  kL2PrefetchLineEvictLast = 2,  // prefetch.global.L2::evict_last per 128-byte line, likewise
  kL2PrefetchLoad256 = 3,        // one 4-byte ld.global.nc.L2::256B per 256 bytes, likewise
  kL2PrefetchBulk = 4,           // cp.async.bulk.prefetch.L2 (sm_90): the share's default, 1 MB each
};
// l2_prefetch_probe.cu: [src, src + bytes) asked of L2 in one form; the forms that load write one
// word per CTA to out.
struct L2PrefetchProbeArgs {
  const void* src;           // 256-byte aligned
  unsigned long long bytes;  // a multiple of 256
  unsigned chunk;            // kL2PrefetchBulk: bytes per prefetch, a multiple of 16
  int form;                  // an L2PrefetchForm; any other value: none
  unsigned long long spin_ns;  // then CTA 0 holds the kernel open this long (the read waits)
  unsigned* out;
};

}  // namespace jllm::cuda
