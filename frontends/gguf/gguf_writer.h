// Writes GGUF v3 files that GgufFile and other GGUF tools accept: header, KVs, tensor infos,
// padding to the alignment, then tensor data contiguous in info order, each padded.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "frontends/gguf/gguf_file.h"

namespace jllm::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32);

  // Metadata, written in the order added; a duplicate key is an error at Write().
  void SetUint32(std::string key, uint32_t v);
  void SetInt32(std::string key, int32_t v);
  void SetUint64(std::string key, uint64_t v);
  void SetFloat32(std::string key, float v);
  void SetBool(std::string key, bool v);
  void SetString(std::string key, std::string v);
  void SetStringArray(std::string key, std::vector<std::string> v);
  void SetInt32Array(std::string key, std::vector<int32_t> v);
  void SetFloat32Array(std::string key, std::vector<float> v);
  void SetValue(std::string key, Value v);  // any value, e.g. copied from another file

  // A tensor whose bytes (exactly nbytes for type and dims) come from `fill` at Write() time,
  // so big models stream to disk without being held in memory. `ne` lists ne[0], ne[1], ...
  using Filler = std::function<absl::Status(uint8_t* dst, uint64_t nbytes)>;
  absl::Status AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne, Filler fill);
  absl::Status AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                         std::vector<uint8_t> bytes);

  absl::Status Write(const std::string& path);

 private:
  struct PendingTensor {
    TensorInfo info;
    Filler fill;
  };
  uint32_t alignment_;
  std::vector<KeyValue> kvs_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace jllm::gguf
