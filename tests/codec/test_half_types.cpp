// The 16-bit element types (hcomm/core/half.hpp, float16.hpp, bfloat16.hpp): widening checked
// on all 65536 patterns of each, narrowing from float32 against references that share no code
// with hcomm: an IEEE rounding written with double arithmetic (std::nearbyint in the default
// round-to-nearest-even mode) and, for fp16, the compiler's _Float16 conversions (libgcc's
// soft-float on x86-64 without AVX512-FP16) and x86's F16C instruction where the CPU has it.
// Inputs: every sign, exponent and kept mantissa with the dropped bits at zero, one, just
// below, at and just above the halfway point and at their maximum, plus random patterns; the
// whole 2^32 sweep is the hidden "[.sweep]" case.
#include <catch2/catch.hpp>

#include <cmath>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <unordered_map>

#include "hcomm/core/dtype.hpp"
#include "hcomm/core/half.hpp"

namespace {

using hcomm::bf16;
using hcomm::f16;

float from_u32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t to_u32(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The format's significand bits (with the implicit one), smallest normal and largest exponent.
template <class H>
struct format;
template <>
struct format<bf16> {
  static constexpr int p = 8, emin = -126, emax = 127;
  static constexpr unsigned dropped = 16;  // float32 mantissa bits below the kept ones
};
template <>
struct format<f16> {
  static constexpr int p = 11, emin = -14, emax = 15;
  static constexpr unsigned dropped = 13;
};

// The value of every non-NaN pattern of H (from its widening, which the first test checks
// exhaustively), to turn a reference's rounded float back into H's bits.
template <class H>
const std::unordered_map<std::uint32_t, std::uint16_t>& pattern_of_value() {
  static const auto m = [] {
    std::unordered_map<std::uint32_t, std::uint16_t> t;
    for (std::uint32_t h = 0; h < 65536; ++h) {
      const float v = static_cast<float>(H::from_bits(static_cast<std::uint16_t>(h)));
      if (!std::isnan(v)) t[to_u32(v)] = static_cast<std::uint16_t>(h);
    }
    return t;
  }();
  return m;
}

// IEEE round to nearest, ties to even, of a non-NaN float to H, in double arithmetic.
template <class H>
std::uint16_t reference_narrow(float x) {
  using F = format<H>;
  double r = std::fabs(static_cast<double>(x));
  if (std::isinf(r)) {
  } else if (r != 0) {
    int e = 0;
    std::frexp(r, &e);                      // r = m * 2^e, m in [0.5, 1): leading bit 2^(e-1)
    const int lead = e - 1 > F::emin ? e - 1 : F::emin;
    const int q = lead - (F::p - 1);        // exponent of the unit in the last place
    r = std::ldexp(std::nearbyint(std::ldexp(r, -q)), q);
    if (r >= std::ldexp(1.0, F::emax + 1)) r = std::numeric_limits<double>::infinity();
  }
  const float v = std::copysign(static_cast<float>(r), x);
  const auto& m = pattern_of_value<H>();
  const auto it = m.find(to_u32(v));
  REQUIRE(it != m.end());  // the rounded value is one of H's
  return it->second;
}

// What narrowing must do with a NaN: sign and the top payload bits kept, quiet bit set.
template <class H>
std::uint16_t nan_narrow(std::uint32_t u) {
  using F = format<H>;
  const std::uint32_t quiet = std::is_same_v<H, bf16> ? 0x7FC0u : 0x7E00u;
  return static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | quiet | ((u & 0x7FFFFFu) >> F::dropped));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// x86's F16C conversion (round to nearest even, MXCSR's default), eight values at a time.
__attribute__((target("f16c,avx"))) void f16c_narrow(const float* in, std::uint16_t* out) {
  const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), h);
}
bool have_f16c() { return __builtin_cpu_supports("f16c"); }
#else
bool have_f16c() { return false; }
void f16c_narrow(const float*, std::uint16_t*) {}
#endif

template <class H>
std::uint16_t narrow_bits(float x) {
  return H(x).bits;
}

