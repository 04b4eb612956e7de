// Shared checks of the sparse linear layer against dense-with-mask references (OpenBLAS
// sgemm on the masked dense weight). Included by test_sparse_linear.cpp (host vector body)
// and test_sparse_linear_device_body.cpp (the f8 struct body that CUDA compiles).
#pragma once
#include <catch2/catch.hpp>
#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "msparse/layer/sparse_linear.hpp"

namespace {

using msparse::layer::sparse_linear;

struct problem {
  std::size_t out, in, tokens;
  std::vector<float> w, wm, b, x, dy;  // wm: masked dense weight
  std::vector<std::uint8_t> mask;
};

problem make_problem(std::size_t out, std::size_t in, std::size_t tokens, double sparsity, std::uint32_t seed,
                     bool empty_lines = false) {
  problem p{out, in, tokens, {}, {}, {}, {}, {}, {}};
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  p.w.resize(out * in);
  p.mask.resize(out * in);
  for (auto& v : p.w) v = u(g);
  for (auto& m : p.mask) m = coin(g) >= sparsity ? 1 : 0;
  if (empty_lines) {
    // every third row and every fifth column empty, row 1 dense (skew)
    for (std::size_t r = 0; r < out; ++r)
      for (std::size_t k = 0; k < in; ++k) {
        if (r % 3 == 0 || k % 5 == 0) p.mask[r * in + k] = 0;
        if (r == 1 && k % 5 != 0) p.mask[r * in + k] = 1;
      }
  }
  p.wm.resize(out * in);
  for (std::size_t i = 0; i < out * in; ++i) p.wm[i] = p.mask[i] ? p.w[i] : 0.0f;
  p.b.resize(out);
  for (auto& v : p.b) v = u(g);
  p.x.resize(tokens * in);
  p.dy.resize(tokens * out);
  for (auto& v : p.x) v = u(g);
  for (auto& v : p.dy) v = u(g);
  return p;
}

// |a - ref| <= tol * sum of |terms| (double), the fp32 rounding bound of a dot product up to a
// small factor; a missing or extra term is ~1/n of that sum, far above tol for n < 10^4.
constexpr double tol = 2e-5;

void check_close(const std::vector<float>& got, const std::vector<float>& ref, const std::vector<double>& abssum,
                 const char* what) {
  REQUIRE(got.size() == ref.size());
  std::size_t bad = 0;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - static_cast<double>(ref[i]));
    const double bound = tol * abssum[i] + 1e-30;
    if (!(err <= bound)) ++bad;
    worst = std::max(worst, err / (abssum[i] + 1e-30));
  }
  INFO(what << ": " << bad << " of " << got.size() << " out of bound, worst err/abssum " << worst);
  CHECK(bad == 0);
}

