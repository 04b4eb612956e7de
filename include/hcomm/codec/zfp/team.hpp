// hcomm/codec/zfp/team.hpp: ZFP's group coding as team kernels (exec/team.hpp): what device
// executors run (codec/zfp.hpp), in the layout of the group kernels (group_kernels.hpp),
// word for word.
//
//   ex.launch(teams, zfp_detail::team_threads, zfp_detail::encode_group_team<float>{...});
//
// A team of T threads (a multiple of 64) codes T/64 consecutive groups, a thread per block,
// with the group kernels' block functions (load_block, put_block, decode_block):
//   encode  phase 1: the team copies its values into scratch, one value per thread per step
//                    (coalesced loads);
//           phase 2: thread b codes block b from scratch into its own scratch slot of
//                    ceil(maxbits/64) words and counts its non-finite values;
//           phase 3: output word w of a group is assembled by one thread, the OR of the
//                    shifted pieces of the (at most 7) blocks that overlap it, and stored;
//                    a group's first thread sums its blocks' counts into counts[g].
//   decode  phase 1: the team copies its groups' stream words into scratch;
//           phase 2: thread b cuts block b's maxbits bits out of them and decodes the block
//                    into scratch values (16-bit types rounded there);
//           phase 3: the team stores the values, one per thread per step.
// A fixed rate puts every block at a known bit offset, so no word is written by two threads
// and no atomics are needed; the bytes are the group kernels' for any thread order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/codec/zfp/bit_planes.hpp"
#include "hcomm/codec/zfp/bit_stream.hpp"
#include "hcomm/codec/zfp/group_kernels.hpp"
#include "hcomm/codec/zfp/plane_coder.hpp"
#include "hcomm/codec/zfp/traits.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::codec::zfp_detail {

// Team size of the ZFP team kernels on device executors (two groups per team).
inline constexpr int team_threads = 128;
static_assert(team_threads % static_cast<int>(group_blocks) == 0,
              "hcomm: the ZFP team kernels give each thread one block of a whole group: the team size must "
              "be a multiple of the blocks per group");

// Groups that a team of team_size threads codes (a thread per block).
HCOMM_HOST_DEVICE constexpr std::size_t team_groups(int team_size) {
  return static_cast<std::size_t>(team_size) / group_blocks;
}
// Teams for the groups of n values.
HCOMM_HOST_DEVICE constexpr std::size_t team_league(std::size_t n, int team_size) {
  const std::size_t groups = n / group_values + (n % group_values != 0), per = team_groups(team_size);
  return groups / per + (groups % per != 0);
}
// Words of a block's scratch slot.
HCOMM_HOST_DEVICE constexpr unsigned block_words(unsigned maxbits) { return (maxbits + 63) / 64; }

// 64 bits of a block from its bit o (o < maxbits) out of its slot of bw words at base; the
// slot's bits past maxbits are zero.
template <class View>
HCOMM_HOST_DEVICE u64 slot_bits(const View& slot, std::size_t base, unsigned bw, std::size_t o) {
  const unsigned i = static_cast<unsigned>(o >> 6), r = static_cast<unsigned>(o & 63u);
  const u64 lo = slot[base + i];
  u64 x = lo >> r;
  if (r != 0 && i + 1 < bw) {
    const u64 hi = slot[base + i + 1];
    x |= hi << (64 - r);
  }
  return x;
}

template <class T>
struct encode_group_team {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "zfp_encode_group";
  using U = typename traits<T>::U;  // a value's bits
  const T* in;
  std::size_t n;
  unsigned maxbits;
  u64* stream;
  u64* counts;

  std::size_t scratch_bytes(int team_size) const {
    const std::size_t gpt = team_groups(team_size);
    return exec::scratch_for<U>(gpt * group_values) + exec::scratch_for<u64>(gpt * group_blocks * block_words(maxbits)) +
           exec::scratch_for<unsigned>(gpt * group_blocks);
  }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const int size = team.size();
    const std::size_t gpt = team_groups(size);
    const std::size_t groups = n / group_values + (n % group_values != 0);
    const std::size_t g0 = team.league_rank() * gpt;
    const std::size_t first = g0 * group_values;
    const std::size_t nv = n - first < gpt * group_values ? n - first : gpt * group_values;  // the team's values
    const unsigned bw = block_words(maxbits);
    auto vals = team.template shared<U>(gpt * group_values, "values");
    auto slots = team.template shared<u64>(gpt * group_blocks * bw, "block bits");
    auto nonfinite = team.template shared<unsigned>(gpt * group_blocks, "non-finite counts");

