// hcomm/codec/zfp/group_kernels.hpp: the ZFP codec's group kernels: group g codes values
// [256g, 256g + 256) (64 blocks of 4) into its own 4*rate stream words, so groups run in
// parallel on any executor:
//
//   ex.for_each(groups, zfp_detail::encode_group_kernel<float>{...});
//
// Host executors run them; device executors run the team kernels of team.hpp, which code
// with the same block functions (load_block, put_block's encode_block, decode_block) and
// give the same bytes. The portable body codes block by block (plane_coder.hpp). On x86-64
// hosts with the AVX2 tier (core/cpu_features.hpp) the group kernels run their AVX2 variant
// (avx2/group_kernels.hpp): the same loop compiled for AVX2, with whole runs of 8 finite float
// blocks at rates 3..16 handed to the batch coders. The bytes are libzfp's either way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/codec/zfp/avx2/group_kernels.hpp"
#include "hcomm/codec/zfp/bit_stream.hpp"
#include "hcomm/codec/zfp/plane_coder.hpp"
#include "hcomm/codec/zfp/traits.hpp"
#include "hcomm/core/bits.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::zfp_detail {

// The batch coders that a group loop (code<Batches>) hands whole runs of blocks to: codes<T>
// says whether there are any for T; encode and decode as avx2::batches. The portable bodies
// have none.
struct no_batches {
  template <class T>
  static constexpr bool codes = false;
};

// Replaces non-finite values (mask bit i) among the first m of v by the nearest finite value
// of the same block (left first), or 0 when the block has none: the block exponent stays that
// of its finite values and a smooth block stays smooth.
template <class T>
HCOMM_HOST_DEVICE void replace_nonfinite(T* v, unsigned m, unsigned mask) {
  T r[4] = {v[0], v[1], v[2], v[3]};
  for (unsigned i = 0; i < m; ++i) {
    if (!((mask >> i) & 1u)) continue;
    T rep = T(0);
    for (unsigned d = 1; d < 4; ++d) {
      if (i >= d && !((mask >> (i - d)) & 1u)) { rep = v[i - d]; break; }
      if (i + d < m && !((mask >> (i + d)) & 1u)) { rep = v[i + d]; break; }
    }
    r[i] = rep;
  }
  for (unsigned i = 0; i < 4; ++i) v[i] = r[i];
}

// Loads the m (1..4) values of a block at p as the type they are coded in, replaces the
// non-finite ones (replace_nonfinite) and pads a partial block as libzfp does; returns how
// many values were non-finite.
template <class T>
HCOMM_ZFP_INLINE unsigned load_block(const T* p, unsigned m, compute_of<T>* v) {
  using C = compute_of<T>;
  for (unsigned i = 0; i < 4; ++i) v[i] = C(0);
  unsigned mask = 0;
  if (m == 4) {
    if constexpr (half_element<T>)
      for (unsigned i = 0; i < 4; ++i) v[i] = load_value(p[i]);
    else
      std::memcpy(v, p, 4 * sizeof(C));
    // Non-finite values have the largest magnitude bit patterns: one test per block.
    using U = typename traits<C>::U;
    const U a0 = to_bits(v[0]) & traits<C>::absmask, a1 = to_bits(v[1]) & traits<C>::absmask;
    const U a2 = to_bits(v[2]) & traits<C>::absmask, a3 = to_bits(v[3]) & traits<C>::absmask;
    const U a01 = a0 > a1 ? a0 : a1, a23 = a2 > a3 ? a2 : a3;
    if ((a01 > a23 ? a01 : a23) >= traits<C>::expmask)
      for (unsigned i = 0; i < 4; ++i) mask |= static_cast<unsigned>(is_nonfinite_bits<C>(to_bits(v[i]))) << i;
  } else {
    for (unsigned i = 0; i < m; ++i) {
      v[i] = load_value(p[i]);
      mask |= static_cast<unsigned>(is_nonfinite_bits<C>(to_bits(v[i]))) << i;
    }
  }
  unsigned nonfinite = 0;
  if (mask) {
    nonfinite = static_cast<unsigned>(bits::popcount(mask));
    replace_nonfinite(v, m, mask);
  }
  // libzfp's padding of a partial block: n=1: v1=v2=v3=v0; n=2: v2=v1, v3=v0; n=3: v3=v0.
  if (m == 1) v[1] = v[0];
  if (m <= 2) v[2] = v[1];
  if (m <= 3) v[3] = v[0];
  return nonfinite;
}

