// Test helper: writes safetensors images independently of the reader under test. The header is
// built as JSON text with offsets computed here; the data are the given bytes, in order.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace jllm::gguf::testing {

struct StEntry {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// 8-byte little-endian length, then `header` as given, then `data`.
inline std::vector<uint8_t> RawSafetensors(const std::string& header, const std::vector<uint8_t>& data,
                                           uint64_t length_field = UINT64_MAX) {
  const uint64_t len = length_field == UINT64_MAX ? header.size() : length_field;
  std::vector<uint8_t> out(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(len >> (8 * i));
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

// A well-formed file: tensors laid out back to back in the order given, header padded with
// spaces to a multiple of 8 (as the safetensors library writes it).
inline std::vector<uint8_t> BuildSafetensors(const std::vector<StEntry>& entries,
                                             const std::map<std::string, std::string>& metadata = {}) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<uint8_t> data;
  for (const StEntry& e : entries) {
    const uint64_t begin = data.size();
    data.insert(data.end(), e.bytes.begin(), e.bytes.end());
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  return RawSafetensors(text, data);
}

inline std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline std::vector<uint8_t> U16Bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace jllm::gguf::testing
