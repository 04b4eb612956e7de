// examples/gpt/data.hpp: byte-level tokenizer and a deterministic, resumable text loader.
//
//   gpt::text_data d = gpt::text_data::load("data/kjv.txt", 0.1f, T);
//   d.train_sequence(cursor, g, T, tokens, targets);   // global sequence g of this step
//
// Tokens are the file's bytes (vocab 256), so any UTF-8 text works and nothing is downloaded.
// The last val_frac of the file is validation, the rest training. A step reads B consecutive
// windows of T+1 bytes starting at `cursor`; DP rank d takes windows [d*B/DP, (d+1)*B/DP),
// so the global batch, and with it the loss curve, does not depend on the grid. The cursor
// advances by B*T per step and is saved in checkpoints.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "hcomm/core/error.hpp"

namespace gpt {

struct text_data {
  std::vector<std::uint8_t> bytes;
  std::int64_t train_len = 0, val_start = 0, val_len = 0;

  // Refuses a file too short for two windows of T+1 bytes in each part (train, validation).
  static void check_size(const std::string& path, std::int64_t n, float val_frac, int T) {
    std::int64_t val_len = static_cast<std::int64_t>(static_cast<double>(n) * val_frac);
    if (val_len < 2 * (T + 1)) val_len = 2 * (T + 1);
    if (n - val_len < 2 * (T + 1))
      hcomm::fail(hcomm::errc::invalid_argument, "data file '" + path + "' is too short for sequences of " +
                                                     std::to_string(T) + " bytes (" + std::to_string(n) + " bytes)");
  }

  static text_data load(const std::string& path, float val_frac, int T) {
    std::ifstream f(path, std::ios::binary);
    if (!f) hcomm::fail(hcomm::errc::io_failure, "cannot open data file '" + path + "' (run scripts/setup.sh for data/kjv.txt)");
    text_data d;
    d.bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    const std::int64_t n = static_cast<std::int64_t>(d.bytes.size());
    d.val_len = static_cast<std::int64_t>(static_cast<double>(n) * val_frac);
    if (d.val_len < 2 * (T + 1)) d.val_len = 2 * (T + 1);
    d.train_len = n - d.val_len;
    d.val_start = d.train_len;
    check_size(path, n, val_frac, T);
    return d;
  }

  // Window of T inputs and T next-byte targets starting at `start` inside [base, base + len).
  void window(std::int64_t base, std::int64_t len, std::uint64_t pos, int T, int* tokens, int* targets) const {
    const std::int64_t start = base + static_cast<std::int64_t>(pos % static_cast<std::uint64_t>(len - T - 1));
    for (int t = 0; t < T; ++t) {
      tokens[t] = bytes[start + t];
      targets[t] = bytes[start + t + 1];
    }
  }
  void train_sequence(std::uint64_t cursor, int g, int T, int* tokens, int* targets) const {
    window(0, train_len, cursor + static_cast<std::uint64_t>(g) * T, T, tokens, targets);
  }
  // Validation batch v, global sequence g: a fixed set of windows, the same at every eval.
  void val_sequence(int v, int B, int g, int T, int* tokens, int* targets) const {
    window(val_start, val_len, (static_cast<std::uint64_t>(v) * B + g) * T, T, tokens, targets);
  }
};

}  // namespace gpt
