// hcomm/codec/mpc/team.hpp: MPC's chunk coding for float32 and for the 16-bit types as team
// kernels (exec/team.hpp), one chunk of 1024 values per team: what device executors run
// (codec/mpc.hpp), in the layout of the flat chunk kernels (encode_kernels.hpp,
// decode_kernels.hpp), byte for byte.
//
//   ex.launch(chunks, 256, mpc_detail::encode_chunk_team_f32{in, n, dim, slots, sizes});
//
// Encoding, per round of T/32 groups (a warp per group of 32 values, lane l = value l):
//   residual  r = v[i] - v[i - dim] (read from the input; zero past the chunk's values)
//   bits      transpose32 of the warp's residuals: lane l holds bit l of the 32 words; its
//             bit reversal is plane word k = 31 - l in the codec's order (row 0 = sign bits)
//   planes    row k -= row k - 1: each lane subtracts its neighbour's row (a shuffle from l + 1)
//   bitmap    ballot of the non-zero rows, bit reversed to bit k = row k
// then the words are placed row by row (row k of all groups, in group order) by a team
// exclusive scan over "is non-zero", one window of T words at a time.
// Decoding is the mirror image: the same scan expands the packed words, a warp inclusive
// scan undoes the plane delta, a lane reversal and transpose32 give the residuals back, and
// the stride-dim delta is undone by a team scan in residue-class order (value i of class
// i % dim at position start(i % dim) + i / dim): the running sum of a class is the prefix at
// i minus the prefix before the class starts (wrapping arithmetic, so exact).
//
// 16-bit words (groups of 16, 64 per chunk) take a thread per word instead of warp
// collectives: a plane word gathers its bit from the 16 residuals of its group in scratch
// (and the decoder the residual's bits from the 16 planes), the plane delta is a
// subtraction of the row above, and the words are placed by the same team scans; the
// stride-dim delta is undone as for float, in 32-bit sums truncated to 16 bits (exact:
// wrapping arithmetic modulo 2^16 is the low half of modulo 2^32).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/codec/mpc/format.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::codec::mpc_detail {

// Team size of the MPC team kernels on device executors (4 rounds of 8 groups per chunk).
inline constexpr int team_threads = 256;

HCOMM_HOST_DEVICE std::uint32_t bit_reverse32(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __brev(x);
#else
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
  return (x >> 16) | (x << 16);
#endif
}

// One word of type W (uint32_t or uint16_t) from unaligned memory.
template <class W>
HCOMM_HOST_DEVICE W load_word(const void* p) {
  W w;
  std::memcpy(&w, p, sizeof(W));
  return w;
}

// Values of chunk c of n, and its groups of G values (32 for 32-bit words, 16 for 16-bit).
template <unsigned G>
struct chunk_extent {
  std::size_t base, count;
  unsigned groups;
  HCOMM_HOST_DEVICE chunk_extent(std::size_t c, std::size_t n)
      : base(c * chunk_values), count(min_size(chunk_values, n - c * chunk_values)),
        groups(static_cast<unsigned>((min_size(chunk_values, n - c * chunk_values) + G - 1) / G)) {}
};

// Pass 1 of encode_chunk_kernel<float>: chunk c into its slot, its size in words to sizes[c].
struct encode_chunk_team_f32 {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "mpc_encode_chunk_f32";
  using geo = geometry<std::uint32_t>;
  const float* in;
  std::size_t n;
  const std::uint64_t* dim_ptr;
  std::uint32_t* slots;  // chunk c at slots + c * geo::slot_words
  std::uint64_t* sizes;

  std::size_t scratch_bytes(int) const {
    return exec::scratch_for<std::uint32_t>(chunk_values) + exec::scratch_for<std::uint32_t>(32);
  }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t c = team.league_rank();
    const chunk_extent<32> e(c, n);
    const std::size_t base = e.base, count = e.count;
    const unsigned groups = e.groups;
    const std::size_t dim = static_cast<std::size_t>(*dim_ptr);
    const int T = team.size();
    const int per_round = T / 32;  // groups per round
    auto planes = team.template shared<std::uint32_t>(chunk_values, "planes");  // row k, group g at k * 32 + g
    auto bitmaps = team.template shared<std::uint32_t>(32, "bitmaps");

