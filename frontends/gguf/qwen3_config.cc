// ReadQwen3Config: Qwen3 hyper-parameters from GGUF metadata, with llama.cpp's strict key types
// (FORMATS.md §5: integers UINT32, floats FLOAT32, per-layer arrays INT32 or UINT32).
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "frontends/gguf/qwen3_graph.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::gguf {
namespace {

constexpr std::string_view kArch = "qwen3";

std::string TypeText(const Value& v) {
  if (v.type != ValueType::kArray) return std::string(ValueTypeName(v.type));
  return absl::StrCat("ARRAY[", Sv(ValueTypeName(v.array_type)), "]");
}

// Typed, strict lookups over the metadata list; messages name the file and the key.
class Metadata {
 public:
  Metadata(const std::vector<KeyValue>& kvs, std::string_view source)
      : kvs_(kvs), source_(source) {}

  const Value* Find(std::string_view key) const {
    for (const KeyValue& kv : kvs_) {
      if (kv.key == key) return &kv.value;
    }
    return nullptr;
  }

  absl::Status Error(std::string_view key, std::string_view msg) const {
    return absl::InvalidArgumentError(absl::StrCat(Sv(source_), ": key '", Sv(key), "' ", Sv(msg)));
  }

  absl::Status WrongType(std::string_view key, const Value& v, std::string_view expected) const {
    return Error(key, absl::StrCat("has type ", TypeText(v), ", expected ", Sv(expected)));
  }

  absl::StatusOr<std::optional<uint32_t>> U32(std::string_view key) const {
    const Value* v = Find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::kUint32) return WrongType(key, *v, "UINT32");
    return static_cast<uint32_t>(std::get<uint64_t>(v->scalar));
  }

  absl::StatusOr<std::optional<float>> F32(std::string_view key) const {
    const Value* v = Find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::kFloat32) return WrongType(key, *v, "FLOAT32");
    return static_cast<float>(std::get<double>(v->scalar));
  }

  absl::StatusOr<std::optional<std::string>> String(std::string_view key) const {
    const Value* v = Find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != ValueType::kString) return WrongType(key, *v, "STRING");
    return std::get<std::string>(v->scalar);
  }

  // UINT32, or an INT32/UINT32 array of one entry per layer, all equal (jllm builds uniform
  // layers only).
  absl::StatusOr<std::optional<uint32_t>> PerLayerU32(std::string_view key, int64_t n_layer) const {
    const Value* v = Find(key);
    if (v == nullptr || v->type != ValueType::kArray) return U32(key);
    if (v->array_type != ValueType::kInt32 && v->array_type != ValueType::kUint32) {
      return WrongType(key, *v, "UINT32 or an INT32/UINT32 array");
    }
    if (static_cast<int64_t>(v->ints.size()) != n_layer) {
      return Error(key, absl::StrCat("has ", v->ints.size(), " entries for ", n_layer, " layers"));
    }
    for (int64_t x : v->ints) {
      if (x != v->ints[0]) {
        return Error(key, "differs between layers; jllm builds models with uniform layers only");
      }
    }
    if (v->ints.empty() || v->ints[0] < 0 || v->ints[0] > UINT32_MAX) {
      return Error(key, "has no valid entry");
    }
    return static_cast<uint32_t>(v->ints[0]);
  }

  template <class T>
  absl::StatusOr<T> Required(std::string_view key, absl::StatusOr<std::optional<T>> got) const {
    if (!got.ok()) return got.status();
    if (!got->has_value()) return Error(key, "is missing; the model cannot be built without it");
    return **got;
  }

 private:
  const std::vector<KeyValue>& kvs_;
  std::string_view source_;
};

std::string Key(std::string_view suffix) { return absl::StrCat(Sv(kArch), ".", Sv(suffix)); }

}  // namespace

