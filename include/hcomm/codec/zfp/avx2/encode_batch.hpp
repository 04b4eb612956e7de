// hcomm/codec/zfp/avx2/encode_batch.hpp: the ZFP encoder's AVX2 batch coder: 8 float blocks
// of 12..64 bits at once, the same bits as encode_block (../plane_coder.hpp).
//
// The batch coders code 8 float blocks of 12..64 bits (rates 3..16) side by side, one block per
// 32-bit lane of an AVX2 register (a pair of lanes for blocks over 32 bits), with no data-
// dependent branch, so that consecutive blocks overlap instead of serialising on mispredicted
// branches. They code exactly as encode_block / decode_block, organised so that nothing but
// the bit position is carried from plane to plane: the number of coefficients significant
// before plane k is known up front, n(k) = #{i : m[i] > k}, so each plane's code is one table
// lookup (a gather) indexed by (n, plane bits), and a block's bits are the codes of its
// consecutive planes laid end to end until the budget is spent; the decoder looks each plane
// up by (n, budget bits left, next 7 stream bits). Only float (every plane is
// coded: kmin = 0), 8 whole blocks of finite values; everything else goes block by block.
#pragma once
#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#include <immintrin.h>

#include <climits>
#include <cstdint>

#include "hcomm/codec/zfp/avx2/lanes.hpp"
#include "hcomm/codec/zfp/plane_tables.hpp"
#include "hcomm/codec/zfp/traits.hpp"

namespace hcomm::codec::zfp_detail::avx2 {

// enc_plane(n, x) at index 16 n + x (the encoder's plane table).
struct enc_table32_t {
  std::uint32_t v[80];
};
constexpr enc_table32_t make_enc_table32() {
  enc_table32_t t{};
  for (unsigned i = 0; i < 80; ++i) t.v[i] = enc_plane(i >> 4, i & 15u);
  return t;
}
inline constexpr enc_table32_t enc_table32 = make_enc_table32();

// The top plane m[0] (code0: its table code) makes coefficient 0 (and maybe more)
// significant. If it is alone, the planes down to m[1] + 1 (or to plane 0 when u[1..3] = 0)
// cost 2 bits each, its bit and a 0 group test: that run (run planes) is coded in bulk from
// u[0]'s bits, reversed (below: the highest plane in bit 0) and spread out by the caller.
HCOMM_ZFP_AVX2_FN void top_plane_and_run_avx2(const __m256i* u, const __m256i* sfx, const __m256i* m, __m256i& code0,
                                              __m256i& run, __m256i& below) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  const __m256i k0 = m[0];
  code0 = _mm256_i32gather_epi32(reinterpret_cast<const int*>(enc_table32.v), plane_bits_avx2(u, k0), 4);
  const __m256i m1 = _mm256_blendv_epi8(_mm256_set1_epi32(-1), m[1], _mm256_xor_si256(_mm256_cmpeq_epi32(sfx[1], zero), _mm256_set1_epi32(-1)));
  run = _mm256_max_epi32(_mm256_sub_epi32(_mm256_sub_epi32(k0, m1), one), zero);
  const __m256i topbits = _mm256_andnot_si256(_mm256_cmpeq_epi32(k0, zero),
                                              _mm256_sllv_epi32(u[0], _mm256_and_si256(_mm256_sub_epi32(_mm256_set1_epi32(32), k0), _mm256_set1_epi32(31))));
  below = _mm256_and_si256(bitrev32_avx2(topbits), _mm256_sub_epi32(_mm256_sllv_epi32(one, run), one));  // run <= 31
}
// The table code of stepped plane j (plane k = m[0] - j) of every lane: nothing below plane 0
// or from plane j4 on (those are coded in bulk afterwards).
HCOMM_ZFP_AVX2_FN __m256i stepped_plane_code_avx2(const __m256i* u, const __m256i* m, __m256i j, __m256i j4) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i k = _mm256_sub_epi32(m[0], j);
  const __m256i xb = plane_bits_avx2(u, _mm256_max_epi32(k, zero));
  // n = number of m[i] > k (cmpgt gives -1 per true)
  const __m256i nneg = _mm256_add_epi32(_mm256_add_epi32(_mm256_cmpgt_epi32(m[0], k), _mm256_cmpgt_epi32(m[1], k)),
                                        _mm256_add_epi32(_mm256_cmpgt_epi32(m[2], k), _mm256_cmpgt_epi32(m[3], k)));
  const __m256i idx = _mm256_add_epi32(_mm256_slli_epi32(_mm256_sub_epi32(zero, nneg), 4), xb);
  const __m256i code = _mm256_i32gather_epi32(reinterpret_cast<const int*>(enc_table32.v), idx, 4);
  const __m256i keep = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero, k), _mm256_cmpgt_epi32(j4, j));
  return _mm256_and_si256(code, keep);
}