    for (int r = 0; r < 32 / per_round; ++r) {
      auto res = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) {
        const std::size_t i = static_cast<std::size_t>(r) * T + t;  // value i of the chunk
        std::uint32_t x = 0;
        if (i < count) {
          x = load_word<std::uint32_t>(in + base + i);
          if (i >= dim) x -= load_word<std::uint32_t>(in + base + i - dim);
        }
        res[t] = x;
      });
      auto bits = team.transpose32(res);
      auto row = team.template per_thread<std::uint32_t>();
      auto up = team.template per_thread<int>();
      team.for_threads([&](int t) {
        const int l = t & 31;
        row[t] = bit_reverse32(bits[t]);  // plane k = 31 - l
        up[t] = l < 31 ? l + 1 : l;       // plane k - 1 lives in lane l + 1
      });
      auto prev = team.shuffle(row, up);
      auto d = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) { d[t] = (t & 31) < 31 ? row[t] - prev[t] : row[t]; });
      auto nonzero = team.ballot(d);
      team.for_threads([&](int t) {
        const int l = t & 31;
        const int g = r * per_round + t / 32;
        planes[static_cast<std::size_t>(31 - l) * 32 + g] = d[t];
        if (l == 0) bitmaps[g] = bit_reverse32(nonzero[t]);
      });
    }

    std::uint32_t* out = slots + c * geo::slot_words;
    team.for_threads([&](int t) {
      for (unsigned g = static_cast<unsigned>(t); g < groups; g += static_cast<unsigned>(T)) out[g] = bitmaps[g];
    });
    std::uint32_t placed = 0;
    for (int q0 = 0; q0 < static_cast<int>(chunk_values); q0 += T) {
      auto keep = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) { keep[t] = planes[q0 + t] != 0 ? 1u : 0u; });
      auto pos = team.exclusive_scan(keep, exec::sum{}, 0u);
      const std::uint32_t window = team.reduce(keep, exec::sum{});
      team.for_threads([&](int t) {
        const std::uint32_t w = planes[q0 + t];
        if (w != 0) out[groups + placed + pos[t]] = w;
      });
      placed += window;
    }
    team.for_threads([&](int t) {
      if (t == 0) sizes[c] = groups + placed;
    });
  }
};

// decode_chunk_kernel<float> for chunk c (already validated by check_chunk_kernel).
struct decode_chunk_team_f32 {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "mpc_decode_chunk_f32";
  const unsigned char* payload;
  std::size_t n;
  std::size_t chunks;
  unsigned dim;
  const std::uint64_t* offsets;
  float* out;

  std::size_t scratch_bytes(int) const { return 3 * exec::scratch_for<std::uint32_t>(chunk_values); }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t c = team.league_rank();
    const chunk_extent<32> e(c, n);
    const std::size_t base = e.base, count = e.count;
    const unsigned groups = e.groups;
    const int T = team.size();
    const int per_round = T / 32;
    const unsigned char* src = payload + head_bytes + index_bytes(chunks) + offsets[c] * 4;
    const unsigned char* packed = src + groups * 4;
    auto planes = team.template shared<std::uint32_t>(chunk_values, "planes");  // row k, group g at k * 32 + g
    auto resid = team.template shared<std::uint32_t>(chunk_values, "residuals");  // value order
    auto prefix = team.template shared<std::uint32_t>(chunk_values, "prefix");    // class order

