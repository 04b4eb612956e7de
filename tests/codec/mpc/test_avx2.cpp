// The AVX2 variants of the MPC kernels (codec/mpc/avx2/kernels.hpp) against their portable
// bodies (codec/mpc/encode_kernels.hpp, decode_kernels.hpp), the bodies the GPU runs: the
// same bytes and values on every data kind, stride and chunk shape, and on buffers large
// enough for the non-temporal paths.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/mpc/decode_kernels.hpp"
#include "hcomm/codec/mpc/encode_kernels.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/exec/host.hpp"
#include "mpc_test_util.hpp"

using namespace mpc_test;

TEST_CASE("mpc: the host's AVX2 build of each kernel matches the portable body", "[mpc]") {
  // operator() runs the AVX2 variant on hosts with the AVX2 tier (codec/mpc/avx2/: intrinsics
  // paths avx2::encode_f32 / encode_f64 and decode_f32 / decode_f64 for the chunks) and the
  // portable body under hcomm::cpu::force_portable; both must give the same bytes, since the
  // portable body is what the GPU runs. Every stride, whole and short chunks and partial
  // groups, every data kind.
  INFO("isa " << hcomm::cpu::isa_name() << ", AVX2 tier " << hcomm::cpu::host_features().avx2_tier());
  // Runs k(i) for i < count on the portable body.
  const auto portable = [](const auto& k, std::size_t count) {
    const hcomm::cpu::force_portable guard;
    REQUIRE_FALSE(hcomm::cpu::use_avx2());
    for (std::size_t i = 0; i < count; ++i) k(i);
  };
  auto check = [&portable](auto tag, kind k, std::size_t n, unsigned dim) {
    using T = decltype(tag);
    using Word = hcomm::word_of<T>;
    constexpr std::size_t slot = md::geometry<Word>::slot_words;
    const auto x = make<T>(k, n, 8 + n + dim);
    const std::size_t chunks = md::chunk_count(n);
    std::vector<Word> s1(chunks * slot, 0), s2(chunks * slot, 0);
    std::vector<std::uint64_t> z1(chunks + 1), z2(chunks + 1);
    const std::uint64_t d = dim;
    const md::encode_chunk_kernel<T> e1{x.data(), n, &d, s1.data(), z1.data()};
    const md::encode_chunk_kernel<T> e2{x.data(), n, &d, s2.data(), z2.data()};
    portable(e1, chunks);
    for (std::size_t c = 0; c < chunks; ++c) e2(c);
    REQUIRE(z1 == z2);
    REQUIRE(s1 == s2);

    const std::size_t samples = hc::mpc_codec<T>::sample_count(n);
    std::vector<std::uint64_t> c1(samples * 32), c2(samples * 32);
    const md::sample_dims_kernel<T> p1{x.data(), n, samples, c1.data()};
    const md::sample_dims_kernel<T> p2{x.data(), n, samples, c2.data()};
    portable(p1, samples);
    for (std::size_t s = 0; s < samples; ++s) p2(s);
    REQUIRE(c1 == c2);

    // Decoding: a packed payload assembled from the portable slots (also where the codec
    // would fall back to raw), exactly as long as it must be, so that reads past its end
    // show under the sanitizers.
    std::vector<std::uint64_t> off(chunks + 1);
    for (std::size_t c = 0; c < chunks; ++c) off[c] = z1[c];
    hcomm::exec::host{}.exclusive_scan(off.data(), off.data(), chunks);
    const std::size_t body = md::head_bytes + md::index_bytes(chunks);
    std::vector<unsigned char> payload(body + off[chunks] * sizeof(Word), 0);
    for (std::size_t c = 0; c < chunks; ++c) {
      const auto e = static_cast<std::uint16_t>(z1[c]);
      std::memcpy(payload.data() + md::head_bytes + 2 * c, &e, 2);
      std::memcpy(payload.data() + body + off[c] * sizeof(Word), s1.data() + c * slot, z1[c] * sizeof(Word));
    }
    std::vector<T> y1(n), y2(n);
    const md::decode_chunk_kernel<T> q1{payload.data(), n, chunks, dim, off.data(), y1.data()};
    const md::decode_chunk_kernel<T> q2{payload.data(), n, chunks, dim, off.data(), y2.data()};
    portable(q1, chunks);
    for (std::size_t c = 0; c < chunks; ++c) q2(c);
    REQUIRE(same_bits(y1, x));
    REQUIRE(same_bits(y2, x));
  };
  for (kind k : all_kinds)
    for (std::size_t n : {std::size_t(1), std::size_t(63), std::size_t(64), std::size_t(65), std::size_t(1000),
                          std::size_t(1024), std::size_t(2047), std::size_t(5000)})
      for (unsigned dim = 1; dim <= 32; ++dim) {
        INFO(kind_name(k) << " n=" << n << " dim=" << dim);
        check(float{}, k, n, dim);
        check(double{}, k, n, dim);
      }
}

TEST_CASE("mpc: the AVX2 chunk paths match the portable body on large buffers", "[mpc]") {
  // The decoder's non-temporal stores start at 8 MiB of output: one buffer past that for
  // each type, stride 1 (the stride-1 decoders' own pass) and 5, through the codec (both
  // executors' paths: the one-thread batches with the fused checksum, and one batch).
  for (bool one : {true, false})
    for (unsigned p : {1u, 5u}) {
      INFO("one thread " << one << " param " << p);
      auto run = [&](auto tag) {
        using T = decltype(tag);
        const std::size_t n = (std::size_t(9) << 20) / sizeof(T) + 333;
        const auto x = make<T>(kind::smooth, n, 4);
        direct<T> dir;
        dir.ex.threads = one ? 1 : 2;
        const std::vector<std::byte> payload = dir.encode(x, p);
        REQUIRE(stored_mode<T>(payload) == md::mode_mpc);
        // Against the portable encoder, chunk by chunk.
        using Word = hcomm::word_of<T>;
        constexpr std::size_t slot = md::geometry<Word>::slot_words;
        const std::size_t chunks = md::chunk_count(n);
        const std::uint64_t d = p;
        std::vector<Word> s(slot);
        std::vector<std::uint64_t> sizes(chunks);
        const std::size_t body = md::head_bytes + md::index_bytes(chunks);
        std::size_t at = body;
        {
          const hcomm::cpu::force_portable guard;  // (the codec above and below: AVX2 where there is)
          for (std::size_t c = 0; c < chunks; ++c) {
            const md::encode_chunk_kernel<T> e{x.data(), n, &d, s.data(), sizes.data(), c};
            e(0);
            const std::size_t size = sizes[c];
            REQUIRE(at + size * sizeof(Word) <= payload.size());
            REQUIRE(std::memcmp(payload.data() + at, s.data(), size * sizeof(Word)) == 0);
            at += size * sizeof(Word);
          }
        }
        REQUIRE(at == payload.size());
        std::vector<T> y(n);
        dir.decode(payload.data(), payload.size(), y, p);
        REQUIRE(same_bits(x, y));
      };
      run(float{});
      run(double{});
    }
}
