#include "frontends/gguf/synth_model.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "frontends/gguf/tokenizer_data.h"
#include "ir/status.h"

namespace jllm::gguf {
namespace {

absl::StatusOr<TokenizerData> LoadTokenizer(const SynthOptions& options, int64_t n_vocab) {
  if (options.tokenizer_dir.empty()) return ByteLevelTokenizerData();
  ASSIGN_OR_RETURN(TokenizerData data, ImportHfTokenizer(options.tokenizer_dir, n_vocab));
  if (static_cast<int64_t>(data.tokens.size()) != n_vocab) {
    return absl::InvalidArgumentError(absl::StrCat(options.tokenizer_dir, ": tokenizer has ",
                                                   data.tokens.size(), " tokens but preset '",
                                                   options.preset, "' needs ", n_vocab));
  }
  return data;
}

}  // namespace

absl::StatusOr<SynthPlan> PlanForOptions(const SynthOptions& options) {
  ASSIGN_OR_RETURN(SynthConfig config, SynthPreset(options.preset));
  if (options.tokenizer_dir.empty()) {
    if (config.preset != "tiny") {
      return absl::InvalidArgumentError(absl::StrCat(
          "preset '", config.preset, "' needs a tokenizer folder (jllm-synth --tokenizer DIR, ",
          "e.g. .deps/qwen3-tokenizer from scripts/setup.sh): its ", config.n_vocab,
          "-token vocabulary sizes token_embd; only 'tiny' has a built-in byte vocabulary"));
    }
    config.n_vocab = static_cast<int64_t>(ByteLevelTokenizerData().tokens.size());
  }
  return PlanSynthModel(config, options.weights);
}

void AddQwen3Metadata(const SynthPlan& plan, GgufWriter& w) {
  const SynthConfig& c = plan.config;
  w.SetString("general.architecture", "qwen3");
  w.SetString("general.name", c.name);
  w.SetUint32("general.file_type", plan.file_type);
  w.SetUint32("general.quantization_version", 2);
  w.SetUint32("qwen3.context_length", c.context_length);
  w.SetUint32("qwen3.embedding_length", c.n_embd);
  w.SetUint32("qwen3.block_count", c.n_layer);
  w.SetUint32("qwen3.feed_forward_length", c.n_ff);
  w.SetUint32("qwen3.attention.head_count", c.n_head);
  w.SetUint32("qwen3.attention.head_count_kv", c.n_head_kv);
  // Explicit because E/H differs from the head size in some sizes (0.6B: 1024/16 = 64 != 128).
  w.SetUint32("qwen3.attention.key_length", c.head_dim);
  w.SetUint32("qwen3.attention.value_length", c.head_dim);
  w.SetFloat32("qwen3.rope.freq_base", c.rope_freq_base);
  w.SetUint32("qwen3.rope.dimension_count", c.head_dim);
  w.SetFloat32("qwen3.attention.layer_norm_rms_epsilon", c.rms_eps);
}

absl::StatusOr<SynthSummary> WriteSynthModel(const SynthOptions& options, const std::string& path) {
  SynthSummary summary;
  ASSIGN_OR_RETURN(summary.plan, PlanForOptions(options));
  const SynthPlan& plan = summary.plan;
  ASSIGN_OR_RETURN(TokenizerData tokenizer, LoadTokenizer(options, plan.config.n_vocab));
  if (static_cast<int64_t>(tokenizer.tokens.size()) != plan.config.n_vocab) {
    return absl::InternalError("tokenizer size does not match the planned vocabulary");
  }

  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ASSIGN_OR_RETURN(SynthWeightSource source,
                   SynthWeightSource::Create(plan, options.seed, options.fill, threads));
  summary.pooled = source.pooled();

  GgufWriter writer;
  AddQwen3Metadata(plan, writer);
  WriteTokenizerData(tokenizer, writer);

  const uint64_t total = plan.n_bytes();
  auto done = std::make_shared<uint64_t>(0);
  for (const SynthTensor& t : plan.tensors) {
    summary.bytes_per_type[t.type] += t.nbytes();
    summary.tensors_per_type[t.type] += 1;
    auto fill = [&source, &t, &options, done, total](uint8_t* dst, uint64_t n) -> absl::Status {
      RETURN_IF_ERROR(source.Fill(t, dst, n));
      *done += n;
      if (options.progress) options.progress(*done, total);
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(writer.AddTensor(t.name, t.type, t.ne, std::move(fill)));
  }
  const std::vector<std::string> inputs =
      options.tokenizer_dir.empty() ? std::vector<std::string>() : HfTokenizerFiles(options.tokenizer_dir);
  RETURN_IF_ERROR(writer.Write(path, inputs));

  std::error_code ec;
  summary.file_bytes = std::filesystem::file_size(path, ec);
  if (ec)
    return absl::InternalError(absl::StrCat(path, ": cannot stat after writing: ", ec.message()));
  return summary;
}

}  // namespace jllm::gguf
