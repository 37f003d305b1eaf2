#include "frontends/gguf/hf_import.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fileio/read_file.h"
#include "frontends/gguf/gguf_writer.h"
#include "quant/quant.h"
#include "frontends/gguf/safetensors_file.h"
#include "frontends/gguf/synth_model.h"
#include "ir/status.h"
#include "nlohmann/json.hpp"

namespace jllm::gguf {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

absl::StatusOr<json> ReadJson(const fs::path& path) {
  ASSIGN_OR_RETURN(std::string text, fileio::ReadFile(path.string(), "checkpoint file"));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not valid JSON"));
  return j;
}

// Typed config.json fields; errors name the file and the key.
class ConfigReader {
 public:
  ConfigReader(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  bool Has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  absl::Status Error(const char* key, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": \"", key, "\" ", what));
  }

  // A positive integer below 2^31 (every Qwen3 size and count fits).
  absl::StatusOr<uint32_t> Count(const char* key) const {
    if (!Has(key)) return Error(key, "is missing");
    const json& v = j_[key];
    if (!v.is_number_integer()) return Error(key, absl::StrCat("is ", v.dump(), ", not an integer"));
    const int64_t n = v.get<int64_t>();
    if (n <= 0 || n >= (int64_t{1} << 31)) return Error(key, absl::StrCat("is ", n, ", out of range"));
    return static_cast<uint32_t>(n);
  }

  absl::StatusOr<float> Number(const json& v, const char* key) const {
    if (!v.is_number()) return Error(key, absl::StrCat("is ", v.dump(), ", not a number"));
    const double d = v.get<double>();
    if (!(d > 0) || d > 1e30) return Error(key, absl::StrCat("is ", d, ", not a positive number"));
    return static_cast<float>(d);
  }

  const json& j() const { return j_; }

 private:
  const json& j_;
  std::string path_;
};

// RoPE settings live in "rope_parameters" (transformers 5), "rope_scaling" (older; also an
// alias some versions write beside it) or plain "rope_theta". Only plain RoPE is converted.
absl::StatusOr<float> ReadRopeTheta(const ConfigReader& c) {
  std::optional<float> theta;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!c.Has(key)) continue;
    const json& p = c.j()[key];
    if (!p.is_object()) return c.Error(key, "is not an object");
    std::string type = "default";
    for (const char* type_key : {"rope_type", "type"}) {
      if (p.contains(type_key) && p[type_key].is_string()) type = p[type_key].get<std::string>();
    }
    if (type != "default") {
      return c.Error(key, absl::StrCat("has rope_type '", type,
                                       "': only 'default' (plain RoPE) is supported"));
    }
    if (p.contains("rope_theta")) {
      ASSIGN_OR_RETURN(theta, c.Number(p["rope_theta"], key));
    }
  }
  if (c.Has("rope_theta")) {
    ASSIGN_OR_RETURN(theta, c.Number(c.j()["rope_theta"], "rope_theta"));
  }
  if (!theta) {
    return c.Error("rope_theta", "is missing (looked for rope_theta and rope_parameters.rope_theta)");
  }
  return *theta;
}

absl::Status CheckArchitecture(const ConfigReader& c, const std::string& path) {
  if (c.Has("architectures")) {
    const json& a = c.j()["architectures"];
    std::vector<std::string> names;
    if (a.is_array()) {
      for (const json& n : a) {
        if (n.is_string()) names.push_back(n.get<std::string>());
      }
    }
    if (std::find(names.begin(), names.end(), "Qwen3ForCausalLM") == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": architectures ", a.dump(), " is not Qwen3ForCausalLM, the only one jllm converts"));
    }
    return absl::OkStatus();
  }
  if (c.Has("model_type") && c.j()["model_type"] == "qwen3") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": neither \"architectures\" nor \"model_type\" says this is a Qwen3 checkpoint"));
}

// Layer-table names: GGUF suffix after "blk.N." and the HF suffix after "model.layers.N.".
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

// Where each HF tensor lives, over all shards.
struct Checkpoint {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, std::pair<const SafetensorsFile*, const SafetensorsTensor*>> tensors;
};