    // Expansion: word (k, g) is stored when bit k of bitmap g is set, rows in order.
    std::uint32_t taken = 0;
    for (int q0 = 0; q0 < static_cast<int>(chunk_values); q0 += T) {
      auto stored = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) {
        const unsigned q = static_cast<unsigned>(q0 + t), k = q / 32, g = q % 32;
        stored[t] = g < groups ? (load_word<std::uint32_t>(src + 4 * g) >> k) & 1u : 0u;
      });
      auto pos = team.exclusive_scan(stored, exec::sum{}, 0u);
      const std::uint32_t window = team.reduce(stored, exec::sum{});
      team.for_threads([&](int t) {
        planes[q0 + t] = stored[t] != 0 ? load_word<std::uint32_t>(packed + 4 * (taken + pos[t])) : 0u;
      });
      taken += window;
    }

    for (int r = 0; r < 32 / per_round; ++r) {
      auto d = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) { d[t] = planes[static_cast<std::size_t>(t & 31) * 32 + r * per_round + t / 32]; });
      auto rows = team.warp_inclusive_scan(d, exec::sum{});  // lane l: plane l, delta undone
      auto rev = team.template per_thread<int>();
      team.for_threads([&](int t) { rev[t] = 31 - (t & 31); });
      auto flipped = team.shuffle(rows, rev);  // lane l: plane 31 - l
      auto bits = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) { bits[t] = bit_reverse32(flipped[t]); });
      auto res = team.transpose32(bits);  // lane l: residual of value l of the group
      team.for_threads([&](int t) {
        resid[static_cast<std::size_t>(r * per_round + t / 32) * 32 + (t & 31)] = res[t];
      });
    }

    // The stride-dim delta: prefix sums over the values in residue-class order.
    const std::size_t step = dim, whole = count / step, extra = count % step;
    const auto class_start = [&](std::size_t j) { return j * whole + (j < extra ? j : extra); };
    std::uint32_t carry = 0;
    for (std::size_t q0 = 0; q0 < count; q0 += static_cast<std::size_t>(T)) {
      auto v = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) {
        const std::size_t q = q0 + static_cast<std::size_t>(t);
        std::uint32_t x = 0;
        if (q < count && step == 1) {
          x = resid[q];  // one class: position = value index
        } else if (q < count) {
          // position q -> value index: the first `extra` classes hold whole + 1 values
          const std::size_t big = extra * (whole + 1);
          const std::size_t j = q < big ? q / (whole + 1) : extra + (q - big) / whole;
          const std::size_t p = q < big ? q % (whole + 1) : (q - big) % whole;
          x = resid[j + p * step];
        }
        v[t] = x;
      });
      auto inc = team.inclusive_scan(v, exec::sum{});
      const std::uint32_t window = team.broadcast(inc, T - 1);
      team.for_threads([&](int t) {
        const std::size_t q = q0 + static_cast<std::size_t>(t);
        if (q < count) prefix[q] = carry + inc[t];
      });
      carry += window;
    }
    team.for_threads([&](int t) {
      for (std::size_t i = static_cast<std::size_t>(t); i < count; i += static_cast<std::size_t>(T)) {
        std::uint32_t v;
        if (step == 1) {
          v = prefix[i];
        } else {
          const std::size_t start = class_start(i % step);
          v = prefix[start + i / step] - (start > 0 ? static_cast<std::uint32_t>(prefix[start - 1]) : 0u);
        }
        std::memcpy(out + base + i, &v, 4);
      }
    });
  }
};

// Pass 1 of encode_chunk_kernel<T> for 16-bit T: chunk c into its slot, its size in words
// to sizes[c]. Word (k, g) of the W x L matrix (row k = bit plane 15 - k of group g, value
// 16g + j at bit 15 - j) lives at k * 64 + g, as in the flat kernel.
struct encode_chunk_team_16 {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "mpc_encode_chunk_16";
  using geo = geometry<std::uint16_t>;
  static constexpr unsigned L = geo::groups;  // 64
  const unsigned char* in;  // n 16-bit values
  std::size_t n;
  const std::uint64_t* dim_ptr;
  std::uint16_t* slots;  // chunk c at slots + c * geo::slot_words
  std::uint64_t* sizes;

