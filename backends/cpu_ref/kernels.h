// The arithmetic of every op on plain f32 rows, with the rounding choices of ggml's CPU
// reference where they matter (FORMATS.md §5): RMSNorm sums squares in double; RoPE angles are
// built in float as θ_{i+1} = θ_i·powf(base, −2/n_rot); softmax sums in double.
// No threading here: the executor splits rows over threads.
#pragma once

#include <cmath>
#include <cstdint>

namespace jllm::cpu_ref {

// Σ a[i]·b[i] in f32, with independent partial sums so the compiler can vectorize it.
float Dot(const float* a, const float* b, int64_t n);

// y = x / sqrt(mean(x²) + eps) · gamma over n values (y may alias x).
void RmsNormRow(const float* x, const float* gamma, float eps, int64_t n, float* y);

// cos/sin of the n_rot/2 NEOX angles at position `pos` (arrays of n_rot/2 floats).
void RopeAngles(int64_t pos, int64_t n_rot, float freq_base, float freq_scale, float* cos_out,
                float* sin_out);
// Rotates one head in place: pair i = (x_i, x_{i+n_rot/2}) for i < n_rot/2; dims >= n_rot
// are left as they are.
void RopeHead(float* x, int64_t n_rot, const float* cos_t, const float* sin_t);

// silu(g)·u, silu(g) = g / (1 + e^-g).
inline float SwiGlu(float g, float u) { return g / (1.0f + std::exp(-g)) * u; }

// In place: p[j] = e^(s[j] − max) / Σ e^(s[k] − max), the sum accumulated in double.
void SoftmaxInPlace(float* s, int64_t n);

// y[o] = Dot(W row o, x) for o in [o_begin, o_end), for each of `t_rows` rows of x (stride k)
// into y (stride y_stride). W is [n, k] row-major (ggml {k, n}).
void MatVecRows(const float* w, int64_t k, int64_t o_begin, int64_t o_end, const float* x,
                int64_t t_rows, float* y, int64_t y_stride);

}  // namespace jllm::cpu_ref
