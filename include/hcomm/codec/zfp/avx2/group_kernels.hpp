// hcomm/codec/zfp/avx2/group_kernels.hpp: the AVX2 variants of the ZFP group kernels
// (../group_kernels.hpp), picked by hcomm::cpu::dispatch on hosts with the AVX2 tier.
//
// A variant is the portable group loop compiled for AVX2 (+BMI2, LZCNT), with runs of 8 whole
// float blocks of finite values at 12..64 bits (rates 3..16, the common case) handed to the
// batch coders (encode_batch.hpp, decode_batch.hpp); doubles, wider blocks, partial batches
// and blocks with NaN/Inf still go block by block. 16-bit values take the same batch coders:
// a batch's 32 values are widened into a float array on the stack before it is coded, and
// decoded batches are rounded back from one. The bytes are the portable body's.
#pragma once
#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hcomm/codec/zfp/avx2/decode_batch.hpp"
#include "hcomm/codec/zfp/avx2/encode_batch.hpp"
#include "hcomm/codec/zfp/bit_stream.hpp"
#include "hcomm/codec/zfp/traits.hpp"

namespace hcomm::codec::zfp_detail {
template <class T>
struct encode_group_kernel;
template <class T>
struct decode_group_kernel;

namespace avx2 {

// The group loop's batch coders (encode_group_kernel::code, decode_group_kernel::code). Not
// compiled for AVX2 themselves: they are inlined into the variant's body (run, below), which
// is, and call the batch coders, which are too.
struct batches {
  template <class T>
  static constexpr bool codes = std::is_same_v<T, float> || half_element<T>;
  static constexpr int blocks = batch_lanes;

  // Codes blocks b .. b+7 of the group (values in[4b ..]) when they are 8 whole blocks of
  // finite values at 12..64 bits; false: block b goes by itself.
  HCOMM_ZFP_INLINE static bool encode(const float* in, std::size_t nvals, std::size_t b, unsigned maxbits,
                                      word_writer& wr) {
    // Eight whole blocks of finite values at once (the common case; float blocks are 12..64
    // bits at rates 3..16).
    if (maxbits >= 12 && maxbits <= 64 && b % batch_lanes == 0 && nvals >= 4 * (b + batch_lanes)) {  // whole blocks only
      const float* p = in + 4 * b;
      std::uint32_t big = 0;
      for (int i = 0; i < 4 * batch_lanes; ++i) {
        const std::uint32_t a = to_bits(p[i]) & traits<float>::absmask;
        big = big > a ? big : a;
      }
      if (big < traits<float>::expmask) {
        u64 bits[batch_lanes];
        if (maxbits <= 32) encode_batch_f32_avx2<false>(p, maxbits, bits);
        else encode_batch_f32_avx2<true>(p, maxbits, bits);
        for (int l = 0; l < batch_lanes; ++l) wr.put(bits[l], maxbits);
        return true;
      }
    }
    return false;
  }

  // The same for 16-bit values, through their widened floats.
  template <half_element H>
  HCOMM_ZFP_INLINE static bool encode(const H* in, std::size_t nvals, std::size_t b, unsigned maxbits,
                                      word_writer& wr) {
    if (maxbits >= 12 && maxbits <= 64 && b % batch_lanes == 0 && nvals >= 4 * (b + batch_lanes)) {
      alignas(32) float w[4 * batch_lanes];
      for (int i = 0; i < 4 * batch_lanes; ++i) w[i] = load_value(in[4 * b + i]);
      return encode(w, 4 * batch_lanes, 0, maxbits, wr);
    }
    return false;
  }
  template <half_element H>
  HCOMM_ZFP_INLINE static void decode(const word_reader& rd, unsigned maxbits, std::size_t nvals, H* out,
                                      std::size_t& b, std::size_t& p) {
    if (maxbits >= 12 && maxbits <= 64) {
      constexpr std::size_t per = 8;  // batches per float array
      const std::size_t batches = nvals / (4 * batch_lanes);
      alignas(32) float w[per * 4 * batch_lanes];
      for (std::size_t k = 0; k < batches; k += per) {
        const std::size_t m = batches - k < per ? batches - k : per;
        const std::size_t at = p + k * batch_lanes * maxbits;
        if (maxbits <= 32) decode_batches_f32_avx2<false>(rd, at, maxbits, m, w);
        else decode_batches_f32_avx2<true>(rd, at, maxbits, m, w);
        H* o = out + k * 4 * batch_lanes;
        for (std::size_t i = 0; i < m * 4 * batch_lanes; ++i) store_value(o + i, w[i]);
      }
      b = batches * batch_lanes;
      p += b * maxbits;
    }
  }

  // Decodes the group's whole batches of 8 blocks (values out[0 ..]) at 12..64 bits from
  // stream bit p; b and p move past them.
  HCOMM_ZFP_INLINE static void decode(const word_reader& rd, unsigned maxbits, std::size_t nvals, float* out,
                                      std::size_t& b, std::size_t& p) {
    if (maxbits >= 12 && maxbits <= 64) {  // whole batches of 8 blocks (rates 3..16)
      const std::size_t batches = nvals / (4 * batch_lanes);
      if (maxbits <= 32) decode_batches_f32_avx2<false>(rd, p, maxbits, batches, out);
      else decode_batches_f32_avx2<true>(rd, p, maxbits, batches, out);
      b = batches * batch_lanes;
      p += b * maxbits;
    }
  }
};

}  // namespace avx2
}  // namespace hcomm::codec::zfp_detail

namespace hcomm::cpu {
template <class T>
struct avx2_variant<codec::zfp_detail::encode_group_kernel<T>> {
  static constexpr bool available = true;
  __attribute__((target("avx2,bmi2,lzcnt"))) static void run(const codec::zfp_detail::encode_group_kernel<T>& k,
                                                              std::size_t g) {
    k.template code<codec::zfp_detail::avx2::batches>(g);
  }
};
template <class T>
struct avx2_variant<codec::zfp_detail::decode_group_kernel<T>> {
  static constexpr bool available = true;
  __attribute__((target("avx2,bmi2,lzcnt"))) static void run(const codec::zfp_detail::decode_group_kernel<T>& k,
                                                              std::size_t g) {
    k.template code<codec::zfp_detail::avx2::batches>(g);
  }
};
}  // namespace hcomm::cpu
#endif  // HCOMM_X86_VARIANTS
