#include "runtime/plan_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "ir/absl_compat.h"
#include "ir/byte_io.h"
#include "ir/serialize.h"
#include "ir/status.h"
#include "runtime/plan_tokenizer_io.h"
#include "runtime/stable_hash.h"
#include "runtime/version.h"

namespace jllm::runtime {
namespace {

constexpr uint32_t kMaxWriterVersionBytes = 64;
constexpr uint64_t kChecksumBytes = 8;
// Enough to hold magic, format version and the writer's version string.
constexpr uint64_t kPreludeBytes = 8 + 4 + 4 + kMaxWriterVersionBytes;

constexpr absl::string_view kPassesTag = "PASS";
constexpr absl::string_view kGraphTag = "GRPH";
constexpr absl::string_view kTokenizerTag = "TOKN";
constexpr absl::string_view kWeightsTag = "WSRC";

std::string Recompile(const std::string& plan) {
  return absl::StrCat("Re-run `jllm-compile MODEL.gguf -o ", plan, "`");
}

absl::Status Truncated(const std::string& source, uint64_t have, absl::string_view need) {
  return absl::DataLossError(absl::StrCat(source, ": the plan file is truncated (", have,
                                          " bytes; ", need, "). ", Recompile(source)));
}

// Checks the magic and the format version, which every format version keeps at the same place.
// `bytes` may be just the first bytes of the file, `file_size` is the whole size.
absl::Status CheckPrelude(std::string_view bytes, uint64_t file_size, const std::string& source) {
  if (bytes.size() < kPlanMagic.size()) {
    if (kPlanMagic.substr(0, bytes.size()) == bytes && file_size == bytes.size()) {
      return Truncated(source, file_size, "not even the 8-byte magic");
    }
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": not a jllm plan file (too short, no \"JLLMPLAN\" magic). ", Recompile(source)));
  }
  if (bytes.substr(0, 8) != kPlanMagic) {
    if (bytes.substr(0, 4) == "GGUF") {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": this is a GGUF model, not a jllm plan. Compile it first: `jllm-compile ",
          source, " -o plan.bin`, then run plan.bin"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": not a jllm plan file (no \"JLLMPLAN\" magic at the start). ",
        Recompile(source)));
  }
  ir::ByteReader r(bytes.substr(8), source);
  auto version = r.U32("format version");
  if (!version.ok()) return Truncated(source, file_size, "the format version is missing");
  if (*version == kPlanFormatVersion) return absl::OkStatus();
  // Who wrote it, if the prelude is intact enough to say.
  std::string writer = "an unknown jllm";
  if (auto s = r.Str("writer version", kMaxWriterVersionBytes); s.ok()) {
    writer = absl::StrCat("jllm ", *s);
  }
  if (*version > kPlanFormatVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: the plan was written by %s in plan format %d, newer than this jllm (%s) reads "
        "(format %d). Use that newer jllm, or re-compile with this one: `jllm-compile "
        "MODEL.gguf -o %s`",
        source, writer, *version, JllmVersion(), kPlanFormatVersion, source));
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s: the plan was written by %s in the old plan format %d; this jllm (%s) reads format "
      "%d. %s",
      source, writer, *version, JllmVersion(), kPlanFormatVersion, Recompile(source)));
}

void WriteSection(absl::string_view tag, const std::string& body, ir::ByteWriter& w) {
  w.Bytes(std::string_view(tag.data(), tag.size()));
  w.U64(body.size());
  w.Bytes(body);
}

std::string PassesSection(const Plan& plan) {
  ir::ByteWriter w;
  w.Str(plan.passes_yaml);
  w.U32(static_cast<uint32_t>(plan.passes.size()));
  for (const auto& p : plan.passes) {
    w.Str(p.name);
    w.U8(p.enabled ? 1 : 0);
    w.U8(p.changed ? 1 : 0);
    w.Str(p.report);
  }
  return w.Take();
}

std::string WeightsSection(const WeightSourceInfo& info) {
  ir::ByteWriter w;
  w.U8(0);  // kind 0: tensors stay in the GGUF (later kinds: repacked weights in the plan)
  w.Str(info.gguf_path);
  w.U64(info.fingerprint.file_size);
  w.U64(info.fingerprint.data_offset);
  w.U64(info.fingerprint.header_hash);
  w.U64(info.fingerprint.sample_hash);
  return w.Take();
}

absl::StatusOr<bool> ReadFlag(ir::ByteReader& r, absl::string_view what) {
  ASSIGN_OR_RETURN(uint8_t v, r.U8(what));
  if (v > 1) return r.Error(absl::StrCat(what, " is ", v, ", not 0 or 1"));
  return v == 1;
}

