#include "runtime/tokenizer/byte_level.h"

#include "runtime/tokenizer/utf8.h"

namespace jllm::runtime {
namespace {

struct ByteLevelTables {
  std::array<uint32_t, 256> codepoint{};
  std::array<std::string, 256> spelling;
  // Inverse for the stand-ins, which all lie below U+0144.
  std::array<int16_t, 0x144> byte_of{};

  ByteLevelTables() {
    byte_of.fill(-1);
    // Printable bytes stand for themselves; the other 68, in increasing order, take U+0100 + n.
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      codepoint[b] = printable ? static_cast<uint32_t>(b) : next++;
      AppendUtf8(codepoint[b], &spelling[b]);
      byte_of[codepoint[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTables& Tables() {
  static const ByteLevelTables tables;
  return tables;
}

}  // namespace

uint32_t ByteLevelCodepoint(uint8_t b) { return Tables().codepoint[b]; }

const std::string& ByteLevelSpelling(uint8_t b) { return Tables().spelling[b]; }

std::optional<std::string> ByteLevelDecode(std::string_view token) {
  const ByteLevelTables& t = Tables();
  std::string out;
  out.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    const size_t len = WellFormedSequenceLength(token.substr(i));
    if (len == 0 || len > 2) return std::nullopt;  // stand-ins are all one or two bytes
    uint32_t cp = static_cast<uint8_t>(token[i]);
    if (len == 2) cp = ((cp & 0x1F) << 6) | (static_cast<uint8_t>(token[i + 1]) & 0x3F);
    if (cp >= t.byte_of.size() || t.byte_of[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(t.byte_of[cp]));
    i += len;
  }
  return out;
}

}  // namespace jllm::runtime