// The batch coders' common start, 8 float blocks (v[0..31], finite) in the 32-bit lanes:
// amax = largest |value| bits, e = block exponent + 1 (the header's), u[i] = coefficient i in
// negabinary, sfx[i] = u[i] | ... | u[3], m[i] = top set plane of sfx[i] (0 when none).
HCOMM_ZFP_AVX2_FN void batch_planes_avx2(const float* v, __m256i& amax, __m256i& e, __m256i* u, __m256i* sfx,
                                         __m256i* m) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  // x[i] lane l = v[4l + i]: four loads and a 4x4 transpose in each 128-bit half (blocks 0..3
  // low, 4..7 high), cheaper than four gathers
  __m256 x[4];
  {
    const __m256 l0 = _mm256_loadu_ps(v), l1 = _mm256_loadu_ps(v + 8), l2 = _mm256_loadu_ps(v + 16),
                 l3 = _mm256_loadu_ps(v + 24);
    const __m256 a = _mm256_permute2f128_ps(l0, l2, 0x20), b = _mm256_permute2f128_ps(l0, l2, 0x31);  // blocks 0|4, 1|5
    const __m256 c = _mm256_permute2f128_ps(l1, l3, 0x20), d = _mm256_permute2f128_ps(l1, l3, 0x31);  // blocks 2|6, 3|7
    const __m256 t0 = _mm256_unpacklo_ps(a, b), t1 = _mm256_unpackhi_ps(a, b);
    const __m256 t2 = _mm256_unpacklo_ps(c, d), t3 = _mm256_unpackhi_ps(c, d);
    x[0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    x[1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    x[2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    x[3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
  amax = zero;
  for (int i = 0; i < 4; ++i) amax = _mm256_max_epi32(amax, _mm256_and_si256(_mm256_castps_si256(x[i]), absmask));
  e = _mm256_add_epi32(_mm256_srli_epi32(amax, 23), one);
  const __m256i sexp = _mm256_sub_epi32(_mm256_set1_epi32(157), e);  // 30 - (e - 127)
  const __m256i ebias = _mm256_set1_epi32(127);
  // libzfp's scale overflows to +inf for sexp > 127 and x86 converts that to INT_MIN; |x * s|
  // < 2^30 otherwise
  const __m256i tiny = _mm256_cmpgt_epi32(sexp, ebias);
  const __m256 sc = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_min_epi32(sexp, ebias), ebias), 23));
  const __m256i intmin = _mm256_set1_epi32(INT_MIN);
  __m256i q[4];
  for (int i = 0; i < 4; ++i)
    q[i] = _mm256_blendv_epi8(_mm256_cvttps_epi32(_mm256_mul_ps(x[i], sc)), intmin, tiny);
  // fwd_lift, lane-wise (wrapping adds, arithmetic shifts)
  {
    __m256i &a = q[0], &b = q[1], &c = q[2], &d = q[3];
    a = _mm256_srai_epi32(_mm256_add_epi32(a, d), 1); d = _mm256_sub_epi32(d, a);
    c = _mm256_srai_epi32(_mm256_add_epi32(c, b), 1); b = _mm256_sub_epi32(b, c);
    a = _mm256_srai_epi32(_mm256_add_epi32(a, c), 1); c = _mm256_sub_epi32(c, a);
    d = _mm256_srai_epi32(_mm256_add_epi32(d, b), 1); b = _mm256_sub_epi32(b, d);
    d = _mm256_add_epi32(d, _mm256_srai_epi32(b, 1)); b = _mm256_sub_epi32(b, _mm256_srai_epi32(d, 1));
  }
  const __m256i nb = _mm256_set1_epi32(static_cast<int>(0xaaaaaaaau));
  for (int i = 0; i < 4; ++i) u[i] = _mm256_xor_si256(_mm256_add_epi32(q[i], nb), nb);
  // m[i]: top set plane of u[i] | ... | u[3] (0 when none): for y = s >> 1, 0 if y = 0, else
  // floor(log2 y) + 1, from the float exponent of y with each bit that has a set bit above it
  // cleared (no two adjacent bits set: rounding to 24 bits cannot carry into the next power).
  sfx[3] = u[3];
  sfx[2] = _mm256_or_si256(u[2], sfx[3]);
  sfx[1] = _mm256_or_si256(u[1], sfx[2]);
  sfx[0] = _mm256_or_si256(u[0], sfx[1]);
  for (int i = 0; i < 4; ++i) {
    const __m256i y = _mm256_srli_epi32(sfx[i], 1);
    const __m256i top = _mm256_andnot_si256(_mm256_srli_epi32(y, 1), y);
    const __m256i ex = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(top)), 23);
    m[i] = _mm256_max_epi32(_mm256_sub_epi32(ex, _mm256_set1_epi32(126)), zero);
  }
}

