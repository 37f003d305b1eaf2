// The tokenizer section of a plan file: gguf::TokenizerData in binary, bounds-checked on read.
//
// Layout: model, pre (strings), tokens (count, strings), token types (count = tokens, i32
// each, 1..6), merges (count, strings), bos/eos/pad (u8 present + u32 id, each < tokens),
// add_bos (u8), chat template (string). Strings are u32 length + bytes.
#pragma once

#include "absl/status/statusor.h"
#include "frontends/gguf/tokenizer_data.h"
#include "ir/byte_io.h"

namespace jllm::runtime {

void WriteTokenizerData(const gguf::TokenizerData& data, ir::ByteWriter& w);
absl::StatusOr<gguf::TokenizerData> ReadTokenizerData(ir::ByteReader& r);

}  // namespace jllm::runtime
