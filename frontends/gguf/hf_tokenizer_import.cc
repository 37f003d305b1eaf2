// ImportHfTokenizer: a Hugging Face tokenizer folder -> TokenizerData, following what llama.cpp's
// GGUF converter writes (FORMATS.md §6): the vocabulary by id with "[PAD<id>]" UNUSED holes,
// added tokens as CONTROL or USER_DEFINED, merges as "A B", special ids and the chat template.
#include <filesystem>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "fileio/read_file.h"
#include "frontends/gguf/tokenizer_data.h"
#include "ir/status.h"
#include "nlohmann/json.hpp"

namespace jllm::gguf {
namespace {

using nlohmann::json;

// Pre-tokenizer regexes we recognize in tokenizer.json, by their llama.cpp `pre` name.
struct KnownPreTokenizer {
  std::string_view pre;
  std::string_view split_regex;
};
constexpr KnownPreTokenizer kKnownPreTokenizers[] = {
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
};

absl::StatusOr<json> ReadJsonFile(const std::filesystem::path& path) {
  ASSIGN_OR_RETURN(std::string text, fileio::ReadFile(path.string(), "tokenizer file"));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not valid JSON"));
  }
  return j;
}

absl::Status Invalid(const std::filesystem::path& path, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", std::string(what)));
}

// The converter marks some added tokens CONTROL even when HF does not call them special
// (llama.cpp's does_token_look_special): "<|...|>", DeepSeek's fullwidth bars, and a few names.
bool LooksSpecial(std::string_view t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (t.starts_with("<|") && t.ends_with("|>")) return true;
  if (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>")) return true;  // <｜...｜>
  return t.starts_with("<unused") && t.ends_with(">");
}

// The pre-tokenizer name for tokenizer.json's "pre_tokenizer": a Split with a known regex,
// alone or followed by a ByteLevel step that does no splitting of its own.
absl::StatusOr<std::string> DetectPre(const json& pre_tokenizer, const std::filesystem::path& path) {
  std::string regex;
  auto visit = [&](const json& step) -> absl::Status {
    const std::string type = step.value("type", "");
    if (type == "Split" && step.contains("pattern") && step["pattern"].contains("Regex")) {
      regex = step["pattern"]["Regex"].get<std::string>();
      return absl::OkStatus();
    }
    if (type == "ByteLevel" && !step.value("use_regex", true)) return absl::OkStatus();
    return Invalid(path, absl::StrCat("pre_tokenizer step '", type, "' is not supported"));
  };
  if (pre_tokenizer.is_object() && pre_tokenizer.value("type", "") == "Sequence") {
    for (const json& step : pre_tokenizer.value("pretokenizers", json::array())) {
      RETURN_IF_ERROR(visit(step));
    }
  } else if (pre_tokenizer.is_object()) {
    RETURN_IF_ERROR(visit(pre_tokenizer));
  }
  std::string supported;
  for (const KnownPreTokenizer& k : kKnownPreTokenizers) {
    if (regex == k.split_regex) return std::string(k.pre);
    absl::StrAppend(&supported, supported.empty() ? "" : ", ", std::string(k.pre));
  }
  return Invalid(path, absl::StrCat("the pre-tokenizer regex is not one jllm knows (supported: ",
                                    supported, ")"));
}

// tokenizer_config.json names special tokens as a string or as {"content": ...}.
std::optional<std::string> TokenContent(const json& config, const std::string& key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return std::nullopt;
}

absl::StatusOr<TokenizerData> Import(const std::filesystem::path& folder, int64_t n_vocab) {
  const std::filesystem::path tok_path = folder / "tokenizer.json";
  const std::filesystem::path config_path = folder / "tokenizer_config.json";
  ASSIGN_OR_RETURN(json tok, ReadJsonFile(tok_path));
  json config = json::object();
  if (std::filesystem::exists(config_path)) {
    ASSIGN_OR_RETURN(config, ReadJsonFile(config_path));
  }

  if (!tok.contains("model") || !tok["model"].is_object()) return Invalid(tok_path, "no \"model\"");
  const json& model = tok["model"];
  if (model.value("type", "") != "BPE") {
    return Invalid(tok_path, absl::StrCat("model type '", model.value("type", ""),
                                          "' is not supported (supported: BPE)"));
  }
  const json normalizer = tok.value("normalizer", json());
  if (!normalizer.is_null() && normalizer.value("type", "") != "NFC") {
    return Invalid(tok_path, "the normalizer must be NFC or none (the qwen2 pre-tokenizer assumes NFC)");
  }

  TokenizerData data;
  data.model = "gpt2";
  ASSIGN_OR_RETURN(data.pre, DetectPre(tok.value("pre_tokenizer", json()), tok_path));

  // Vocabulary by id: the BPE vocab plus the added tokens, holes filled later.
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return Invalid(tok_path, "model.vocab is missing");
  }
  absl::flat_hash_map<int64_t, std::string> by_id;
  absl::flat_hash_map<std::string, int64_t> id_of;
  int64_t max_id = -1;
  const auto add_token = [&](const std::string& text, const json& id_json) -> absl::Status {
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 ||
        id_json.get<int64_t>() >= (int64_t{1} << 30)) {
      return Invalid(tok_path, absl::StrCat("token '", text, "' has an invalid id"));
    }
    const int64_t id = id_json.get<int64_t>();
    by_id[id] = text;
    id_of[text] = id;
    max_id = std::max(max_id, id);
    return absl::OkStatus();
  };
  for (const auto& [text, id] : model["vocab"].items()) RETURN_IF_ERROR(add_token(text, id));