absl::StatusOr<Checkpoint> OpenShards(const fs::path& dir, std::vector<std::string>* names) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir.string(), ": not a directory"));
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") {
      names->push_back(entry.path().filename().string());
    }
  }
  if (ec) return absl::InternalError(absl::StrCat(dir.string(), ": cannot list: ", ec.message()));
  std::sort(names->begin(), names->end());
  if (names->empty()) {
    return absl::NotFoundError(absl::StrCat(dir.string(), ": no *.safetensors files"));
  }
  Checkpoint ck;
  for (const std::string& name : *names) {
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open((dir / name).string()));
    for (const SafetensorsTensor& t : file->tensors()) {
      auto [it, inserted] = ck.tensors.emplace(t.name, std::make_pair(file.get(), &t));
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "' is in both ",
                                                       it->second.first->path(), " and ",
                                                       file->path()));
      }
    }
    ck.files.push_back(std::move(file));
  }
  // A sharded checkpoint's index names the shard of every tensor: hold the files to it.
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    ASSIGN_OR_RETURN(json j, ReadJson(index));
    if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(index.string(), ": no \"weight_map\" object"));
    }
    for (const auto& [tensor, file] : j["weight_map"].items()) {
      auto it = ck.tensors.find(tensor);
      const std::string want = file.is_string() ? file.get<std::string>() : file.dump();
      if (it == ck.tensors.end()) {
        return absl::InvalidArgumentError(absl::StrCat(index.string(), ": tensor '", tensor,
                                                       "' should be in ", want, " but no shard has it"));
      }
      if (fs::path(it->second.first->path()).filename() != want) {
        return absl::InvalidArgumentError(absl::StrCat(index.string(), ": tensor '", tensor,
                                                       "' should be in ", want, " but is in ",
                                                       it->second.first->path()));
      }
    }
  }
  return ck;
}