absl::Status ReadPasses(ir::ByteReader& r, Plan& plan) {
  ASSIGN_OR_RETURN(plan.passes_yaml, r.Str("pass configuration"));
  ASSIGN_OR_RETURN(uint32_t n, r.Count("pass count", 4 + 1 + 1 + 4));
  for (uint32_t i = 0; i < n; ++i) {
    PassRecord p;
    ASSIGN_OR_RETURN(p.name, r.Str("pass name", 256));
    ASSIGN_OR_RETURN(p.enabled, ReadFlag(r, "pass enabled flag"));
    ASSIGN_OR_RETURN(p.changed, ReadFlag(r, "pass changed flag"));
    ASSIGN_OR_RETURN(p.report, r.Str("pass report"));
    plan.passes.push_back(std::move(p));
  }
  return absl::OkStatus();
}

absl::Status ReadWeights(ir::ByteReader& r, Plan& plan) {
  ASSIGN_OR_RETURN(uint8_t kind, r.U8("weight source kind"));
  if (kind != 0) return r.Error(absl::StrCat("unknown weight source kind ", kind));
  auto& info = plan.weights;
  ASSIGN_OR_RETURN(info.gguf_path, r.Str("GGUF path", 4096));
  ASSIGN_OR_RETURN(info.fingerprint.file_size, r.U64("GGUF size"));
  ASSIGN_OR_RETURN(info.fingerprint.data_offset, r.U64("GGUF data offset"));
  ASSIGN_OR_RETURN(info.fingerprint.header_hash, r.U64("GGUF header hash"));
  ASSIGN_OR_RETURN(info.fingerprint.sample_hash, r.U64("GGUF sample hash"));
  if (info.gguf_path.empty()) return r.Error("empty GGUF path");
  if (info.fingerprint.data_offset > info.fingerprint.file_size) {
    return r.Error("GGUF data offset lies past the file size");
  }
  return absl::OkStatus();
}

absl::Status ReadGraphSection(ir::ByteReader& r, Plan& plan) {
  ASSIGN_OR_RETURN(plan.graph, ir::ReadGraph(r));
  return absl::OkStatus();
}

absl::Status ReadTokenizerSection(ir::ByteReader& r, Plan& plan) {
  ASSIGN_OR_RETURN(plan.tokenizer, ReadTokenizerData(r));
  return absl::OkStatus();
}

}  // namespace

std::string SerializePlan(const Plan& plan) {
  ir::ByteWriter w;
  w.Bytes(kPlanMagic);
  w.U32(kPlanFormatVersion);
  w.Str(JllmVersion().substr(0, kMaxWriterVersionBytes));

  ir::ByteWriter payload;
  WriteSection(kPassesTag, PassesSection(plan), payload);
  {
    ir::ByteWriter g;
    ir::WriteGraph(plan.graph, g);
    WriteSection(kGraphTag, g.data(), payload);
  }
  {
    ir::ByteWriter t;
    WriteTokenizerData(plan.tokenizer, t);
    WriteSection(kTokenizerTag, t.data(), payload);
  }
  WriteSection(kWeightsTag, WeightsSection(plan.weights), payload);
  for (const auto& [tag, body] : plan.sections) WriteSection(tag, body, payload);

  w.U64(payload.data().size());
  w.Bytes(payload.data());
  w.U64(Hash64(w.data()));
  return w.Take();
}

