#include "runtime/tokenizer/utf8.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "utf8proc.h"

namespace jllm::runtime {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Allowed range of the second byte after lead byte `lead` (Unicode Table 3-7), or {1, 0} when
// `lead` cannot start a multi-byte sequence. Later continuation bytes are always 80..BF.
struct Range {
  uint8_t lo, hi;
};
Range SecondByteRange(uint8_t lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return {0x80, 0xBF};
  if (lead == 0xE0) return {0xA0, 0xBF};
  if (lead == 0xED) return {0x80, 0x9F};  // excludes the surrogates
  if (lead >= 0xE1 && lead <= 0xEF) return {0x80, 0xBF};
  if (lead == 0xF0) return {0x90, 0xBF};
  if (lead == 0xF4) return {0x80, 0x8F};  // nothing above U+10FFFF
  if (lead >= 0xF1 && lead <= 0xF3) return {0x80, 0xBF};
  return {1, 0};
}

size_t SequenceLengthForLead(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

}  // namespace

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t WellFormedSequenceLength(std::string_view s, size_t* prefix_len) {
  size_t dummy;
  size_t& prefix = prefix_len ? *prefix_len : dummy;
  prefix = 0;
  if (s.empty()) return 0;
  const uint8_t lead = static_cast<uint8_t>(s[0]);
  const size_t need = SequenceLengthForLead(lead);
  if (need == 0) return 0;  // a stray continuation byte or a never-valid lead: 1 byte replaced
  prefix = 1;
  if (need == 1) return 1;
  for (size_t i = 1; i < need; ++i) {
    if (i >= s.size()) return 0;  // cut short: prefix == s.size()
    const uint8_t b = static_cast<uint8_t>(s[i]);
    const Range r = i == 1 ? SecondByteRange(lead) : Range{0x80, 0xBF};
    if (b < r.lo || b > r.hi) return 0;
    prefix = i + 1;
  }
  return need;
}

void AppendValidUtf8(std::string_view s, std::string* out) {
  out->reserve(out->size() + s.size());
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs are the common case: copy them without the per-sequence checks.
    size_t j = i;
    while (j < s.size() && static_cast<uint8_t>(s[j]) < 0x80) ++j;
    out->append(s.substr(i, j - i));
    i = j;
    if (i >= s.size()) break;
    size_t prefix = 0;
    const size_t len = WellFormedSequenceLength(s.substr(i), &prefix);
    if (len > 0) {
      out->append(s.substr(i, len));
      i += len;
    } else {
      out->append(kReplacement);
      i += prefix > 0 ? prefix : 1;
    }
  }
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = WellFormedSequenceLength(s.substr(i));
    if (len == 0) return false;
    i += len;
  }
  return true;
}

size_t IncompleteUtf8TailLength(std::string_view s) {
  // A cut-short sequence has at most 3 bytes; look for its lead among the last 3.
  const size_t start = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t i = s.size(); i-- > start;) {
    const uint8_t b = static_cast<uint8_t>(s[i]);
    if (b >= 0x80 && b <= 0xBF) continue;  // continuation byte: keep looking for the lead
    size_t prefix = 0;
    const std::string_view tail = s.substr(i);
    if (WellFormedSequenceLength(tail, &prefix) == 0 && prefix == tail.size() && prefix > 0) {
      return tail.size();
    }
    return 0;
  }
  return 0;
}

namespace {

// True if normalization never looks across the start of `cp`: a starter (combining class 0)
// without a decomposition that never combines with what precedes it. utf8proc marks the
// characters that compose as the second of a pair with comb_index >= 0x8000; Hangul vowel and
// trailing jamo compose algorithmically. NFC can then be applied to the pieces between such
// characters separately, and a piece that is one such character is already normalized.
bool IsNfcBoundary(uint32_t cp) {
  if (cp < 0x80) return true;
  if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return false;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  const bool second = p->comb_index != UINT16_MAX && p->comb_index >= 0x8000;
  return p->combining_class == 0 && p->decomp_seqindex == UINT16_MAX && !second;
}

uint32_t DecodeValid(std::string_view s, size_t i, size_t* len) {
  const uint8_t b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) {
    *len = 1;
    return b0;
  }
  if (b0 < 0xE0) {
    *len = 2;
    return ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3Fu);
  }
  if (b0 < 0xF0) {
    *len = 3;
    return ((b0 & 0x0Fu) << 12) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 6) |
           (static_cast<uint8_t>(s[i + 2]) & 0x3Fu);
  }
  *len = 4;
  return ((b0 & 0x07u) << 18) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 12) |
         ((static_cast<uint8_t>(s[i + 2]) & 0x3Fu) << 6) | (static_cast<uint8_t>(s[i + 3]) & 0x3Fu);
}

