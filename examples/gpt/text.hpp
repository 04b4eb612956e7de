// examples/gpt/text.hpp: showing sampled bytes on a terminal.
#pragma once
#include <cstdio>
#include <string>

namespace gpt {

// Sampled bytes as a terminal can show them: valid UTF-8 sequences as they are, control bytes
// (but newlines) as '?', any other byte as \xNN (a byte-level model can emit anything).
inline std::string printable_text(const std::string& s) {
  std::string out;
  const auto at = [&](std::size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned c = at(i);
    if (c < 0x80) {
      out += (c < 32 && c != '\n') || c == 0x7f ? '?' : static_cast<char>(c);
      ++i;
      continue;
    }
    // continuation count and the allowed range of the second byte (no overlongs, surrogates
    // or code points above U+10FFFF)
    unsigned k = 0, lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) k = 1;
    else if (c >= 0xE0 && c <= 0xEF) k = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) k = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    bool ok = k > 0 && at(i + 1) >= lo && at(i + 1) <= hi;
    for (unsigned j = 2; ok && j <= k; ++j) ok = at(i + j) >= 0x80 && at(i + j) <= 0xBF;
    if (ok) {
      out.append(s, i, k + 1);
      i += k + 1;
    } else {
      char b[5];
      std::snprintf(b, sizeof b, "\\x%02X", c);
      out += b;
      ++i;
    }
  }
  return out;
}

}  // namespace gpt
