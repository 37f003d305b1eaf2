// Internal: fills a GgufFile from its mapped bytes, validating every field before use.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "frontends/gguf/byte_cursor.h"
#include "frontends/gguf/gguf_file.h"

namespace jllm::gguf {

class GgufParser {
 public:
  explicit GgufParser(GgufFile& file) : f_(file), cur_(file.map_, file.size_) {}
  absl::Status Parse();

 private:
  absl::Status ParseHeader();
  absl::Status CheckCountsFit();
  absl::Status ParseKv(uint64_t index, absl::flat_hash_set<std::string_view>& seen);
  absl::Status ReadValue(uint32_t type_id, Value* v);
  absl::Status ReadScalar(ValueType t, Value* v);
  absl::Status ReadArray(Value* v);
  absl::Status ReadAlignment();
  absl::Status ParseTensorInfo(uint64_t index, absl::flat_hash_set<std::string_view>& seen);
  absl::Status CheckTensorData();

  // "PATH: what" as InvalidArgument.
  absl::Status Error(absl::string_view what) const;

  GgufFile& f_;
  ByteCursor cur_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

}  // namespace jllm::gguf