// out |= x << at, lane-wise: pairs of lanes (Wide; nothing from at >= 64) or single lanes
// (x.hi ignored; nothing from at >= 32).
template <bool Wide>
HCOMM_ZFP_AVX2_FN void put_bits(wide_bits& out, wide_bits x, __m256i at) {
  if constexpr (Wide) or_wide(out, shl_wide(x, at));
  else out.lo = _mm256_or_si256(out.lo, _mm256_sllv_epi32(x.lo, at));
}
// Encodes 8 float blocks (v[0..31], finite) into bits[0..7], the 8 blocks in the 32-bit
// lanes of one register: Wide = false for 12 <= maxbits <= 32 (rates 3..8; a block is built in
// one lane, and shifts by 32 or more give 0 there, which is what the budget cut wants), Wide =
// true for 33 <= maxbits <= 64 (rates 9..16; a block in a pair of lanes, wide_bits). The bits
// are encode_block's. (AVX2 variant only.)
template <bool Wide>
__attribute__((target("avx2,bmi2,lzcnt"))) inline void encode_batch_f32_avx2(const float* v, unsigned maxbits,
                                                                             u64* bits) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  __m256i amax, e, u[4], sfx[4], m[4];
  batch_planes_avx2(v, amax, e, u, sfx, m);
  const __m256i vmax = _mm256_set1_epi32(static_cast<int>(maxbits));
  // header, then one 0 bit per empty plane above m[0]
  wide_bits out{_mm256_add_epi32(_mm256_add_epi32(e, e), one), zero};
  const __m256i left = _mm256_set1_epi32(static_cast<int>(maxbits - 9));
  __m256i pos = _mm256_add_epi32(_mm256_set1_epi32(9), _mm256_min_epi32(_mm256_sub_epi32(_mm256_set1_epi32(31), m[0]), left));
  const __m256i seven = _mm256_set1_epi32(0x7f), fifteen = _mm256_set1_epi32(15);
  // The top plane m[0], then the run of 2-bit planes down to m[1] + 1 coded in bulk (a narrow
  // block keeps at most 23 - its first plane's bits of the run: the low 16 planes suffice).
  __m256i code0, run, below;
  top_plane_and_run_avx2(u, sfx, m, code0, run, below);
  const __m256i jstart = _mm256_add_epi32(run, one);
  {
    put_bits<Wide>(out, {_mm256_and_si256(code0, seven), zero}, pos);
    const __m256i p2 = _mm256_add_epi32(pos, _mm256_and_si256(_mm256_srli_epi32(code0, 8), fifteen));
    const wide_bits rbits{spread2_avx2(below), Wide ? spread2_avx2(_mm256_srli_epi32(below, 16)) : zero};
    const __m256i room = _mm256_max_epi32(_mm256_sub_epi32(vmax, p2), zero);
    put_bits<Wide>(out, rbits, p2);
    pos = _mm256_add_epi32(p2, _mm256_min_epi32(_mm256_add_epi32(run, run), room));
  }
  // The other planes with fewer than 4 significant, one per step through the table, up to
  // plane j4 = m[0] - m[3] + 1 (all of them when u[3] = 0, for which m[3] = 0 says nothing).
  // Each costs at least 2 bits, so budget / 2 + 2 steps fill any budget; stop early once
  // every lane is full or past them.
  const __m256i u3zero = _mm256_cmpeq_epi32(u[3], zero);
  const __m256i j4 = _mm256_add_epi32(_mm256_sub_epi32(m[0], _mm256_andnot_si256(u3zero, m[3])), one);
  const int budget = static_cast<int>(maxbits) - 9;
  const int tmax = budget / 2 + 2 < 32 ? budget / 2 + 2 : 32;
  for (int t0 = 0; t0 < tmax; t0 += 4) {
    for (int t = t0; t < t0 + 4; ++t) {
      const __m256i c = stepped_plane_code_avx2(u, m, _mm256_add_epi32(jstart, _mm256_set1_epi32(t)), j4);
      put_bits<Wide>(out, {_mm256_and_si256(c, seven), zero}, pos);
      pos = _mm256_add_epi32(pos, _mm256_and_si256(_mm256_srli_epi32(c, 8), fifteen));
    }
    const __m256i busy = _mm256_and_si256(_mm256_cmpgt_epi32(vmax, pos),
                                          _mm256_cmpgt_epi32(j4, _mm256_add_epi32(jstart, _mm256_set1_epi32(t0 + 4))));
    if (_mm256_movemask_epi8(busy) == 0) break;
  }
  // From plane k = m[0] - j4 down all four are significant: each plane is its 4 bits verbatim.
  // At least 13 bits precede (9 of header and at least 4 for the top plane: a group test and
  // three 0s when only coefficient 3 is set there), so at most 19 (narrow: 5 planes) or 51
  // (wide: 13 planes) are left. Planes k..k-7 (and k-8..k-15) of coefficient i to byte i (plane
  // k - b at bit 7 - b), then rotated to nibbles (plane k - b in nibble b). Planes below 0 come
  // out as 0 bits and bits past the budget are cut at the end, so the window goes in whole.
  {
    const __m256i k = _mm256_sub_epi32(m[0], j4);
    const __m256i sh = _mm256_sub_epi32(_mm256_set1_epi32(31), _mm256_max_epi32(k, zero));
    __m256i g[4];
    for (int i = 0; i < 4; ++i) g[i] = _mm256_sllv_epi32(u[i], sh);  // plane k at bit 31 (below plane 0: 0s)
    const __m256i top = _mm256_or_si256(
        _mm256_or_si256(byte_move<3, 0>(g[0]), byte_move<3, 1>(g[1])),
        _mm256_or_si256(byte_move<3, 2>(g[2]), _mm256_and_si256(g[3], _mm256_set1_epi32(static_cast<int>(0xff000000u)))));
    wide_bits w{bytes_to_raw_planes(top), zero};
    if constexpr (Wide)
      w.hi = bytes_to_raw_planes(_mm256_or_si256(_mm256_or_si256(byte_move<2, 0>(g[0]), byte_move<2, 1>(g[1])),
                                                 _mm256_or_si256(byte_move<2, 2>(g[2]), byte_move<2, 3>(g[3]))));
    const __m256i ok = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero, k), _mm256_cmpgt_epi32(vmax, pos));
    put_bits<Wide>(out, {_mm256_and_si256(w.lo, ok), _mm256_and_si256(w.hi, ok)}, pos);
  }
  const __m256i keep = _mm256_xor_si256(_mm256_cmpeq_epi32(amax, zero), _mm256_set1_epi32(-1));
  if constexpr (Wide) {
    const __m256i himask =
        maxbits >= 64 ? _mm256_set1_epi32(-1) : _mm256_set1_epi32(static_cast<int>((1u << (maxbits - 32)) - 1));
    const __m256i lo = _mm256_and_si256(out.lo, keep), hi = _mm256_and_si256(_mm256_and_si256(out.hi, himask), keep);
    // (lo, hi) lanes -> 64-bit blocks 0..7
    const __m256i a = _mm256_unpacklo_epi32(lo, hi), b = _mm256_unpackhi_epi32(lo, hi);  // blocks 0,1,4,5 / 2,3,6,7
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bits), _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bits + 4), _mm256_permute2x128_si256(a, b, 0x31));
  } else {
    const __m256i mask =
        maxbits >= 32 ? _mm256_set1_epi32(-1) : _mm256_set1_epi32(static_cast<int>((1u << maxbits) - 1));
    alignas(32) std::uint32_t o[batch_lanes];
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), _mm256_and_si256(_mm256_and_si256(out.lo, mask), keep));
    for (int l = 0; l < batch_lanes; ++l) bits[l] = o[l];
  }
}

}  // namespace hcomm::codec::zfp_detail::avx2
#endif  // HCOMM_X86_VARIANTS
