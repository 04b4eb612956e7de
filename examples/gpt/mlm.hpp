// examples/gpt/mlm.hpp: BERT's masked-language-model data over the byte corpus (data.hpp).
//
//   gpt::mlm_data mlm{&text, cfg};
//   int n = mlm.train_sequence(cursor, g, tokens, targets);   // global sequence g of the step
//
// A sequence is [CLS] + T-2 bytes of the corpus + [SEP]. Masking is by whole words (or, with
// --mask-unit byte, by single non-whitespace bytes): the
// maskable units are runs of word bytes (ASCII letters and digits, and every byte >= 0x80,
// so a UTF-8 character stays inside its word) and single punctuation bytes; whitespace and the
// special tokens are never predicted. round(rate x (T-2)) positions (at least one) are chosen
// as in BERT's whole-word masking: units in a shuffled order, each taken if it still fits.
// Each chosen position becomes [MASK] (80%), a random byte (10%) or stays (10%); its target
// is the original byte, every other target is -1 (no loss).
//
// Everything is drawn from a counter-based RNG keyed on (seed, the sample's global index), so
// any grid, any micro-batching and a resumed run mask the same positions. The global index of
// training sequence g at data position `cursor` is cursor / T + g (the cursor advances by B*T
// per step); validation sequences have their own index range. scripts/reference_bert.py
// implements the same masking (the debug state's masks are checked against this one).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"
#include "data.hpp"
#include "hcomm/core/error.hpp"
#include "params.hpp"

namespace gpt {

inline bool mlm_word_byte(int b) {
  return (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || b >= 0x80;
}
inline bool mlm_space_byte(int b) { return b == ' ' || (b >= '\t' && b <= '\r'); }

// The RNG of sample `index`: splitmix64 (params.hpp) from a key of the seed and the index.
inline rng mlm_rng(std::uint64_t seed, std::uint64_t index) {
  return rng{seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x6D6C6Dull};
}

// Masks tokens[T] = [CLS] bytes [SEP] in place and writes targets[T]; returns the number of
// predicted positions. whole_words = false (--mask-unit byte) makes every non-whitespace byte
// a unit of its own, as token-level masking.
inline int mlm_mask(int* tokens, int* targets, int T, float rate, std::uint64_t seed, std::uint64_t index,
                    bool whole_words = true) {
  std::vector<std::pair<int, int>> units;  // [begin, end) over positions 1..T-2
  for (int i = 1; i < T - 1;) {
    const int b = tokens[i];
    if (mlm_space_byte(b)) { ++i; continue; }
    int j = i + 1;
    if (whole_words && mlm_word_byte(b))
      while (j < T - 1 && mlm_word_byte(tokens[j])) ++j;
    units.emplace_back(i, j);
    i = j;
  }
  rng r = mlm_rng(seed, index);
  for (std::size_t i = units.size(); i > 1; --i) {  // Fisher-Yates
    const std::size_t j = static_cast<std::size_t>(r.next_u64() % i);
    std::swap(units[i - 1], units[j]);
  }
  const int want = std::max(1, static_cast<int>(static_cast<double>(rate) * (T - 2) + 0.5));
  std::vector<char> chosen(static_cast<std::size_t>(T), 0);
  int got = 0;
  for (const auto& [b, e] : units) {
    if (got >= want) break;
    if (got + (e - b) > want) continue;
    for (int i = b; i < e; ++i) chosen[static_cast<std::size_t>(i)] = 1;
    got += e - b;
  }
  for (int i = 0; i < T; ++i) {
    targets[i] = -1;
    if (!chosen[static_cast<std::size_t>(i)]) continue;
    targets[i] = tokens[i];
    const double u = r.uniform();
    if (u < 0.8) tokens[i] = bert_token::mask;
    else if (u < 0.9) tokens[i] = static_cast<int>(r.next_u64() % 256);
  }
  return got;
}

struct mlm_data {
  const text_data* text = nullptr;
  int T = 0;
  float rate = 0.15f;
  bool whole_words = true;
  std::uint64_t seed = 0;

  mlm_data() = default;
  // Throws when the training or the validation text has no byte to mask (whitespace only).
  mlm_data(const text_data* t, const config& c)
      : text(t), T(c.block), rate(c.mask_rate), whole_words(c.mask_words), seed(c.seed) {
    auto maskable = [&](std::int64_t b, std::int64_t n) {
      for (std::int64_t i = b; i < b + n; ++i)
        if (!mlm_space_byte(text->bytes[static_cast<std::size_t>(i)])) return true;
      return false;
    };
    if (!maskable(0, text->train_len) || !maskable(text->val_start, text->val_len))
      hcomm::fail(hcomm::errc::invalid_argument,
                  std::string("its ") + (maskable(0, text->train_len) ? "validation" : "training") +
                      " text is whitespace only: masked-LM has no byte to predict");
  }

  // The T-2 bytes at window position pos of [base, base + len) (the windows of data.hpp).
  int sequence(std::int64_t base, std::int64_t len, std::uint64_t pos, std::uint64_t index, int* tokens,
               int* targets) const {
    const std::int64_t start = base + static_cast<std::int64_t>(pos % static_cast<std::uint64_t>(len - T - 1));
    tokens[0] = bert_token::cls;
    for (int t = 1; t < T - 1; ++t) tokens[t] = text->bytes[static_cast<std::size_t>(start + t - 1)];
    tokens[T - 1] = bert_token::sep;
    return mlm_mask(tokens, targets, T, rate, seed, index, whole_words);
  }
  int train_sequence(std::uint64_t cursor, int g, int* tokens, int* targets) const {
    const std::uint64_t tt = static_cast<std::uint64_t>(T);
    return sequence(0, text->train_len, cursor + g * tt, cursor / tt + static_cast<std::uint64_t>(g), tokens, targets);
  }
  // Validation batch v of B sequences, sequence g: the same windows and masks at every eval.
  int val_sequence(int v, int B, int g, int* tokens, int* targets) const {
    using u64 = std::uint64_t;
    const u64 i = static_cast<u64>(v) * static_cast<u64>(B) + static_cast<u64>(g);
    return sequence(text->val_start, text->val_len, i * static_cast<u64>(T), (u64{1} << 62) + i, tokens, targets);
  }
};

}  // namespace gpt