    team.for_threads([&](int t) {
      for (std::size_t i = static_cast<std::size_t>(t); i < nv; i += static_cast<std::size_t>(size)) {
        U u;
        std::memcpy(&u, in + first + i, sizeof u);
        vals[i] = u;
      }
    });
    team.for_threads([&](int t) {
      const std::size_t b = static_cast<std::size_t>(t);  // the team's block b
      if (4 * b >= nv) return;
      const unsigned m = nv - 4 * b < 4 ? static_cast<unsigned>(nv - 4 * b) : 4u;
      T p[4];
      for (unsigned i = 0; i < m; ++i) {
        const U u = vals[4 * b + i];
        std::memcpy(&p[i], &u, sizeof u);
      }
      using C = compute_of<T>;
      C v[4];
      nonfinite[b] = load_block(p, m, v);
      if (maxbits <= 64) {  // one register
        block_writer_small wr;
        encode_block<C>(v, maxbits, wr);
        slots[b] = wr.acc;
      } else {
        u64 w[4] = {0, 0, 0, 0};
        word_writer wr{w};
        encode_block<C>(v, maxbits, wr);
        wr.flush();
        for (unsigned k = 0; k < bw; ++k) slots[b * bw + k] = w[k];
      }
    });
    team.for_threads([&](int t) {
      const std::size_t gl = static_cast<std::size_t>(t) / group_blocks;
      const std::size_t l = static_cast<std::size_t>(t) % group_blocks;
      const std::size_t g = g0 + gl;
      if (gl >= gpt || g >= groups) return;
      const std::size_t gvals = nv - gl * group_values < group_values ? nv - gl * group_values : group_values;
      const std::size_t nblk = (gvals + 3) / 4;
      const std::size_t nw = (nblk * maxbits + 63) / 64;
      u64* out = stream + g * maxbits;  // a group's 64 blocks take maxbits words
      for (std::size_t w = l; w < nw; w += group_blocks) {
        const std::size_t lo = 64 * w;
        const std::size_t last = (lo + 63) / maxbits + 1;
        const std::size_t end = last < nblk ? last : nblk;
        u64 word = 0;
        for (std::size_t b = lo / maxbits; b < end; ++b) {
          const std::size_t start = b * maxbits, base = (gl * group_blocks + b) * bw;
          if (start >= lo)
            word |= slot_bits(slots, base, bw, 0) << (start - lo);
          else
            word |= slot_bits(slots, base, bw, lo - start);
        }
        out[w] = word;
      }
      if (l == 0) {
        u64 c = 0;
        for (std::size_t b = 0; b < nblk; ++b) {
          const unsigned k = nonfinite[gl * group_blocks + b];
          c += k;
        }
        counts[g] = c;
      }
    });
  }
};

template <class T>
struct decode_group_team {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "zfp_decode_group";
  using U = typename traits<T>::U;
  const unsigned char* stream;  // little-endian 64-bit words, possibly unaligned
  std::size_t n;
  unsigned maxbits;
  T* out;

  std::size_t scratch_bytes(int team_size) const {
    const std::size_t gpt = team_groups(team_size);
    return exec::scratch_for<u64>(gpt * maxbits) + exec::scratch_for<U>(gpt * group_values);
  }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const int size = team.size();
    const std::size_t gpt = team_groups(size);
    const std::size_t g0 = team.league_rank() * gpt;
    const std::size_t first = g0 * group_values;
    const std::size_t nv = n - first < gpt * group_values ? n - first : gpt * group_values;
    const std::size_t nblk = (nv + 3) / 4;                   // the team's blocks
    const std::size_t team_words = (nblk * maxbits + 63) / 64;  // one stream: groups are whole words
    const unsigned bw = block_words(maxbits);
    auto words = team.template shared<u64>(gpt * maxbits, "stream words");
    auto vals = team.template shared<U>(gpt * group_values, "values");

    team.for_threads([&](int t) {
      const word_reader rd{stream};
      for (std::size_t i = static_cast<std::size_t>(t); i < team_words; i += static_cast<std::size_t>(size))
        words[i] = rd.word(g0 * maxbits + i);
    });
    team.for_threads([&](int t) {
      const std::size_t b = static_cast<std::size_t>(t);
      if (b >= nblk) return;
      // 64 bits of the team's words from bit pos (the words past the team's end read as 0).
      const auto bits_at = [&](std::size_t pos) {
        const std::size_t i = pos >> 6;
        const unsigned r = static_cast<unsigned>(pos & 63u);
        const u64 lo = words[i];
        u64 x = lo >> r;
        if (r != 0 && i + 1 < team_words) {
          const u64 hi = words[i + 1];
          x |= hi << (64 - r);
        }
        return x;
      };
      using C = compute_of<T>;
      C v[4];
      if (maxbits <= 64) {  // one register
        decode_block<C>(block_source_small{bits_at(b * maxbits) & low_mask(maxbits)}, maxbits, v);
      } else {
        // Block b's bits, past maxbits zero, and a word of zeros for the reader's lookahead.
        u64 buf[5] = {0, 0, 0, 0, 0};
        for (unsigned k = 0; k < bw; ++k) buf[k] = bits_at(b * maxbits + 64 * k) & low_mask(maxbits - 64 * k);
        const word_reader rd{reinterpret_cast<const unsigned char*>(buf)};
        decode_block<C>(block_source_stream{&rd, 0}, maxbits, v);
      }
      const unsigned m = nv - 4 * b < 4 ? static_cast<unsigned>(nv - 4 * b) : 4u;
      for (unsigned j = 0; j < m; ++j) {
        T o;
        store_value(&o, v[j]);
        U u;
        std::memcpy(&u, &o, sizeof u);
        vals[4 * b + j] = u;
      }
    });
    team.for_threads([&](int t) {
      for (std::size_t i = static_cast<std::size_t>(t); i < nv; i += static_cast<std::size_t>(size)) {
        const U u = vals[i];
        std::memcpy(out + first + i, &u, sizeof u);
      }
    });
  }
};
}  // namespace hcomm::codec::zfp_detail