  std::size_t scratch_bytes(int) const { return 2 * exec::scratch_for<std::uint16_t>(chunk_values); }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t c = team.league_rank();
    const chunk_extent<16> e(c, n);
    const std::size_t base = e.base, count = e.count;
    const unsigned groups = e.groups;
    const std::size_t dim = static_cast<std::size_t>(*dim_ptr);
    const int T = team.size();
    const std::size_t step = static_cast<std::size_t>(T);
    auto res = team.template shared<std::uint16_t>(chunk_values, "residuals");  // value order, then plane deltas
    auto raw = team.template shared<std::uint16_t>(chunk_values, "planes");     // row k, group g at k * 64 + g

    team.for_threads([&](int t) {
      for (std::size_t i = static_cast<std::size_t>(t); i < chunk_values; i += step) {
        std::uint16_t x = 0;
        if (i < count) {
          x = load_word<std::uint16_t>(in + 2 * (base + i));
          if (i >= dim) x = static_cast<std::uint16_t>(x - load_word<std::uint16_t>(in + 2 * (base + i - dim)));
        }
        res[i] = x;
      }
    });
    team.for_threads([&](int t) {
      for (std::size_t q = static_cast<std::size_t>(t); q < chunk_values; q += step) {
        const unsigned k = static_cast<unsigned>(q / L), g = static_cast<unsigned>(q % L);
        unsigned w = 0;
        for (unsigned j = 0; j < 16; ++j) w |= ((static_cast<unsigned>(res[g * 16 + j]) >> (15 - k)) & 1u) << (15 - j);
        raw[q] = static_cast<std::uint16_t>(w);
      }
    });
    team.for_threads([&](int t) {  // the plane delta, row k -= row k - 1
      for (std::size_t q = static_cast<std::size_t>(t); q < chunk_values; q += step)
        res[q] = q >= L ? static_cast<std::uint16_t>(raw[q] - raw[q - L]) : raw[q];
    });
    std::uint16_t* out = slots + c * geo::slot_words;
    team.for_threads([&](int t) {
      for (unsigned g = static_cast<unsigned>(t); g < groups; g += static_cast<unsigned>(T)) {
        unsigned b = 0;
        for (unsigned k = 0; k < 16; ++k) b |= (res[k * L + g] != 0 ? 1u : 0u) << k;
        out[g] = static_cast<std::uint16_t>(b);
      }
    });
    std::uint32_t placed = 0;
    for (std::size_t q0 = 0; q0 < chunk_values; q0 += step) {
      auto keep = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) {
        const std::size_t q = q0 + static_cast<std::size_t>(t);
        keep[t] = q < chunk_values && res[q] != 0 ? 1u : 0u;
      });
      auto pos = team.exclusive_scan(keep, exec::sum{}, 0u);
      const std::uint32_t window = team.reduce(keep, exec::sum{});
      team.for_threads([&](int t) {
        const std::size_t q = q0 + static_cast<std::size_t>(t);
        if (q < chunk_values && res[q] != 0) out[groups + placed + pos[t]] = res[q];
      });
      placed += window;
    }
    team.for_threads([&](int t) {
      if (t == 0) sizes[c] = groups + placed;
    });
  }
};

// decode_chunk_kernel<T> for 16-bit T and chunk c (already validated by check_chunk_kernel).
struct decode_chunk_team_16 {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "mpc_decode_chunk_16";
  static constexpr unsigned L = geometry<std::uint16_t>::groups;  // 64
  const unsigned char* payload;
  std::size_t n;
  std::size_t chunks;
  unsigned dim;
  const std::uint64_t* offsets;
  unsigned char* out;  // n 16-bit values

  std::size_t scratch_bytes(int) const {
    return exec::scratch_for<std::uint16_t>(chunk_values) + 2 * exec::scratch_for<std::uint32_t>(chunk_values);
  }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t c = team.league_rank();
    const chunk_extent<16> e(c, n);
    const std::size_t base = e.base, count = e.count;
    const unsigned groups = e.groups;
    const int T = team.size();
    const std::size_t tstep = static_cast<std::size_t>(T);
    const unsigned char* src = payload + head_bytes + index_bytes(chunks) + offsets[c] * 2;
    const unsigned char* packed = src + groups * 2;
    auto planes = team.template shared<std::uint16_t>(chunk_values, "planes");    // row k, group g at k * 64 + g
    auto resid = team.template shared<std::uint32_t>(chunk_values, "residuals");  // value order
    auto prefix = team.template shared<std::uint32_t>(chunk_values, "prefix");    // class order