// Inputs: every sign x exponent x kept mantissa, with the dropped bits in five positions
// (zero, one, just below half, half, just above half, all ones), and random patterns.
template <class H, class F>
void for_each_input(F&& f) {
  constexpr unsigned d = format<H>::dropped;
  constexpr std::uint32_t half = 1u << (d - 1), all = (1u << d) - 1;
  const std::uint32_t lows[] = {0u, 1u, half - 1, half, half + 1, all};
  for (std::uint32_t hi = 0; hi < (1u << (32 - d)); ++hi)
    for (std::uint32_t lo : lows) f((hi << d) | lo);
  std::mt19937 g(16);
  for (int i = 0; i < (1 << 21); ++i) f(static_cast<std::uint32_t>(g()));
}

}  // namespace

TEMPLATE_TEST_CASE("half types: storage is 16 trivially copyable bits with a dtype of their own", "[half]", bf16, f16) {
  STATIC_REQUIRE(sizeof(TestType) == 2);
  STATIC_REQUIRE(std::is_trivially_copyable_v<TestType>);
  STATIC_REQUIRE(hcomm::half_element<TestType> && hcomm::element<TestType> && !hcomm::floating_element<TestType>);
  STATIC_REQUIRE(std::is_same_v<hcomm::word_of<TestType>, std::uint16_t>);
  STATIC_REQUIRE(std::is_same_v<hcomm::compute_of<TestType>, float>);
  STATIC_REQUIRE(hcomm::size_of(hcomm::dtype_of<TestType>) == 2);
  STATIC_REQUIRE(hcomm::is_valid(hcomm::dtype_of<TestType>));
  STATIC_REQUIRE(TestType::from_bits(0x1234).bits == 0x1234);
}

TEST_CASE("half types: dtype ids, names and sizes", "[half]") {
  using hcomm::dtype;
  STATIC_REQUIRE(static_cast<int>(dtype::f32) == 1 && static_cast<int>(dtype::f64) == 2 &&
                 static_cast<int>(dtype::bf16) == 3 && static_cast<int>(dtype::f16) == 4);
  STATIC_REQUIRE(hcomm::dtype_of<float> == dtype::f32 && hcomm::dtype_of<double> == dtype::f64 &&
                 hcomm::dtype_of<bf16> == dtype::bf16 && hcomm::dtype_of<f16> == dtype::f16);
  CHECK(hcomm::to_string(dtype::bf16) == "bf16");
  CHECK(hcomm::to_string(dtype::f16) == "f16");
  CHECK(hcomm::size_of(dtype::f32) == 4);
  CHECK(hcomm::size_of(dtype::f64) == 8);
  for (int b : {0, 5, 0x7F, 0xFF}) CHECK_FALSE(hcomm::is_valid(static_cast<dtype>(b)));
}

TEST_CASE("half types: widening is exact for all 65536 patterns of each", "[half]") {
  std::size_t wrong_f16 = 0, wrong_bf16 = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    // bf16: the pattern is the top half of the float's.
    wrong_bf16 += to_u32(static_cast<float>(bf16::from_bits(b))) != (h << 16);
    wrong_bf16 += to_u32(hcomm::widen(bf16::from_bits(b))) != hcomm::bf16_bits_to_f32_bits(b);
    const float got = static_cast<float>(f16::from_bits(b));
    const bool is_nan = (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
    if (is_nan) {
      // NaN: sign and payload in place, nothing quieted.
      wrong_f16 += to_u32(got) != (((h & 0x8000u) << 16) | 0x7F800000u | ((h & 0x3FFu) << 13));
    } else {
#if defined(__FLT16_MAX__)
      _Float16 r;
      std::memcpy(&r, &b, 2);
      wrong_f16 += to_u32(got) != to_u32(static_cast<float>(r));
#endif
      // and by the definition: (-1)^s 2^(e-15) 1.m, or 2^-24 m for e = 0
      const unsigned e = (h >> 10) & 0x1F, m = h & 0x3FF;
      const double want = e == 31 ? std::numeric_limits<double>::infinity()
                          : e == 0 ? std::ldexp(static_cast<double>(m), -24)
                                   : std::ldexp(1.0 + m / 1024.0, static_cast<int>(e) - 15);
      wrong_f16 += static_cast<double>(got) != ((h & 0x8000u) ? -want : want) || std::signbit(got) != ((h & 0x8000u) != 0);
    }
  }
  CHECK(wrong_bf16 == 0);
  CHECK(wrong_f16 == 0);
}