absl::StatusOr<Plan> DeserializePlan(std::string_view bytes, const std::string& source) {
  RETURN_IF_ERROR(CheckPrelude(bytes, bytes.size(), source));
  Plan plan;
  ir::ByteReader head(bytes.substr(12), source);
  auto writer = head.Str("writer version", kMaxWriterVersionBytes);
  auto payload_size = writer.ok() ? head.U64("payload size") : writer.status();
  if (!payload_size.ok()) return Truncated(source, bytes.size(), "the header is incomplete");
  plan.jllm_version = *writer;
  const uint64_t payload_begin = 12 + head.offset();
  const uint64_t available = bytes.size() - payload_begin;
  if (*payload_size > available || available - *payload_size < kChecksumBytes) {
    return Truncated(source, bytes.size(),
                     absl::StrCat("the header promises ",
                                  *payload_size > UINT64_MAX - payload_begin - kChecksumBytes
                                      ? std::string("more than 2^64")
                                      : absl::StrCat(payload_begin + *payload_size + kChecksumBytes),
                                  " bytes"));
  }
  if (available - *payload_size > kChecksumBytes) {
    return absl::DataLossError(absl::StrCat(
        source, ": the plan file is corrupt: ", available - *payload_size - kChecksumBytes,
        " unexpected bytes after its end. ", Recompile(source)));
  }
  const uint64_t checked = payload_begin + *payload_size;
  ir::ByteReader tail(bytes.substr(checked), source);
  ASSIGN_OR_RETURN(uint64_t stored, tail.U64("checksum"));
  const uint64_t actual = Hash64(bytes.substr(0, checked));
  if (stored != actual) {
    return absl::DataLossError(absl::StrFormat(
        "%s: the plan file is corrupt (checksum mismatch: stored %016x, computed %016x). %s",
        source, stored, actual, Recompile(source)));
  }

  // Intact as written: what follows can only fail if the writer was a different build with the
  // same format version, but is still checked field by field.
  ir::ByteReader r(bytes.substr(payload_begin, *payload_size), source);
  using SectionReader = absl::Status (*)(ir::ByteReader&, Plan&);
  const std::pair<absl::string_view, SectionReader> sections[] = {
      {kPassesTag, &ReadPasses},
      {kGraphTag, &ReadGraphSection},
      {kTokenizerTag, &ReadTokenizerSection},
      {kWeightsTag, &ReadWeights},
  };
  for (const auto& [tag, read] : sections) {
    ASSIGN_OR_RETURN(auto tag_bytes, r.Bytes(4, "section tag"));
    const absl::string_view got(reinterpret_cast<const char*>(tag_bytes.data()), 4);
    if (got != tag) {
      return absl::DataLossError(absl::StrCat(source, ": expected section ", tag, ", found '",
                                              absl::CHexEscape(got), "'. ", Recompile(source)));
    }
    ASSIGN_OR_RETURN(uint64_t size, r.U64("section size"));
    ASSIGN_OR_RETURN(auto body, r.Bytes(size, absl::StrCat("section ", tag)));
    ir::ByteReader sr(body, absl::StrCat(source, " section ", tag));
    if (absl::Status st = read(sr, plan); !st.ok()) {
      return absl::DataLossError(absl::StrCat(st.message(), ". ", Recompile(source)));
    }
    if (!sr.at_end()) {
      return absl::DataLossError(absl::StrCat(source, ": section ", tag, " has ", sr.remaining(),
                                              " unread bytes. ", Recompile(source)));
    }
  }
  while (!r.at_end()) {
    ASSIGN_OR_RETURN(auto tag_bytes, r.Bytes(4, "optional section tag"));
    const std::string tag(reinterpret_cast<const char*>(tag_bytes.data()), 4);
    ASSIGN_OR_RETURN(uint64_t size, r.U64("optional section size"));
    ASSIGN_OR_RETURN(auto body, r.Bytes(size, absl::StrCat("section ", absl::CHexEscape(tag))));
    if (!plan.sections.emplace(tag, std::string(reinterpret_cast<const char*>(body.data()), body.size())).second) {
      return absl::DataLossError(absl::StrCat(source, ": section '", absl::CHexEscape(tag),
                                              "' appears twice. ", Recompile(source)));
    }
  }
  const uint64_t n_tokens = plan.tokenizer.tokens.size();
  if (plan.graph.config.n_vocab != static_cast<int64_t>(n_tokens)) {
    return absl::DataLossError(absl::StrCat(source, ": the graph's vocabulary (",
                                            plan.graph.config.n_vocab, ") and the tokenizer's (",
                                            n_tokens, ") differ. ", Recompile(source)));
  }
  return plan;
}

absl::Status WritePlanFile(const Plan& plan, const std::string& path) {
  const std::string bytes = SerializePlan(plan);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat(tmp, ": cannot create"));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      return absl::ResourceExhaustedError(absl::StrCat(tmp, ": write failed (disk full?)"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot rename ", tmp, " over it: ",
                                                    ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Plan> ReadPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return absl::NotFoundError(absl::StrCat(path, ": no such plan file. Make one with "
                                              "`jllm-compile MODEL.gguf -o ", path, "`"));
    }
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open"));
  }
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(path, ": ", ec.message()));
  std::string head(std::min<uint64_t>(size, kPreludeBytes), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (!in) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  RETURN_IF_ERROR(CheckPrelude(head, size, path));
  std::string bytes(size, '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (!in) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return DeserializePlan(bytes, path);
}

}  // namespace jllm::runtime