// Converts rows [0, rows) of `src` (each `row_len` elements) to `type` into dst, on `threads`
// threads, each with one row of f32 scratch.
absl::Status ConvertRows(const SafetensorsFile& file, const SafetensorsTensor& src, GgmlType type,
                         int64_t row_len, int64_t rows, uint8_t* dst, int threads) {
  const int64_t row_bytes = RowBytes(type, row_len);
  const int n = static_cast<int>(std::clamp<int64_t>(rows / 16, 1, threads));
  std::vector<absl::Status> status(n);
  auto work = [&](int w) {
    std::vector<float> row(static_cast<size_t>(row_len));
    for (int64_t r = rows * w / n; r < rows * (w + 1) / n; ++r) {
      absl::Status s = file.ReadF32(src, r * row_len, row_len, row.data());
      if (s.ok()) s = quant::QuantizeRow(type, row.data(), dst + r * row_bytes, row_len);
      if (!s.ok()) {
        status[w] = absl::Status(s.code(), absl::StrCat("tensor '", src.name, "' row ", r, ": ", s.message()));
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < n; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  for (const auto& s : status) RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

absl::StatusOr<SynthConfig> ReadHfQwen3Config(const std::string& config_json_path) {
  ASSIGN_OR_RETURN(json j, ReadJson(config_json_path));
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(config_json_path, ": not a JSON object"));
  }
  const ConfigReader c(j, config_json_path);
  RETURN_IF_ERROR(CheckArchitecture(c, config_json_path));
  if (c.Has("hidden_act") && j["hidden_act"] != "silu") {
    return c.Error("hidden_act", absl::StrCat("is ", j["hidden_act"].dump(), "; Qwen3 uses silu"));
  }
  if (c.Has("attention_bias") && j["attention_bias"] != false) {
    return c.Error("attention_bias", "is set: attention biases are not supported");
  }
  if (c.Has("use_sliding_window") && j["use_sliding_window"] != false) {
    return c.Error("use_sliding_window", "is set: sliding-window attention is not supported");
  }

  SynthConfig config;
  ASSIGN_OR_RETURN(config.n_embd, c.Count("hidden_size"));
  ASSIGN_OR_RETURN(config.n_layer, c.Count("num_hidden_layers"));
  ASSIGN_OR_RETURN(config.n_head, c.Count("num_attention_heads"));
  config.n_head_kv = config.n_head;
  if (c.Has("num_key_value_heads")) {
    ASSIGN_OR_RETURN(config.n_head_kv, c.Count("num_key_value_heads"));
  }
  if (c.Has("head_dim")) {
    ASSIGN_OR_RETURN(config.head_dim, c.Count("head_dim"));
  } else {
    if (config.n_embd % config.n_head != 0) {
      return c.Error("head_dim", "is missing and hidden_size is not a multiple of num_attention_heads");
    }
    config.head_dim = config.n_embd / config.n_head;
  }
  ASSIGN_OR_RETURN(config.n_ff, c.Count("intermediate_size"));
  ASSIGN_OR_RETURN(uint32_t vocab, c.Count("vocab_size"));
  config.n_vocab = vocab;
  ASSIGN_OR_RETURN(config.context_length, c.Count("max_position_embeddings"));
  if (!c.Has("rms_norm_eps")) return c.Error("rms_norm_eps", "is missing");
  ASSIGN_OR_RETURN(config.rms_eps, c.Number(j["rms_norm_eps"], "rms_norm_eps"));
  ASSIGN_OR_RETURN(config.rope_freq_base, ReadRopeTheta(c));
  config.tied_embeddings = false;  // transformers' Qwen3Config default
  if (c.Has("tie_word_embeddings")) {
    if (!j["tie_word_embeddings"].is_boolean()) return c.Error("tie_word_embeddings", "is not true/false");
    config.tied_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  return config;
}

std::string HfTensorName(const std::string& gguf_name) {
  if (gguf_name == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf_name == "output_norm.weight") return "model.norm.weight";
  if (gguf_name == "output.weight") return "lm_head.weight";
  int layer = -1, consumed = 0;
  if (std::sscanf(gguf_name.c_str(), "blk.%d.%n", &layer, &consumed) != 1 || layer < 0) return "";
  const std::string suffix = gguf_name.substr(static_cast<size_t>(consumed));
  for (const auto& [gguf, hf] : kLayerNames) {
    if (suffix == gguf) return absl::StrCat("model.layers.", layer, ".", hf);
  }
  return "";
}

absl::StatusOr<TokenizerData> PlaceholderTokenizerData(int64_t n_vocab) {
  if (n_vocab < 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vocab_size ", n_vocab, " is below the 256 byte tokens of the placeholder vocabulary"));
  }
  TokenizerData bytes = ByteLevelTokenizerData();
  TokenizerData data;
  data.model = bytes.model;
  data.pre = bytes.pre;
  data.tokens.assign(bytes.tokens.begin(), bytes.tokens.begin() + 256);
  data.token_types.assign(bytes.token_types.begin(), bytes.token_types.begin() + 256);
  for (int64_t id = 256; id < n_vocab; ++id) {
    data.tokens.push_back(absl::StrCat("[PAD", id, "]"));
    data.token_types.push_back(TokenType::kUnused);
  }
  return data;
}

absl::StatusOr<HfImportSummary> ImportHfCheckpoint(const HfImportOptions& options,
                                                   const std::string& out_path) {
  const fs::path dir(options.dir);
  HfImportSummary summary;
  ASSIGN_OR_RETURN(SynthConfig config, ReadHfQwen3Config((dir / "config.json").string()));
  config.preset = options.dir;  // names the source in PlanSynthModel's messages
  config.name = options.name.empty() ? fs::absolute(dir).lexically_normal().filename().string()
                                     : options.name;
  if (config.name.empty()) config.name = "qwen3";
  ASSIGN_OR_RETURN(summary.plan, PlanSynthModel(config, options.weights));
  const SynthPlan& plan = summary.plan;
  ASSIGN_OR_RETURN(Checkpoint ck, OpenShards(dir, &summary.shard_files));

  // Every planned tensor must be there with the shape the config implies (HF order = reversed ne).
  struct Source {
    const SafetensorsFile* file;
    const SafetensorsTensor* tensor;
  };
  std::vector<Source> sources;
  std::map<std::string, bool> used;
  for (const auto& [name, where] : ck.tensors) used[name] = false;
  for (const SynthTensor& t : plan.tensors) {
    const std::string hf = HfTensorName(t.name);
    auto it = ck.tensors.find(hf);
    if (it == ck.tensors.end()) {
      return absl::InvalidArgumentError(absl::StrCat(options.dir, ": tensor '", hf, "' (GGUF '",
                                                     t.name, "') is missing from every shard"));
    }
    const auto [file, tensor] = it->second;
    const std::vector<int64_t> want(t.ne.rbegin(), t.ne.rend());
    if (tensor->shape != want) {
      return absl::InvalidArgumentError(absl::StrCat(file->path(), ": tensor '", hf, "' has shape ",
                                                     ShapeText(tensor->shape), " but config.json implies ",
                                                     ShapeText(want)));
    }
    if (tensor->dtype != SafetensorsDType::kF32 && tensor->dtype != SafetensorsDType::kF16 &&
        tensor->dtype != SafetensorsDType::kBF16) {
      return absl::InvalidArgumentError(absl::StrCat(file->path(), ": tensor '", hf, "' has dtype ",
                                                     std::string(SafetensorsDTypeName(tensor->dtype)),
                                                     "; jllm converts F32, F16 and BF16 only"));
    }
    used[hf] = true;
    sources.push_back({file, tensor});
  }
  // Tied embeddings: transformers may still save lm_head.weight (it equals the embedding).
  if (plan.config.tied_embeddings) used.erase("lm_head.weight");
  std::vector<std::string> leftover;
  for (const auto& [name, u] : used) {
    if (!u) leftover.push_back(name);
  }
  if (!leftover.empty()) {
    if (leftover.size() > 5) leftover.resize(5);
    return absl::InvalidArgumentError(absl::StrCat(
        options.dir, ": tensors that a Qwen3 model does not use: ", absl::StrJoin(leftover, ", "),
        plan.config.tied_embeddings ? "" : " (is tie_word_embeddings right?)"));
  }

  TokenizerData tokenizer;
  std::error_code ec;
  if (fs::exists(dir / "tokenizer.json", ec)) {
    ASSIGN_OR_RETURN(tokenizer, ImportHfTokenizer(options.dir, plan.config.n_vocab));
    summary.tokenizer_imported = true;
  } else if (options.allow_no_tokenizer) {
    ASSIGN_OR_RETURN(tokenizer, PlaceholderTokenizerData(plan.config.n_vocab));
  } else {
    return absl::FailedPreconditionError(absl::StrCat(
        options.dir, ": no tokenizer.json; without it the GGUF would get a placeholder "
        "vocabulary (256 byte tokens, no chat tokens: prompts only as jllm-run --prompt-ids). "
        "Copy the model's tokenizer.json and tokenizer_config.json into ", options.dir,
        ", or allow the placeholder with --allow-no-tokenizer"));
  }
  if (static_cast<int64_t>(tokenizer.tokens.size()) != plan.config.n_vocab) {
    return absl::InvalidArgumentError(absl::StrCat(options.dir, ": the tokenizer has ",
                                                   tokenizer.tokens.size(), " tokens but vocab_size is ",
                                                   plan.config.n_vocab));
  }

  const int threads = options.threads > 0
                          ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  GgufWriter writer;
  AddQwen3Metadata(plan, writer);
  WriteTokenizerData(tokenizer, writer);
  const uint64_t total = plan.n_bytes();
  auto done = std::make_shared<uint64_t>(0);
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const SynthTensor& t = plan.tensors[i];
    const Source src = sources[i];
    const int64_t row_len = t.ne[0];
    const int64_t rows = t.n_elements() / row_len;
    auto fill = [src, t, row_len, rows, threads, done, total,
                 &options](uint8_t* dst, uint64_t nbytes) -> absl::Status {
      if (nbytes != static_cast<uint64_t>(RowBytes(t.type, row_len) * rows)) {
        return absl::InternalError(absl::StrCat("tensor '", t.name, "': size mismatch"));
      }
      RETURN_IF_ERROR(ConvertRows(*src.file, *src.tensor, t.type, row_len, rows, dst, threads));
      *done += nbytes;
      if (options.progress) options.progress(*done, total);
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(writer.AddTensor(t.name, t.type, t.ne, std::move(fill)));
  }
  // Every file the conversion reads: the output must not be one of them.
  std::vector<std::string> inputs = HfTokenizerFiles(options.dir);
  inputs.push_back((dir / "model.safetensors.index.json").string());
  for (const std::string& shard : summary.shard_files) inputs.push_back((dir / shard).string());
  RETURN_IF_ERROR(writer.Write(out_path, inputs));
  summary.file_bytes = fs::file_size(out_path, ec);
  if (ec) return absl::InternalError(absl::StrCat(out_path, ": cannot stat after writing: ", ec.message()));
  return summary;
}

}  // namespace jllm::gguf