// Codes the 4 loaded values of a block as exactly maxbits bits onto wr (a block of at most
// 64 bits is assembled in one register first).
template <class C, class Writer>
HCOMM_ZFP_INLINE void put_block(const C* v, unsigned maxbits, Writer& wr) {
  if (maxbits <= 64) {
    block_writer_small bw;
    encode_block<C>(v, maxbits, bw);
    wr.put(bw.acc, maxbits);
  } else {
    encode_block<C>(v, maxbits, wr);
  }
}

// Encodes group g (values [256g, 256g+256) of in) into its 4*rate words of stream and counts
// its non-finite values into counts[g]. A 16-bit T is coded block by block as the floats it
// widens to (no copy of the input: the widening is part of the block load).
template <class T>
struct encode_group_kernel {
  const T* in;
  std::size_t n;
  unsigned maxbits;
  u64* stream;
  u64* counts;
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const { cpu::dispatch(*this, g); }
  // The portable body: every block by itself.
  HCOMM_ZFP_INLINE void body(std::size_t g) const { code<no_batches>(g); }
  // The group loop, with the batch coders Batches (avx2/group_kernels.hpp).
  template <class Batches>
  HCOMM_ZFP_INLINE void code(std::size_t g) const {
    const std::size_t first = g * group_values;
    const std::size_t nvals = n - first < group_values ? n - first : group_values;
    const std::size_t nblk = (nvals + 3) / 4;
    word_writer wr{stream + g * (group_blocks * maxbits / 64)};
    u64 nonfinite = 0;
    for (std::size_t b = 0; b < nblk; ++b) {
      if constexpr (Batches::template codes<T>) {
        if (Batches::encode(in + first, nvals, b, maxbits, wr)) {
          b += Batches::blocks - 1;
          continue;
        }
      }
      const unsigned m = nvals - 4 * b < 4 ? static_cast<unsigned>(nvals - 4 * b) : 4u;
      compute_of<T> v[4];
      nonfinite += load_block(in + first + 4 * b, m, v);
      put_block(v, maxbits, wr);
    }
    wr.flush();
    counts[g] = nonfinite;
  }
};

// Decodes group g of the stream (nwords words, followed by at least 8 more payload bytes). A
// 16-bit T is decoded block by block as floats and rounded to nearest even into out.
template <class T>
struct decode_group_kernel {
  const unsigned char* stream;  // little-endian 64-bit words, possibly unaligned
  std::size_t nwords;
  std::size_t n;
  unsigned maxbits;
  T* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const { cpu::dispatch(*this, g); }
  HCOMM_ZFP_INLINE void body(std::size_t g) const { code<no_batches>(g); }
  template <class Batches>
  HCOMM_ZFP_INLINE void code(std::size_t g) const {
    const std::size_t first = g * group_values;
    const std::size_t nvals = n - first < group_values ? n - first : group_values;
    const std::size_t nblk = (nvals + 3) / 4;
    const word_reader rd{stream};
    std::size_t p = g * group_blocks * maxbits;
    std::size_t b = 0;
    if constexpr (Batches::template codes<T>) Batches::decode(rd, maxbits, nvals, out + first, b, p);
    using C = compute_of<T>;
    for (; b < nblk; ++b, p += maxbits) {
      T* o = out + first + 4 * b;
      C v[4];
      C* dst = v;
      if constexpr (!half_element<T>) dst = nvals - 4 * b >= 4 ? o : v;
      if (maxbits <= 64) {
        decode_block<C>(block_source_small{rd.peek(p) & low_mask(maxbits)}, maxbits, dst);
      } else {
        decode_block<C>(block_source_stream{&rd, p}, maxbits, dst);
      }
      if (dst == v) {
        const std::size_t m = nvals - 4 * b < 4 ? nvals - 4 * b : 4;
        for (std::size_t j = 0; j < m; ++j) store_value(o + j, v[j]);
      }
    }
  }
};
}  // namespace hcomm::codec::zfp_detail