TEMPLATE_TEST_CASE("half types: narrowing from float rounds to nearest even like the references", "[half]", bf16,
                   f16) {
  std::size_t checked = 0, wrong = 0, wrong_nan = 0, wrong_builtin = 0, wrong_f16c = 0,
              rounded_differently_from_truncation = 0;
  const bool f16c = std::is_same_v<TestType, f16> && have_f16c();
  for_each_input<TestType>([&](std::uint32_t u) {
    const float x = from_u32(u);
    const std::uint16_t got = narrow_bits<TestType>(x);
    ++checked;
    if (f16c) {  // the hardware's conversion, NaN included
      alignas(32) float x8[8] = {x, x, x, x, x, x, x, x};
      alignas(16) std::uint16_t r8[8];
      f16c_narrow(x8, r8);
      wrong_f16c += got != r8[0];
    }
    if (std::isnan(x)) {
      wrong_nan += got != nan_narrow<TestType>(u);
      return;
    }
    const std::uint16_t want = reference_narrow<TestType>(x);
    wrong += got != want;
    // The same through the generic spellings (narrow, narrow_bits on patterns).
    wrong += hcomm::narrow<TestType>(x).bits != want || hcomm::narrow_bits<TestType>(u) != want;
    // Truncation (dropping the low bits) would differ here: the inputs do test the rounding.
    const std::uint16_t truncated = std::is_same_v<TestType, bf16> ? static_cast<std::uint16_t>(u >> 16) : want;
    rounded_differently_from_truncation += std::is_same_v<TestType, bf16> && truncated != want;
#if defined(__FLT16_MAX__)
    if constexpr (std::is_same_v<TestType, f16>) {
      const _Float16 r = static_cast<_Float16>(x);
      std::uint16_t rb;
      std::memcpy(&rb, &r, 2);
      wrong_builtin += got != rb;
      // Truncation toward zero of the same value, as a second witness that ties and
      // above-half cases are present.
      const float back = static_cast<float>(r);
      rounded_differently_from_truncation += std::fabs(back) > std::fabs(x);
    }
#endif
  });
  INFO(checked << " inputs, F16C " << (f16c ? "compared" : "absent or not fp16"));
  CHECK(wrong_f16c == 0);
  CHECK(wrong == 0);
  CHECK(wrong_nan == 0);
  CHECK(wrong_builtin == 0);
  CHECK(rounded_differently_from_truncation > 1000);
}