int CombiningClass(utf8proc_int32_t cp) { return utf8proc_get_property(cp)->combining_class; }

// NFC of one segment with utf8proc's data: canonical decomposition per character, canonical
// ordering, then utf8proc's composition. utf8proc_map would do the same, but its ordering step
// is a gnome sort, quadratic in a long run of combining marks; a stable sort by combining
// class gives the same order in O(n log n).
absl::Status AppendNfcSegment(std::string_view s, std::string* out) {
  constexpr utf8proc_option_t kOptions = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  thread_local std::vector<utf8proc_int32_t> cps;
  cps.clear();
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    const uint32_t cp = DecodeValid(s, i, &len);
    i += len;
    utf8proc_int32_t buf[32];  // canonical decompositions are at most 4 code points
    int boundclass = 0;
    const utf8proc_ssize_t n =
        utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32, kOptions, &boundclass);
    if (n < 0 || n > 32) {
      return absl::InternalError(absl::StrCat("NFC: cannot decompose U+", absl::Hex(cp)));
    }
    cps.insert(cps.end(), buf, buf + n);
  }
  for (size_t a = 0; a < cps.size();) {
    if (CombiningClass(cps[a]) == 0) {
      ++a;
      continue;
    }
    size_t b = a + 1;
    while (b < cps.size() && CombiningClass(cps[b]) != 0) ++b;
    if (b - a > 1) {
      std::stable_sort(cps.begin() + a, cps.begin() + b, [](utf8proc_int32_t x, utf8proc_int32_t y) {
        return CombiningClass(x) < CombiningClass(y);
      });
    }
    a = b;
  }
  const utf8proc_ssize_t n =
      utf8proc_normalize_utf32(cps.data(), static_cast<utf8proc_ssize_t>(cps.size()), kOptions);
  if (n < 0) return absl::InternalError(absl::StrCat("NFC composition failed: ", utf8proc_errmsg(n)));
  for (utf8proc_ssize_t k = 0; k < n; ++k) AppendUtf8(static_cast<uint32_t>(cps[k]), out);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> NormalizeNfcIfNeeded(std::string_view s, std::string* out) {
  // Code points below U+0300 are stable starters that never compose with what precedes them;
  // their UTF-8 lead bytes are all below 0xCC.
  bool all_below_0300 = true;
  for (char c : s) all_below_0300 &= static_cast<uint8_t>(c) < 0xCC;
  if (all_below_0300) return false;
  // Split `s` into segments that each start at a boundary character; only segments of more
  // than one character (or starting with a non-boundary one) go through utf8proc. Most text
  // (ASCII, CJK) consists of single-character segments and is returned untouched.
  size_t copied = 0;         // s[0, copied) is already in *out
  size_t segment = 0;        // start of the current segment
  bool segment_simple = true;
  bool changed = false;
  const auto flush = [&](size_t end) -> absl::Status {
    if (segment_simple) return absl::OkStatus();
    if (!changed) {
      out->clear();
      out->reserve(s.size() + 16);
      changed = true;
    }
    out->append(s.substr(copied, segment - copied));
    copied = end;
    return AppendNfcSegment(s.substr(segment, end - segment), out);
  };
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {  // ASCII: a boundary, no decoding needed
      if (i > segment) {
        absl::Status st = flush(i);
        if (!st.ok()) return st;
      }
      segment = i++;
      segment_simple = true;
      continue;
    }
    size_t len = 1;
    const uint32_t cp = DecodeValid(s, i, &len);
    if (IsNfcBoundary(cp)) {
      if (i > segment) {
        absl::Status st = flush(i);
        if (!st.ok()) return st;
      }
      segment = i;
      segment_simple = true;
    } else {
      segment_simple = false;
    }
    i += len;
  }
  if (s.size() > segment) {
    absl::Status st = flush(s.size());
    if (!st.ok()) return st;
  }
  if (changed) out->append(s.substr(copied));
  return changed;
}

absl::StatusOr<std::string> NormalizeNfc(std::string_view s) {
  std::string out;
  absl::StatusOr<bool> changed = NormalizeNfcIfNeeded(s, &out);
  if (!changed.ok()) return changed.status();
  return *changed ? out : std::string(s);
}

}  // namespace jllm::runtime
