// What jllm-run would refuse about a plan, checked by jllm-compile before it writes one, so a
// model whose tokenizer cannot run fails at compile time with the GGUF named, not later.
#pragma once

#include "absl/status/status.h"
#include "runtime/plan_file.h"

namespace jllm::runtime {

// OK if jllm-run can load the plan's tokenizer: it builds (Tokenizer::Create refuses e.g.
// tokenizer.ggml.model other than gpt2, a byte-level vocabulary missing a byte, broken merges),
// its strings fit the plan format, and its vocabulary is the graph's.
absl::Status CheckPlanTokenizer(const Plan& plan);

// OK if `jllm-run --chat` can render the plan's chat template (only ChatML is supported). A
// failure here does not stop plain prompts, so jllm-compile reports it as a warning.
absl::Status CheckPlanChatTemplate(const Plan& plan);

}  // namespace jllm::runtime