TEMPLATE_TEST_CASE("half types: the edges of narrowing", "[half]", bf16, f16) {
  constexpr bool b = std::is_same_v<TestType, bf16>;
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(TestType(inf).bits == (b ? 0x7F80 : 0x7C00));
  CHECK(TestType(-inf).bits == (b ? 0xFF80 : 0xFC00));
  CHECK(TestType(-0.0f).bits == 0x8000);
  CHECK(TestType(0.0f).bits == 0x0000);
  CHECK(TestType(1.0f).bits == (b ? 0x3F80 : 0x3C00));
  if constexpr (b) {
    CHECK(TestType(std::numeric_limits<float>::max()).bits == 0x7F80);  // past the midpoint: Inf
    CHECK(TestType(from_u32(0x3F808000u)).bits == 0x3F80);            // tie to even (down)
    CHECK(TestType(from_u32(0x3F818000u)).bits == 0x3F82);            // tie to even (up)
    CHECK(TestType(from_u32(0x00000001u)).bits == 0x0000);            // float subnormal below half a unit
    CHECK(TestType(from_u32(0x00008001u)).bits == 0x0001);            // just above half a unit
  } else {
    CHECK(TestType(65504.0f).bits == 0x7BFF);
    CHECK(TestType(65519.99f).bits == 0x7BFF);
    CHECK(TestType(65520.0f).bits == 0x7C00);                         // the midpoint ties to Inf (even)
    CHECK(TestType(std::ldexp(1.0f, -24)).bits == 0x0001);            // smallest subnormal
    CHECK(TestType(std::ldexp(1.0f, -25)).bits == 0x0000);            // half of it: tie to even, zero
    CHECK(TestType(std::ldexp(1.5f, -25)).bits == 0x0001);
    CHECK(TestType(std::ldexp(3.0f, -25)).bits == 0x0002);            // 1.5 units: tie to even, up
    CHECK(TestType(std::ldexp(1.0f, -14) * (1.0f - std::ldexp(1.0f, -12))).bits == 0x0400);  // rounds up to normal
    CHECK(TestType(1.0f + std::ldexp(1.0f, -11)).bits == 0x3C00);     // tie to even (down)
    CHECK(TestType(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3C02); // tie to even (up)
  }
  // NaN: quiet, sign and top payload kept; a signalling NaN's payload survives narrowing.
  CHECK(TestType(from_u32(0x7FC00000u)).bits == (b ? 0x7FC0 : 0x7E00));
  CHECK(TestType(from_u32(0xFF800001u)).bits == (b ? 0xFFC0 : 0xFE00));
  CHECK(TestType(from_u32(0x7FA00000u)).bits == (b ? 0x7FE0 : 0x7F00));
}

// round_to_bf16 (the branch-free rounding the trainer's bf16 loops use) is the widened
// narrowing, bit for bit: every high half with the low halves around the midpoint, and random
// patterns (NaN, Inf and the overflow to Inf among them).
TEST_CASE("half types: round_to_bf16 is the widened bf16 narrowing", "[half]") {
  std::size_t wrong = 0, checked = 0;
  for_each_input<bf16>([&](std::uint32_t u) {
    const float x = from_u32(u), got = hcomm::round_to_bf16(x);
    const float want = hcomm::bf16_bits_to_float(hcomm::to_bf16_bits(x));
    std::uint32_t g, w;
    std::memcpy(&g, &got, 4);
    std::memcpy(&w, &want, 4);
    wrong += g != w;
    ++checked;
  });
  INFO(checked << " patterns");
  CHECK(wrong == 0);
}

TEST_CASE("half types: the whole float32 range narrows like the references", "[half][.sweep]") {
  // fp16: every pattern against F16C where the CPU has it (else _Float16); bf16: the double
  // reference on every 4096th pattern (it is slow), NaN rule on every NaN.
  const bool f16c = have_f16c();
  std::size_t wrong = 0;
  alignas(32) float x8[8];
  alignas(16) std::uint16_t r8[8];
  for (std::uint64_t v = 0; v < (std::uint64_t{1} << 32); v += 8) {
    for (int j = 0; j < 8; ++j) x8[j] = from_u32(static_cast<std::uint32_t>(v + j));
    if (f16c) f16c_narrow(x8, r8);
    for (int j = 0; j < 8; ++j) {
      const auto u = static_cast<std::uint32_t>(v + j);
      const float x = x8[j];
      if (std::isnan(x)) {
        wrong += f16(x).bits != nan_narrow<f16>(u) || bf16(x).bits != nan_narrow<bf16>(u);
        if (f16c) wrong += f16(x).bits != r8[j];
        continue;
      }
      if (f16c) {
        wrong += f16(x).bits != r8[j];
      } else {
#if defined(__FLT16_MAX__)
        const _Float16 r = static_cast<_Float16>(x);
        std::uint16_t rb;
        std::memcpy(&rb, &r, 2);
        wrong += f16(x).bits != rb;
#endif
      }
      if ((u & 0xFFFu) == 0x7FFu) wrong += bf16(x).bits != reference_narrow<bf16>(x);
    }
  }
  CHECK(wrong == 0);
}
