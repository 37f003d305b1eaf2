// jllm's IR in one include, and a map of where things are.
//
//   ir/types.h            DType (f32 f16 i32 i8), Shape with symbolic T and S, ValueType,
//                         KvDType (f16 | int8 | f32) of the KV cache.
//   ir/model_config.h     ModelConfig: the Qwen3 hyper-parameters; KV bytes per token.
//   ir/ops.h              OpKind, the op signature table, typed attribute structs (Attrs).
//   ir/graph.h            WeightRef (GGUF tensor: type, ne[], offset, nbytes), Value, Node,
//                         Graph (build, look up, rewrite: ProducerIndex, Users, Compact, ...).
//   ir/shape_inference.h  InferOutputTypes: output types of a node, and its per-node checks.
//   ir/verify.h           Verify: the invariants every pass and loader keeps.
//   ir/text.h             Print / Parse: the readable text form (--dump-ir, pass tests).
//   ir/serialize.h        WriteGraph / ReadGraph: the binary form inside plan.bin.
//   ir/byte_io.h          ByteWriter / bounds-checked ByteReader, for any binary file section.
//   ir/ggml_type.h        ggml tensor types and block sizes (namespace jllm).
//
// A backend walks graph.nodes in order; for each node it switches on node.op, reads
// node.attrs_as<XAttrs>(), the input/output value types from graph.type_of(id), and the
// weights' byte ranges from graph.weights[id] (MatMulMembers / MatMulNormWeight for matmuls).
// The graph inputs are named "tokens" and "pos", the outputs "logits" and "token".
#pragma once

#include "ir/byte_io.h"
#include "ir/ggml_type.h"
#include "ir/graph.h"
#include "ir/model_config.h"
#include "ir/ops.h"
#include "ir/serialize.h"
#include "ir/shape_inference.h"
#include "ir/text.h"
#include "ir/types.h"
#include "ir/verify.h"