  absl::flat_hash_map<int64_t, bool> added_special;  // id -> HF "special" flag
  for (const json& t : tok.value("added_tokens", json::array())) {
    if (!t.contains("content") || !t["content"].is_string() || !t.contains("id")) {
      return Invalid(tok_path, "an added_tokens entry lacks content or id");
    }
    RETURN_IF_ERROR(add_token(t["content"].get<std::string>(), t["id"]));
    added_special[t["id"].get<int64_t>()] = t.value("special", false);
  }

  const int64_t size = n_vocab > 0 ? n_vocab : max_id + 1;
  if (max_id >= size) {
    return Invalid(tok_path, absl::StrCat("token id ", max_id, " does not fit n_vocab = ", n_vocab));
  }
  data.tokens.resize(size);
  data.token_types.resize(size);
  for (int64_t id = 0; id < size; ++id) {
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      data.tokens[id] = absl::StrCat("[PAD", id, "]");
      data.token_types[id] = TokenType::kUnused;
      continue;
    }
    data.tokens[id] = it->second;
    auto added = added_special.find(id);
    if (added == added_special.end()) {
      data.token_types[id] = TokenType::kNormal;
    } else {
      data.token_types[id] = added->second || LooksSpecial(it->second) ? TokenType::kControl
                                                                       : TokenType::kUserDefined;
    }
  }

  // Merges: "A B" strings (older files) or ["A", "B"] pairs (newer files).
  for (const json& m : model.value("merges", json::array())) {
    if (m.is_string()) {
      data.merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      data.merges.push_back(absl::StrCat(m[0].get<std::string>(), " ", m[1].get<std::string>()));
    } else {
      return Invalid(tok_path, absl::StrCat("merge ", data.merges.size(), " is neither \"A B\" nor [A, B]"));
    }
  }

  // Special ids as the converter's SpecialVocab finds them: tokenizer_config.json names the
  // tokens; config.json's *_token_id fills what is still missing.
  const auto lookup = [&](const std::string& key) -> std::optional<uint32_t> {
    std::optional<std::string> content = TokenContent(config, key);
    if (!content) return std::nullopt;
    auto it = id_of.find(*content);
    if (it == id_of.end()) return std::nullopt;
    return static_cast<uint32_t>(it->second);
  };
  data.bos_id = lookup("bos_token");
  data.eos_id = lookup("eos_token");
  data.pad_id = lookup("pad_token");
  const std::filesystem::path model_config_path = folder / "config.json";
  if (std::filesystem::exists(model_config_path)) {
    ASSIGN_OR_RETURN(json model_config, ReadJsonFile(model_config_path));
    const auto fill = [&](std::optional<uint32_t>& slot, const char* key) {
      if (slot || !model_config.contains(key) || !model_config[key].is_number_unsigned()) return;
      const uint64_t id = model_config[key].get<uint64_t>();
      if (id < static_cast<uint64_t>(size)) slot = static_cast<uint32_t>(id);
    };
    fill(data.bos_id, "bos_token_id");
    fill(data.eos_id, "eos_token_id");
    fill(data.pad_id, "pad_token_id");
  } else if (!data.bos_id) {
    // Qwen's tokenizer_config.json names no bos_token; its config.json sets bos_token_id to
    // <|endoftext|>. Without config.json we take the same token, so the GGUF matches a real one.
    auto it = id_of.find("<|endoftext|>");
    if (it != id_of.end()) data.bos_id = static_cast<uint32_t>(it->second);
  }
  data.add_bos = config.value("add_bos_token", false);

  // The chat template: tokenizer_config.json, or chat_template.jinja beside it (newer exports).
  if (config.contains("chat_template")) {
    const json& ct = config["chat_template"];
    if (ct.is_string()) {
      data.chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {  // [{"name": ..., "template": ...}]: take "default"
      for (const json& named : ct) {
        if (named.value("name", "") == "default" && named.contains("template") &&
            named["template"].is_string()) {
          data.chat_template = named["template"].get<std::string>();
        }
      }
    }
  } else if (std::filesystem::exists(folder / "chat_template.jinja")) {
    ASSIGN_OR_RETURN(data.chat_template,
                     fileio::ReadFile((folder / "chat_template.jinja").string(), "chat template"));
  }
  return data;
}

}  // namespace

absl::StatusOr<TokenizerData> ImportHfTokenizer(const std::string& dir, int64_t n_vocab) {
  // nlohmann throws on a value of the wrong JSON type; a malformed file is an error, not a crash.
  try {
    return Import(std::filesystem::path(dir), n_vocab);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": tokenizer files have an unexpected structure: ", e.what()));
  }
}

std::vector<std::string> HfTokenizerFiles(const std::string& dir) {
  const std::filesystem::path folder(dir);
  std::vector<std::string> files;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "config.json",
                           "chat_template.jinja"}) {
    files.push_back((folder / name).string());
  }
  return files;
}

}  // namespace jllm::gguf