absl::StatusOr<ir::ModelConfig> ReadQwen3Config(const std::vector<KeyValue>& metadata,
                                                const std::vector<TensorInfo>& tensors,
                                                std::string_view source) {
  const Metadata md(metadata, source);
  ASSIGN_OR_RETURN(std::string arch,
                   md.Required("general.architecture", md.String("general.architecture")));
  if (arch != kArch) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(source), ": architecture '", arch,
                     "' is not supported; jllm builds graphs for 'qwen3' only"));
  }
  ir::ModelConfig c;
  c.arch = arch;
  auto u32 = [&](std::string_view suffix) { return md.Required(Key(suffix), md.U32(Key(suffix))); };
  ASSIGN_OR_RETURN(uint32_t n_layer, u32("block_count"));
  ASSIGN_OR_RETURN(uint32_t n_embd, u32("embedding_length"));
  ASSIGN_OR_RETURN(uint32_t context, u32("context_length"));
  c.n_layer = n_layer;
  c.n_embd = n_embd;
  c.context_length = context;
  ASSIGN_OR_RETURN(c.n_ff, md.Required(Key("feed_forward_length"),
                                       md.PerLayerU32(Key("feed_forward_length"), n_layer)));
  ASSIGN_OR_RETURN(c.n_head, md.Required(Key("attention.head_count"),
                                         md.PerLayerU32(Key("attention.head_count"), n_layer)));
  ASSIGN_OR_RETURN(auto n_head_kv, md.PerLayerU32(Key("attention.head_count_kv"), n_layer));
  c.n_head_kv = n_head_kv.value_or(static_cast<uint32_t>(c.n_head));
  if (c.n_head < 1) return md.Error(Key("attention.head_count"), "is 0");
  const int64_t default_head_dim = c.n_embd / c.n_head;
  ASSIGN_OR_RETURN(auto key_length, md.U32(Key("attention.key_length")));
  ASSIGN_OR_RETURN(auto value_length, md.U32(Key("attention.value_length")));
  c.head_dim = key_length.value_or(default_head_dim);
  if (value_length.value_or(default_head_dim) != c.head_dim) {
    return md.Error(Key("attention.value_length"),
                    absl::StrCat("= ", value_length.value_or(default_head_dim),
                                 " differs from the key length ", c.head_dim,
                                 "; jllm supports equal key and value head sizes only"));
  }
  ASSIGN_OR_RETURN(c.rms_eps, md.Required(Key("attention.layer_norm_rms_epsilon"),
                                          md.F32(Key("attention.layer_norm_rms_epsilon"))));
  ASSIGN_OR_RETURN(auto base, md.F32(Key("rope.freq_base")));
  c.rope_base = base.value_or(10000.0f);
  ASSIGN_OR_RETURN(auto rope_dims, md.U32(Key("rope.dimension_count")));
  if (rope_dims && *rope_dims != c.head_dim) {
    return md.Error(Key("rope.dimension_count"),
                    absl::StrCat("= ", *rope_dims, " differs from the head size ", c.head_dim,
                                 "; partial RoPE is not supported"));
  }
  ASSIGN_OR_RETURN(auto scaling, md.String(Key("rope.scaling.type")));
  if (scaling && *scaling != "linear" && *scaling != "none") {
    return md.Error(Key("rope.scaling.type"),
                    absl::StrCat("is '", *scaling, "'; jllm supports linear RoPE scaling only"));
  }
  ASSIGN_OR_RETURN(auto factor, md.F32(Key("rope.scaling.factor")));
  c.rope_freq_scale = 1.0f;
  if (factor && *factor != 0.0f && scaling.value_or("linear") != "none") {
    if (!std::isfinite(*factor) || *factor < 0) {
      return md.Error(Key("rope.scaling.factor"), absl::StrCat("= ", *factor, " is invalid"));
    }
    c.rope_freq_scale = 1.0f / *factor;
  }

  const Value* tokens = md.Find("tokenizer.ggml.tokens");
  if (tokens == nullptr) {
    return md.Error("tokenizer.ggml.tokens", "is missing; it gives the vocabulary size");
  }
  if (tokens->type != ValueType::kArray || tokens->array_type != ValueType::kString) {
    return md.WrongType("tokenizer.ggml.tokens", *tokens, "ARRAY[STRING]");
  }
  c.n_vocab = static_cast<int64_t>(tokens->strings.size());

  c.tied_embeddings = true;
  for (const TensorInfo& t : tensors) {
    if (t.name == "output.weight") c.tied_embeddings = false;
  }
  if (auto st = ir::ValidateModelConfig(c); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", st.message()));
  }
  return c;
}

}  // namespace jllm::gguf
