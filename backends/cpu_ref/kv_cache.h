// One layer's KV cache in the element type the graph chose for it (ir/types.h):
//  - f16: K and V rows stored as IEEE half;
//  - f32: K and V rows stored exactly (for validation against float32 references);
//  - int8: each (position, kv head) row of D values as int8 with one f16 scale,
//    d = max|x| / 127, q = round(x · (1/d)) (the arithmetic of ggml's Q8_0 reference
//    quantizer), read back as q · d.
// Attention reads it back in f32.
#pragma once

#include <cstdint>
#include <memory>

#include "ir/types.h"

namespace jllm::cpu_ref {

class KvCache {
 public:
  // Reserves the storage without touching it: pages are committed as positions are written,
  // so a large context costs memory only as it fills (reads only ever see written positions).
  KvCache(ir::KvDType type, int64_t n_pos, int64_t n_head_kv, int64_t head_dim);

  // Bytes one position takes (K and V rows, int8 scales included).
  static int64_t BytesPerPosition(ir::KvDType type, int64_t n_head_kv, int64_t head_dim);

  ir::KvDType type() const { return type_; }
  int64_t n_pos() const { return n_pos_; }
  int64_t n_head_kv() const { return n_head_kv_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t row_width() const { return width_; }  // n_head_kv · head_dim

  // Stores the K and V rows (row_width() values each) of position `pos` < n_pos().
  void Write(int64_t pos, const float* k, const float* v);
  // Reads back the K (which = 0) or V (which = 1) row of `pos` as f32.
  void Read(int which, int64_t pos, float* out) const;

 private:
  ir::KvDType type_;
  int64_t n_pos_;
  int64_t n_head_kv_;
  int64_t head_dim_;
  int64_t width_;
  std::unique_ptr<uint16_t[]> half_;    // f16: [2][n_pos][width]
  std::unique_ptr<float[]> full_;       // f32: [2][n_pos][width]
  std::unique_ptr<int8_t[]> q_;         // int8: [2][n_pos][width]
  std::unique_ptr<uint16_t[]> scales_;  // int8: [2][n_pos][n_head_kv], f16
};

}  // namespace jllm::cpu_ref