void run_case(std::size_t out, std::size_t in, std::size_t tokens, double sparsity, int threads, bool empty_lines,
              bool bias = true) {
  INFO("out " << out << " in " << in << " tokens " << tokens << " sparsity " << sparsity << " threads " << threads
              << " isa " << msparse::kernels::host_isa());
  problem p = make_problem(out, in, tokens, sparsity, static_cast<std::uint32_t>(out * 131 + in * 7 + tokens), empty_lines);
  hcomm::exec::host ex;
  ex.threads = threads;
  sparse_linear<> layer(in, out, bias, ex);
  // Inactive entries of the dense weight are poisoned: the layer must never read them.
  std::vector<float> poisoned = p.w;
  for (std::size_t i = 0; i < out * in; ++i)
    if (!p.mask[i]) poisoned[i] = std::numeric_limits<float>::quiet_NaN();
  layer.set_weight(poisoned.data(), p.mask.data());
  if (bias) std::copy(p.b.begin(), p.b.end(), layer.bias().begin());

  const int O = static_cast<int>(out), I = static_cast<int>(in), N = static_cast<int>(tokens);
  // forward: y = x Wm^T + b
  std::vector<float> y(tokens * out, -7.0f), y_ref(tokens * out);
  layer.forward(p.x.data(), tokens, y.data());
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t o = 0; o < out; ++o) y_ref[t * out + o] = bias ? p.b[o] : 0.0f;
  if (tokens && out && in)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, O, I, 1.0f, p.x.data(), I, p.wm.data(), I, 1.0f,
                y_ref.data(), O);
  std::vector<double> abs_y(tokens * out);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t o = 0; o < out; ++o) {
      double s = bias ? std::fabs(p.b[o]) : 0.0;
      for (std::size_t k = 0; k < in; ++k) s += std::fabs(double(p.x[t * in + k]) * p.wm[o * in + k]);
      abs_y[t * out + o] = s;
    }
  check_close(y, y_ref, abs_y, "forward");

  // backward: dx = dy Wm, dW = (dy^T x)[mask], db = colsum(dy)
  std::vector<float> dx(tokens * in, -7.0f), dx_ref(tokens * in, 0.0f);
  std::vector<float> dw(layer.weight().nnz(), -7.0f), db(out, -7.0f);
  layer.backward(p.dy.data(), p.x.data(), tokens, dx.data(), dw.data(), bias ? db.data() : nullptr);
  if (tokens && out && in)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, I, O, 1.0f, p.dy.data(), O, p.wm.data(), I, 0.0f,
                dx_ref.data(), I);
  std::vector<double> abs_dx(tokens * in);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t k = 0; k < in; ++k) {
      double s = 0;
      for (std::size_t o = 0; o < out; ++o) s += std::fabs(double(p.dy[t * out + o]) * p.wm[o * in + k]);
      abs_dx[t * in + k] = s;
    }
  check_close(dx, dx_ref, abs_dx, "input gradient");

  std::vector<float> gdense(out * in, 0.0f);
  if (tokens && out && in) layer.dense_weight_grad(p.dy.data(), p.x.data(), tokens, gdense.data());
  // packed gradient scattered into a NaN-filled dense matrix: inactive positions stay NaN
  std::vector<float> dw_dense(out * in, std::numeric_limits<float>::quiet_NaN());
  layer.weight().scatter_values(dw.data(), dw_dense.data());
  std::vector<float> dw_act, dw_ref_act;
  std::vector<double> abs_dw;
  std::size_t written_inactive = 0;
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t k = 0; k < in; ++k) {
      const std::size_t i = o * in + k;
      if (!p.mask[i]) {
        written_inactive += std::isnan(dw_dense[i]) ? 0 : 1;
        continue;
      }
      dw_act.push_back(dw_dense[i]);
      dw_ref_act.push_back(gdense[i]);
      double s = 0;
      for (std::size_t t = 0; t < tokens; ++t) s += std::fabs(double(p.dy[t * out + o]) * p.x[t * in + k]);
      abs_dw.push_back(s);
    }
  CHECK(written_inactive == 0);
  CHECK(dw_act.size() == layer.weight().nnz());
  check_close(dw_act, dw_ref_act, abs_dw, "weight gradient (SDDMM)");

  if (bias) {
    std::vector<float> db_ref(out, 0.0f);
    std::vector<double> abs_db(out, 0.0);
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t o = 0; o < out; ++o) {
        db_ref[o] += p.dy[t * out + o];
        abs_db[o] += std::fabs(p.dy[t * out + o]);
      }
    check_close(db, db_ref, abs_db, "bias gradient");
  }

  // accumulate = true adds to what is there
  if (tokens > 0) {
    std::vector<float> dx2 = dx, dw2 = dw;
    layer.backward(p.dy.data(), p.x.data(), tokens, dx2.data(), dw2.data(), nullptr, /*accumulate*/ true);
    std::vector<float> twice_dx(dx.size()), twice_dw(dw.size());
    for (std::size_t i = 0; i < dx.size(); ++i) twice_dx[i] = 2.0f * dx[i];
    for (std::size_t i = 0; i < dw.size(); ++i) twice_dw[i] = 2.0f * dw[i];
    std::vector<double> a2(abs_dx);
    for (auto& v : a2) v *= 2;
    check_close(dx2, twice_dx, a2, "accumulated input gradient");
    std::vector<double> aw(abs_dw);
    for (auto& v : aw) v *= 2;
    check_close(dw2, twice_dw, aw, "accumulated weight gradient");

    // x == nullptr: the tiles kept from the last forward give the same gradient, bit for bit
    std::vector<float> y2(tokens * out), dw3(dw.size(), -1.0f);
    layer.forward(p.x.data(), tokens, y2.data());
    CHECK(std::memcmp(y2.data(), y.data(), y.size() * sizeof(float)) == 0);
    layer.backward(p.dy.data(), nullptr, tokens, nullptr, dw3.data(), nullptr);
    CHECK(std::memcmp(dw3.data(), dw.data(), dw.size() * sizeof(float)) == 0);
  }
}

}  // namespace
