// Writes GGUF v3 files that GgufFile and other GGUF tools accept: header, KVs, tensor infos,
// padding to the alignment, then tensor data contiguous in info order, each padded.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "frontends/gguf/gguf_file.h"

namespace jllm::gguf {

class GgufWriter {
 public:
  // `alignment` must be a power of two (checked at Write()). If it is not the default 32 and no
  // general.alignment key is set, Write() adds that key (UINT32) first; a general.alignment key
  // that disagrees with `alignment` is an error.
  explicit GgufWriter(uint32_t alignment = 32);

  // Metadata, written in the order added; a duplicate key is an error at Write(), and so is a
  // Value whose payload does not match its type or does not fit it (e.g. UINT8 300).
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
  // (1 to 4 entries); trailing 1s are not written (n_dims as ggml_n_dims). Errors: name of 64
  // bytes or more, duplicate name, ne[0] not a multiple of the block size, negative ne.
  using Filler = std::function<absl::Status(uint8_t* dst, uint64_t nbytes)>;
  absl::Status AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne, Filler fill);
  absl::Status AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                         std::vector<uint8_t> bytes);

  // Writes `path` through fileio::OutputFile: a unique temporary file renamed over it, so on
  // any error `path` is left as it was and no temporary file remains; a `path` that is one of
  // `inputs` (the files the data come from) is refused before anything is computed. Tensor
  // data stream through one reusable buffer (the size of the largest tensor), so the model is
  // never held in memory whole. The writer can be reused.
  absl::Status Write(const std::string& path, absl::Span<const std::string> inputs = {});

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
