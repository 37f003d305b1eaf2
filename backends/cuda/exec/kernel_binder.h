// Fills a kernel's argument struct (kernels/kernel_args.h) for one launch of a lowered node:
// each operand of the launch resolved to the device buffer that holds it in this step.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/exec/memory_plan.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/lowering/lowering.h"
#include "ir/graph.h"

namespace jllm::cuda {

struct LayerCache {
  void* k = nullptr;
  void* v = nullptr;
  unsigned short* k_scales = nullptr;  // int8 only
  unsigned short* v_scales = nullptr;
};

// Device addresses of everything the launches read and write.
struct DeviceBuffers {
  uint8_t* arena = nullptr;
  uint8_t* weights = nullptr;
  std::vector<LayerCache> caches;  // by layer
  int* tokens = nullptr;           // prefill inputs [max_step_tokens]
  int* positions = nullptr;
  StepState* state = nullptr;
  float* logits_row = nullptr;     // [V]: the last row, what the sampler reads
  float* logits_all = nullptr;     // [max_step_tokens, V], allocated on first use
  int* context_tokens = nullptr;   // [max_context]
  float* sample_work = nullptr;
  double* sample_weights = nullptr;
  unsigned* sample_stamps = nullptr;
  void* sample_params = nullptr;   // a SamplingParams
  float* workspace = nullptr;
  unsigned* counters = nullptr;
  int max_context = 0;
};

enum class Phase { kDecode, kPrefill, kPrefillAllRows };

// Encodes a tile map (DeviceApi::EncodeTileMap) for a launch that reads its weights through one.
using TileMapEncoder = std::function<absl::Status(const TileBox&, TileMap*)>;

// The bytes of the argument struct for `launch` of node `node` (-1 for the sampler).
absl::StatusOr<std::vector<uint8_t>> BindArgs(const ir::Graph& graph, const MemoryPlan& plan,
                                              const DeviceBuffers& buffers, int node,
                                              const Launch& launch, Phase phase, int64_t n_tokens,
                                              const TileMapEncoder& encode_tile_map);

}  // namespace jllm::cuda
