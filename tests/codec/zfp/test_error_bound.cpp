// The ZFP codec's accuracy: the error on smooth data stays within what the rate implies.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>

#include "zfp_test_util.hpp"

using namespace zfp_test;

namespace {

// Bound per block, with 2^emax the power of two just above the block's largest |v|:
//   |err| <= 2^emax * max(2^(5 - R), 2^(6 - P))       for R >= 8   (P = 32 f32, 64 f64)
//   |err| <= 2^(emax + 3)                              for R < 8
// Why: after the 9 (f32) / 12 (f64) header bits the budget is 4R - 9 (4R - 12) bits; once all
// four coefficients are significant each bit plane costs 4 bits and the planes before that cost
// less, so at least about R - 3 planes below the block exponent are coded: coefficients are
// exact to 2^(emax - R + 3); the inverse lifting's rows have gain below 4 (2 more bits). The
// floor is the precision of the P-bit block-floating-point integers (30 resp. 62 bits, minus
// what the lifting's shifts drop). At R < 8 the budget is only 3..23 bits: only the size of
// the error is bounded.
template <class T>
void check_error_bound(unsigned rate) {
  const std::size_t n = 100003;
  const auto x = make_data<T>(kind::smooth, n, 7);
  const auto y = our_decode<T>(our_encode(x, rate).payload, n, rate);
  constexpr int P = sizeof(T) * 8;
  for (std::size_t b = 0; b < n; b += 4) {
    double m = 0;
    const std::size_t e = std::min(n, b + 4);
    for (std::size_t i = b; i < e; ++i) m = std::max(m, std::fabs(static_cast<double>(x[i])));
    int emax = 0;
    std::frexp(m, &emax);
    const double bound = rate >= 8 ? std::ldexp(1.0, emax) * std::max(std::ldexp(1.0, 5 - static_cast<int>(rate)),
                                                                        std::ldexp(1.0, 6 - P))
                                   : std::ldexp(1.0, emax + 3);
    for (std::size_t i = b; i < e; ++i) {
      const double err = std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i]));
      if (!(err <= bound)) {
        INFO("rate " << rate << " index " << i << " x=" << x[i] << " y=" << y[i] << " bound " << bound);
        REQUIRE(err <= bound);
      }
    }
  }
}

}  // namespace

TEST_CASE("zfp error on smooth data is within what the rate implies", "[zfp]") {
  for (unsigned rate : {3u, 4u, 8u, 12u, 16u, 24u, 32u, 48u, 64u}) {
    check_error_bound<float>(rate);
    check_error_bound<double>(rate);
  }
  // And the bound is not vacuous: rate 16 on this field is far better than rate 8.
  const auto x = make_data<float>(kind::smooth, 4096, 1);
  auto rmse = [&](unsigned r) {
    const auto y = our_decode<float>(our_encode(x, r).payload, x.size(), r);
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    return std::sqrt(s / x.size());
  };
  REQUIRE(rmse(16) < rmse(8) / 100);
}
