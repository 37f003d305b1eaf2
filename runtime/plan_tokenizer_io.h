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

// OK if ReadTokenizerData will take `data` back: every string within the length limits the
// reader enforces (token text, merges, model and pre names, chat template). jllm-compile checks
// this before writing a plan, so a plan it wrote is never refused when read.
absl::Status CheckTokenizerFitsPlan(const gguf::TokenizerData& data);

}  // namespace jllm::runtime
