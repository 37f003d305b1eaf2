#include "runtime/plan_check.h"

#include "absl/strings/str_cat.h"
#include "ir/status.h"
#include "runtime/plan_tokenizer_io.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"

namespace jllm::runtime {

absl::Status CheckPlanTokenizer(const Plan& plan) {
  RETURN_IF_ERROR(CheckTokenizerFitsPlan(plan.tokenizer));
  ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::Create(plan.tokenizer));
  if (tok->n_vocab() != plan.graph.config.n_vocab) {
    return absl::InvalidArgumentError(absl::StrCat("the tokenizer has ", tok->n_vocab(),
                                                   " tokens but the model's vocabulary is ",
                                                   plan.graph.config.n_vocab));
  }
  return absl::OkStatus();
}

absl::Status CheckPlanChatTemplate(const Plan& plan) {
  return ChatTemplate::FromGgufTemplate(plan.tokenizer.chat_template).status();
}

}  // namespace jllm::runtime