    // Expansion: word (k, g) is stored when bit k of bitmap g is set, rows in order.
    std::uint32_t taken = 0;
    for (std::size_t q0 = 0; q0 < chunk_values; q0 += tstep) {
      auto stored = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) {
        const std::size_t q = q0 + static_cast<std::size_t>(t);
        const unsigned k = static_cast<unsigned>(q / L), g = static_cast<unsigned>(q % L);
        stored[t] = q < chunk_values && g < groups ? (load_word<std::uint16_t>(src + 2 * g) >> k) & 1u : 0u;
      });
      auto pos = team.exclusive_scan(stored, exec::sum{}, 0u);
      const std::uint32_t window = team.reduce(stored, exec::sum{});
      team.for_threads([&](int t) {
        const std::size_t q = q0 + static_cast<std::size_t>(t);
        if (q < chunk_values) planes[q] = stored[t] != 0 ? load_word<std::uint16_t>(packed + 2 * (taken + pos[t])) : std::uint16_t(0);
      });
      taken += window;
    }
    team.for_threads([&](int t) {  // the plane delta undone: a running sum down each lane
      for (unsigned g = static_cast<unsigned>(t); g < L; g += static_cast<unsigned>(T)) {
        std::uint16_t acc = 0;
        for (unsigned k = 0; k < 16; ++k) {
          acc = static_cast<std::uint16_t>(acc + planes[k * L + g]);
          planes[k * L + g] = acc;
        }
      }
    });
    team.for_threads([&](int t) {  // the bit transposition back: residual 16g + j
      for (std::size_t i = static_cast<std::size_t>(t); i < chunk_values; i += tstep) {
        const unsigned g = static_cast<unsigned>(i / 16), j = static_cast<unsigned>(i % 16);
        unsigned v = 0;
        for (unsigned k = 0; k < 16; ++k) v |= ((static_cast<unsigned>(planes[k * L + g]) >> (15 - j)) & 1u) << (15 - k);
        resid[i] = v;
      }
    });

    // The stride-dim delta: prefix sums over the values in residue-class order.
    const std::size_t step = dim, whole = count / step, extra = count % step;
    const auto class_start = [&](std::size_t j) { return j * whole + (j < extra ? j : extra); };
    std::uint32_t carry = 0;
    for (std::size_t q0 = 0; q0 < count; q0 += tstep) {
      auto v = team.template per_thread<std::uint32_t>();
      team.for_threads([&](int t) {
        const std::size_t q = q0 + static_cast<std::size_t>(t);
        std::uint32_t x = 0;
        if (q < count && step == 1) {
          x = resid[q];
        } else if (q < count) {
          const std::size_t big = extra * (whole + 1);
          const std::size_t j = q < big ? q / (whole + 1) : extra + (q - big) / whole;
          const std::size_t p = q < big ? q % (whole + 1) : (q - big) % whole;
          x = resid[j + p * step];
        }
        v[t] = x;
      });
      auto inc = team.inclusive_scan(v, exec::sum{});
      const std::uint32_t window = team.broadcast(inc, T - 1);
      team.for_threads([&](int t) {
        const std::size_t q = q0 + static_cast<std::size_t>(t);
        if (q < count) prefix[q] = carry + inc[t];
      });
      carry += window;
    }
    team.for_threads([&](int t) {
      for (std::size_t i = static_cast<std::size_t>(t); i < count; i += tstep) {
        std::uint32_t v;
        if (step == 1) {
          v = prefix[i];
        } else {
          const std::size_t start = class_start(i % step);
          v = prefix[start + i / step] - (start > 0 ? static_cast<std::uint32_t>(prefix[start - 1]) : 0u);
        }
        const std::uint16_t w = static_cast<std::uint16_t>(v);
        std::memcpy(out + 2 * (base + i), &w, 2);
      }
    });
  }
};

}  // namespace hcomm::codec::mpc_detail
