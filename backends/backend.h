// The one interface the runtime sees backends through. A backend executes a lowered ir::Graph:
// it owns the weights in its own memory, the KV cache storage (element type per layer from
// graph.kv_dtypes) and the scratch space, and runs one step at a time.
//
//   auto be = CreateCpuRefBackend();
//   RETURN_IF_ERROR(be->Load(graph, weights, {.max_context = 4096}));
//   RETURN_IF_ERROR(be->Forward(prompt_ids, /*pos0=*/0, LogitsRows::kAll, &logits));
//   RETURN_IF_ERROR(be->Forward({next}, /*pos0=*/prompt_ids.size(), LogitsRows::kLast, &logits));
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"

namespace jllm {

// Where a backend gets weight bytes: the GGUF data blob (memory-mapped by the runtime).
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // The bytes of `w` (exactly w.nbytes); an error if they are not available.
  virtual absl::StatusOr<absl::Span<const uint8_t>> Bytes(const ir::WeightRef& w) const = 0;
};

// A WeightSource over one contiguous blob in memory (weights addressed by WeightRef::offset).
class BlobWeightSource : public WeightSource {
 public:
  explicit BlobWeightSource(absl::Span<const uint8_t> blob) : blob_(blob) {}
  absl::StatusOr<absl::Span<const uint8_t>> Bytes(const ir::WeightRef& w) const override;

 private:
  absl::Span<const uint8_t> blob_;
};

struct BackendOptions {
  int64_t max_context = 4096;  // KV cache positions to allocate
  int n_threads = 0;           // CPU threads (0: all cores)
};

enum class LogitsRows { kLast, kAll };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // Prepares to run `graph`: checks it (ir::Verify), takes the weights it references, allocates
  // the KV cache for options.max_context positions. Ops it cannot run are an error naming them.
  virtual absl::Status Load(const ir::Graph& graph, const WeightSource& weights,
                            const BackendOptions& options) = 0;

  // Runs `tokens` at positions pos0, pos0+1, …; the cache must hold positions [0, pos0) from
  // earlier steps (later positions are overwritten). Writes f32 logits [rows × n_vocab]: for
  // every token (kAll) or only the last (kLast). pos0 + tokens.size() must be <= max_context.
  virtual absl::Status Forward(absl::Span<const int32_t> tokens, int64_t pos0, LogitsRows rows,
                               std::vector<float>* logits) = 0;
};

}  // namespace jllm
