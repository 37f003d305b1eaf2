// Test helper: assembles GGUF bytes field by field, independently of GgufWriter, so tests can
// state the exact expected layout and craft malformed files.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jllm::gguf::testing {

class RawGguf {
 public:
  RawGguf& U8(uint8_t x) { return Le(x, 1); }
  RawGguf& U16(uint16_t x) { return Le(x, 2); }
  RawGguf& U32(uint32_t x) { return Le(x, 4); }
  RawGguf& U64(uint64_t x) { return Le(x, 8); }
  RawGguf& I64(int64_t x) { return Le(static_cast<uint64_t>(x), 8); }
  RawGguf& F32(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return U32(u);
  }
  RawGguf& F64(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return U64(u);
  }
  RawGguf& Str(std::string_view s) {
    U64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  RawGguf& Raw(const std::vector<uint8_t>& b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return *this;
  }
  RawGguf& Zeros(size_t n) {
    bytes.insert(bytes.end(), n, 0);
    return *this;
  }
  // Zero bytes up to the next multiple of `align` of the current size.
  RawGguf& PadTo(size_t align) { return Zeros((align - bytes.size() % align) % align); }

  // "GGUF", version, n_tensors, n_kv.
  RawGguf& Header(uint32_t version, int64_t n_tensors, int64_t n_kv) {
    bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
    return U32(version).I64(n_tensors).I64(n_kv);
  }
  // A tensor info record; n_dims = ne.size().
  RawGguf& TensorInfo(std::string_view name, const std::vector<int64_t>& ne, uint32_t type,
                      uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(ne.size()));
    for (int64_t n : ne) I64(n);
    return U32(type).U64(offset);
  }

  size_t size() const { return bytes.size(); }
  std::vector<uint8_t> bytes;

 private:
  RawGguf& Le(uint64_t x, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(x >> (8 * i)));
    return *this;
  }
};

// A small valid file: 6 KVs (general.alignment = 32 among them), then tensors "a" (F32 {4, 2},
// 32 bytes) and "b" (Q8_0 {32}, 34 bytes), each padded to 32.
struct SmallFile {
  std::vector<uint8_t> bytes;
  size_t data_offset = 0;  // start of the blob
  size_t data_end = 0;     // end of the last tensor's bytes (before its padding)
};

inline SmallFile SmallValidFile() {
  RawGguf g;
  g.Header(3, 2, 6);
  g.Str("general.architecture").U32(8).Str("qwen3");
  g.Str("general.alignment").U32(4).U32(32);
  g.Str("test.count").U32(5).U32(static_cast<uint32_t>(-7));
  g.Str("test.flag").U32(7).U8(1);
  g.Str("test.scale").U32(6).F32(0.5f);
  g.Str("test.list").U32(9).U32(8).U64(2).Str("ab").Str("c");
  g.TensorInfo("a", {4, 2}, /*F32*/ 0, 0);
  g.TensorInfo("b", {32}, /*Q8_0*/ 8, 32);
  g.PadTo(32);
  SmallFile f;
  f.data_offset = g.size();
  for (int i = 0; i < 32; ++i) g.U8(static_cast<uint8_t>(i + 1));
  for (int i = 0; i < 34; ++i) g.U8(static_cast<uint8_t>(100 + i));
  f.data_end = g.size();
  g.PadTo(32);
  f.bytes = std::move(g.bytes);
  return f;
}

}  // namespace jllm::gguf::testing
