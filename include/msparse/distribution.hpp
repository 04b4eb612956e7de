// msparse/distribution.hpp: how an overall density is spread over layers: ERK (as RigL)
// or uniform; which layers are sparse is part of the layer list.
//
//   auto layers = msparse::gpt_linear_layers({.layers = 12, .C = 768, .heads = 12, .T = 1024, .vocab = 50257});
//   auto d = msparse::erk_densities(layers, 0.10);    // d[i] for layers[i]; dense layers get 1
//   std::size_t k = msparse::active_count(layers[0], d[0]);
//
// The overall density counts only the layers marked sparse (as RigL and the MST code do):
// sum(density_i * n_i) over sparse layers = density * sum(n_i). Embeddings, norms and
// biases are not in the list at all, or listed with sparse = false.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hcomm/core/error.hpp"

namespace msparse {

struct layer_shape {
  std::string name;
  std::size_t rows = 0;  // output features
  std::size_t cols = 0;  // input features
  bool sparse = true;
  std::size_t size() const noexcept { return rows * cols; }
};

enum class distribution_kind : unsigned char { uniform = 0, erk = 1 };

// Uniform: every sparse layer at the overall density.
inline std::vector<double> uniform_densities(const std::vector<layer_shape>& layers, double density) {
  HCOMM_EXPECTS(density > 0.0 && density <= 1.0, "msparse: overall density must be in (0, 1]");
  std::vector<double> d(layers.size(), 1.0);
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (layers[i].sparse) d[i] = density;
  return d;
}

// Erdos-Renyi-Kernel (RigL's "erdos_renyi" for 2-D weights): density_i = eps * raw_i with
// raw_i = ((rows+cols)/(rows*cols))^power; layers whose density would exceed 1 are made
// dense and eps is solved again over the rest, until no layer exceeds 1.
inline std::vector<double> erk_densities(const std::vector<layer_shape>& layers, double density,
                                         double power = 1.0) {
  HCOMM_EXPECTS(density > 0.0 && density <= 1.0, "msparse: overall density must be in (0, 1]");
  std::vector<double> out(layers.size(), 1.0);
  std::vector<double> raw(layers.size(), 0.0);
  std::vector<char> dense(layers.size(), 0);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].sparse) continue;
    HCOMM_EXPECTS(layers[i].size() > 0, "msparse: a sparse layer has no weights: " + layers[i].name);
    raw[i] = std::pow(double(layers[i].rows + layers[i].cols) / double(layers[i].size()), power);
  }
  if (density >= 1.0) return out;
  for (;;) {
    double rhs = 0.0, divisor = 0.0, max_raw = 0.0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (!layers[i].sparse) continue;
      const double n = double(layers[i].size());
      if (dense[i]) {
        rhs -= n * (1.0 - density);  // a dense layer spends the budget of its would-be zeros
      } else {
        rhs += n * density;
        divisor += raw[i] * n;
        max_raw = std::max(max_raw, raw[i]);
      }
    }
    HCOMM_EXPECTS(divisor > 0.0, "msparse: ERK found no layer left to sparsify");
    const double eps = rhs / divisor;
    if (eps * max_raw <= 1.0) {
      for (std::size_t i = 0; i < layers.size(); ++i)
        if (layers[i].sparse && !dense[i]) out[i] = eps * raw[i];
      return out;
    }
    for (std::size_t i = 0; i < layers.size(); ++i)
      if (layers[i].sparse && !dense[i] && raw[i] == max_raw) dense[i] = 1;
  }
}

inline std::vector<double> layer_densities(distribution_kind kind, const std::vector<layer_shape>& layers,
                                           double density) {
  return kind == distribution_kind::erk ? erk_densities(layers, density) : uniform_densities(layers, density);
}

// Active weights for a layer at a density: rounded to nearest, so the realised density is
// within 1/(2n) of the target.
inline std::size_t active_count(const layer_shape& l, double density) {
  if (!l.sparse) return l.size();
  return static_cast<std::size_t>(std::llround(density * double(l.size())));
}

// Overall density realised by per-layer densities (sparse layers only).
inline double overall_density(const std::vector<layer_shape>& layers, const std::vector<double>& d) {
  double on = 0, n = 0;
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (layers[i].sparse) {
      on += d[i] * double(layers[i].size());
      n += double(layers[i].size());
    }
  return n > 0 ? on / n : 1.0;
}

// --- a GPT-like model's linear layers --------------------------------------------------

struct gpt_shape {
  std::size_t layers = 12;  // transformer blocks
  std::size_t C = 768;      // embedding width
  std::size_t heads = 12;
  std::size_t T = 1024;     // sequence length
  std::size_t vocab = 50257;
  bool sparse_lm_head = true;  // the LM head (tied to the token embedding) is sparse in MST
  bool causal = true;          // attention over T(T+1)/2 entries per sequence; false: T^2 (an encoder)
  bool mlm_transform = false;  // BERT's MLM head: a dense C x C transform on every token before the decoder
};

// Per block: qkv (3C x C), attn_out (C x C), fc (4C x C), proj (C x 4C); then lm_head
// (vocab x C). Order: block 0's four, block 1's four, ..., lm_head last.
inline std::vector<layer_shape> gpt_linear_layers(const gpt_shape& g) {
  std::vector<layer_shape> v;
  v.reserve(g.layers * 4 + 1);
  for (std::size_t b = 0; b < g.layers; ++b) {
    // append() rather than operator+: GCC 12 warns falsely (-Wrestrict) on the latter.
    auto name = [b](const char* leaf) {
      std::string n("h");
      n.append(std::to_string(b)).append(".").append(leaf);
      return n;
    };
    v.push_back({name("attn.qkv"), 3 * g.C, g.C, true});
    v.push_back({name("attn.out"), g.C, g.C, true});
    v.push_back({name("mlp.fc"), 4 * g.C, g.C, true});
    v.push_back({name("mlp.proj"), g.C, 4 * g.C, true});
  }
  v.push_back({"lm_head", g.vocab, g.C, g.sparse_lm_head});
  return v;
}

}  // namespace msparse
