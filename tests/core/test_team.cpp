// Team kernels (exec/team.hpp): the collectives' defined results, every team kernel of the
// project under host-check, host-fast and Kokkos at several team sizes against the flat kernels,
// planted bugs that host-check must catch every time (and host-fast does not notice), and
// misuse refused with a clear error.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <random>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/mpc/team.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_check.hpp"
#include "hcomm/exec/scan_kernels.hpp"
#include "team_probes.hpp"
#include "hcomm/core/config.hpp"
#if HCOMM_HAS_KOKKOS
#include "hcomm/exec/kokkos.hpp"
#include "kokkos_session.hpp"
#endif

namespace {

namespace exec = hcomm::exec;
namespace mpc = hcomm::codec::mpc_detail;
using Catch::Matchers::Contains;
using hcomm_test::collectives_expected;
using hcomm_test::collectives_kernel;

constexpr int team_sizes[] = {32, 64, 96, 256, 1024};

#if HCOMM_HAS_KOKKOS
const hcomm_test::kokkos_session the_kokkos_session;
#endif

exec::host fast(int threads = 2) {
  exec::host h;
  h.threads = threads;
  return h;
}

std::vector<std::uint64_t> random_u64(std::size_t n, std::uint64_t seed, std::uint64_t mask = ~0ull) {
  std::mt19937_64 g(seed);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) x = g() & mask;
  return v;
}

// ---- collectives: each result written out per thread, compared with its definition ------

template <class Exec>
std::vector<std::uint32_t> run_collectives(const Exec& ex, const std::vector<std::uint32_t>& in, int T) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(T) * 8 + 2, 0xdeadbeefu);
  ex.launch(1, T, collectives_kernel{in.data(), out.data()});
  return out;
}

TEST_CASE("team collectives give their defined results on host-fast and host-check", "[team]") {
  for (int T : team_sizes) {
    INFO("team size " << T);
    std::mt19937 g(static_cast<unsigned>(T));
    std::vector<std::uint32_t> in(static_cast<std::size_t>(T));
    for (auto& x : in) x = (g() % 4 == 0) ? 0u : g();  // zeros too, for the ballot
    const auto want = collectives_expected(in, T);
    CHECK(run_collectives(fast(1), in, T) == want);
    for (std::uint64_t seed : {1u, 2u, 99u}) CHECK(run_collectives(exec::host_check{seed}, in, T) == want);
#if HCOMM_HAS_KOKKOS
    CHECK(run_collectives(exec::kokkos<>{}, in, T) == want);
#endif
  }
}

// Float sums depend on the order: the reduce's order is fixed, so every backend gives the
// same bits (the tree of exec/team.hpp), whatever the thread order of a phase.
struct float_reduce_kernel {
  static constexpr int max_team = 1024;
  const float* in;
  float* out;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team& team) const {
    auto v = team.template per_thread<float>();
    team.for_threads([&](int t) { v[t] = in[t]; });
    const float s = team.reduce(v, exec::sum{});
    team.for_threads([&](int t) {
      if (t == 0) *out = s;
    });
  }
};

TEST_CASE("team reduce of floats is the same tree on every backend and seed", "[team]") {
  std::vector<float> in(1024);
  std::mt19937 g(5);
  for (auto& x : in) x = std::ldexp(static_cast<float>(g() % 100000), static_cast<int>(g() % 40) - 20);
  for (int T : team_sizes) {
    // The tree of exec/team.hpp, written out.
    float warp_totals[32] = {};
    for (int w = 0; w < T / 32; ++w) {
      float lane[32];
      for (int l = 0; l < 32; ++l) lane[l] = in[static_cast<std::size_t>(w * 32 + l)];
      for (int o = 16; o > 0; o /= 2)
        for (int l = 0; l < o; ++l) lane[l] = lane[l] + lane[l + o];
      warp_totals[w] = lane[0];
    }
    float want = warp_totals[0];
    for (int w = 1; w < T / 32; ++w) want = want + warp_totals[w];
    float a = 0, b = 0;
    fast().launch(1, T, float_reduce_kernel{in.data(), &a});
    exec::host_check{3}.launch(1, T, float_reduce_kernel{in.data(), &b});
    CHECK(std::memcmp(&a, &want, 4) == 0);
    CHECK(std::memcmp(&b, &want, 4) == 0);
  }
}

// ---- mma: the tensor-core product -------------------------------------------------------

// Random bfloat16 matrices and a float C for a shape; a case per layout and accumulate.
struct mma_case {
  exec::mma_shape s;
  std::vector<std::uint16_t> a, b;
  std::vector<float> c;
};
mma_case make_mma_case(bool a_trans, bool b_trans, bool accumulate, unsigned seed) {
  mma_case k;
  auto& s = k.s;
  s.m = 32, s.n = 48, s.k = 64;
  s.a_trans = a_trans, s.b_trans = b_trans, s.accumulate = accumulate;
  s.lda = (a_trans ? s.m : s.k) + 8;  // padded rows, as a kernel's tiles may be
  s.ldb = (b_trans ? s.k : s.n) + 16;
  s.ldc = s.n + 4;
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  k.a.resize(static_cast<std::size_t>(s.lda) * (a_trans ? s.k : s.m));
  k.b.resize(static_cast<std::size_t>(s.ldb) * (b_trans ? s.n : s.k));
  k.c.resize(static_cast<std::size_t>(s.ldc) * s.m);
  for (auto& x : k.a) x = hcomm::to_bf16_bits(u(g));
  for (auto& x : k.b) x = hcomm::to_bf16_bits(u(g));
  for (auto& x : k.c) x = u(g);
  return k;
}
template <class Exec>
std::vector<float> run_mma(const Exec& ex, const mma_case& k, int team, int plant = 0) {
  std::vector<float> c = k.c;
  ex.launch(1, team,
            hcomm_test::mma_probe{k.a.data(), k.b.data(), c.data(), k.s, static_cast<int>(k.a.size()),
                                  static_cast<int>(k.b.size()), static_cast<int>(k.c.size()), plant});
  return c;
}

TEST_CASE("team mma gives its defined product on host-fast, host-check and Kokkos", "[team][mma]") {
  unsigned seed = 1;
  for (bool at : {false, true})
    for (bool bt : {false, true})
      for (bool acc : {false, true}) {
        INFO("a_trans " << at << " b_trans " << bt << " accumulate " << acc);
        const mma_case k = make_mma_case(at, bt, acc, seed++);
        const auto want = hcomm_test::mma_expected(k.a, k.b, k.c, k.s);
        // a double sum of the exact products: the float sums stay within float rounding
        double worst = 0;
        for (int i = 0; i < k.s.m; ++i)
          for (int j = 0; j < k.s.n; ++j) {
            double d = acc ? k.c[static_cast<std::size_t>(i) * k.s.ldc + j] : 0.0;
            for (int p = 0; p < k.s.k; ++p)
              d += static_cast<double>(hcomm::bf16_bits_to_float(k.a[at ? p * k.s.lda + i : i * k.s.lda + p])) *
                   hcomm::bf16_bits_to_float(k.b[bt ? j * k.s.ldb + p : p * k.s.ldb + j]);
            worst = std::max(worst, std::fabs(d - want[static_cast<std::size_t>(i) * k.s.ldc + j]));
          }
        CHECK(worst < 1e-4);
        // padding columns of C beyond n are left as they were
        for (int team : {32, 128}) {
          INFO("team " << team);
          CHECK(run_mma(fast(), k, team) == want);
          for (std::uint64_t hs : {1u, 7u}) CHECK(run_mma(exec::host_check{hs}, k, team) == want);
#if HCOMM_HAS_KOKKOS
          CHECK(run_mma(exec::kokkos<>{}, k, team) == want);
#endif
        }
      }
}

TEST_CASE("team mma: an unwritten operand, a misaligned operand and a bad shape are reported", "[team][mma][planted]") {
  const mma_case k = make_mma_case(false, true, false, 3);
  // B's first word unwritten: host-check reports the read every time; host-fast cannot see it
  for (std::uint64_t hs : {1u, 2u, 3u})
    CHECK_THROWS_WITH(run_mma(exec::host_check{hs}, k, 64, 1), Contains("shared 'B'") && Contains("which no thread wrote"));
  CHECK_NOTHROW(run_mma(fast(), k, 64, 1));
  // A 16 bytes into scratch: refused by both (WMMA needs 32-byte alignment)
  CHECK_THROWS_WITH(run_mma(fast(), k, 64, 2), Contains("mma: A starts 16 bytes into scratch"));
  CHECK_THROWS_WITH(run_mma(exec::host_check{}, k, 64, 2), Contains("mma: A starts 16 bytes into scratch"));
  mma_case bad = k;
  bad.s.k = 56;
  CHECK_THROWS_WITH(run_mma(fast(), bad, 64), Contains("multiples of 16"));
  bad = k;
  bad.s.lda = 60;
  CHECK_THROWS_WITH(run_mma(exec::host_check{}, bad, 64), Contains("multiples of 8"));
  bad = k;
  bad.s.ldb = 56;  // B is stored transposed: rows of k = 64
  CHECK_THROWS_WITH(run_mma(fast(), bad, 64), Contains("shorter than its matrix's row length"));
}

// ---- the project's team kernels, host-check vs host-fast vs the flat kernels -----------------

TEST_CASE("team scan kernels give the serial exclusive scan at every team size, in place or not", "[team]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{255}, std::size_t{256}, std::size_t{5000},
                        std::size_t{70001}}) {
    const auto in = random_u64(n, n, 0xFFFFFFFFFFull);
    std::vector<std::uint64_t> want(n + 1);
    std::uint64_t acc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = acc;
      acc += in[i];
    }
    want[n] = acc;
    for (int T : team_sizes) {
      INFO("n=" << n << " team " << T);
      std::vector<std::uint64_t> partial(exec::scan_partials(n, T) + 1);
      std::vector<std::uint64_t> out(n + 1, 0xdeadbeefull);
      exec::run_exclusive_scan(fast(), in.data(), out.data(), n, T, partial.data());
      CHECK(out == want);
      std::vector<std::uint64_t> inplace(in);
      inplace.push_back(0xdeadbeefull);
      exec::run_exclusive_scan(exec::host_check{}, inplace.data(), inplace.data(), n, T, partial.data());
      CHECK(inplace == want);
#if HCOMM_HAS_KOKKOS
      std::vector<std::uint64_t> k(n + 1, 1);
      exec::run_exclusive_scan(exec::kokkos<>{}, in.data(), k.data(), n, T, partial.data());
      CHECK(k == want);
#endif
    }
  }
}

TEST_CASE("checksum team kernel gives the flat kernel's block hashes", "[team]") {
  for (std::size_t bytes : {std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65537},
                            std::size_t{3 * 65536 + 1000}}) {
    std::vector<unsigned char> data(bytes);
    std::mt19937 g(static_cast<unsigned>(bytes));
    for (auto& b : data) b = static_cast<unsigned char>(g());
    const std::uint64_t size = bytes;
    const std::size_t blocks = hcomm::checksum_blocks(bytes) + 1;  // one block past the end: hash 0
    std::vector<std::uint64_t> want(blocks, 1), a(blocks, 2), b(blocks, 3);
    const hcomm::checksum_block_kernel flat{data.data(), &size, want.data(), blocks};
    for (std::size_t j = 0; j < blocks; ++j) flat(j);
    for (int T : team_sizes) {
      INFO("bytes=" << bytes << " team " << T);
      fast().launch(blocks, T, hcomm::checksum_block_team_kernel{data.data(), &size, a.data()});
      exec::host_check{}.launch(blocks, T, hcomm::checksum_block_team_kernel{data.data(), &size, b.data()});
      CHECK(a == want);
      CHECK(b == want);
#if HCOMM_HAS_KOKKOS
      std::vector<std::uint64_t> k(blocks, 4);
      exec::kokkos<>{}.launch(blocks, T, hcomm::checksum_block_team_kernel{data.data(), &size, k.data()});
      CHECK(k == want);
#endif
    }
  }
}

enum class kind { smooth, noise, zeros, mixed };
std::vector<float> make_floats(kind k, std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  std::mt19937 g(seed);
  for (std::size_t i = 0; i < n; ++i) {
    switch (k) {
      case kind::smooth: v[i] = std::sin(0.001f * static_cast<float>(i)) * 100.f; break;
      case kind::noise: {
        const std::uint32_t w = static_cast<std::uint32_t>(g());
        std::memcpy(&v[i], &w, 4);  // any bit pattern, NaNs included
        break;
      }
      case kind::zeros: v[i] = 0.f; break;
      case kind::mixed: v[i] = (i % 7 == 0) ? static_cast<float>(g() % 1000) : (i % 3 == 0 ? -1.5f : 0.f); break;
    }
  }
  return v;
}

// The flat encoder's slots and sizes (host, one thread: the portable or AVX2 body, same bytes).
struct encoded {
  std::vector<std::uint64_t> sizes;
  std::vector<std::vector<std::uint32_t>> chunks;  // each chunk's words
  bool operator==(const encoded&) const = default;
};
template <class Run>
encoded encode_with(const std::vector<float>& v, std::uint64_t dim, Run run) {
  using geo = mpc::geometry<std::uint32_t>;
  const std::size_t chunks = mpc::chunk_count(v.size());
  std::vector<std::uint32_t> slots(chunks * geo::slot_words, 0x5a5a5a5au);
  encoded e;
  e.sizes.assign(chunks, 0);
  run(v.data(), v.size(), &dim, slots.data(), e.sizes.data(), chunks);
  for (std::size_t c = 0; c < chunks; ++c)
    e.chunks.emplace_back(slots.begin() + static_cast<std::ptrdiff_t>(c * geo::slot_words),
                          slots.begin() + static_cast<std::ptrdiff_t>(c * geo::slot_words + e.sizes[c]));
  return e;
}

TEST_CASE("MPC team encode writes the flat kernel's chunks at every team size and stride", "[team][mpc]") {
  for (kind k : {kind::smooth, kind::noise, kind::zeros, kind::mixed}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{1024}, std::size_t{3000}}) {
      const auto v = make_floats(k, n, static_cast<unsigned>(n));
      for (std::uint64_t dim : {1u, 2u, 3u, 17u, 32u}) {
        const auto want = encode_with(v, dim, [](const float* in, std::size_t nn, const std::uint64_t* d,
                                                 std::uint32_t* s, std::uint64_t* sz, std::size_t chunks) {
          fast(1).for_each(chunks, mpc::encode_chunk_kernel<float>{in, nn, d, s, sz, 0});
        });
        for (int T : {32, 64, 256, 1024}) {
          INFO("kind " << static_cast<int>(k) << " n=" << n << " dim=" << dim << " team " << T);
          const auto run_on = [T](const auto& ex) {
            return [&ex, T](const float* in, std::size_t nn, const std::uint64_t* d, std::uint32_t* s,
                            std::uint64_t* sz, std::size_t chunks) {
              ex.launch(chunks, T, mpc::encode_chunk_team_f32{in, nn, d, s, sz});
            };
          };
          const exec::host f = fast();
          const exec::host_check hc{static_cast<std::uint64_t>(T)};
          CHECK(encode_with(v, dim, run_on(f)) == want);
          CHECK(encode_with(v, dim, run_on(hc)) == want);
#if HCOMM_HAS_KOKKOS
          const exec::kokkos<> kx{};
          CHECK(encode_with(v, dim, run_on(kx)) == want);
#endif
        }
      }
    }
  }
}

TEST_CASE("MPC team decode restores every bit at every team size and stride", "[team][mpc]") {
  hcomm::codec::engine<exec::host> eng{fast(1)};
  for (kind k : {kind::smooth, kind::noise, kind::mixed}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{1024}, std::size_t{3000}}) {
      const auto v = make_floats(k, n, static_cast<unsigned>(n) + 1);
      for (unsigned dim : {1u, 3u, 32u}) {
        const auto frame = eng.compress(hcomm::codec::parse_config("mpc:" + std::to_string(dim)),
                                        std::span<const float>(v));
        const auto* payload = reinterpret_cast<const unsigned char*>(frame.data()) + hcomm::codec::header_bytes;
        if (payload[0] != mpc::mode_mpc) continue;  // raw fallback: nothing to decode
        const std::size_t chunks = mpc::chunk_count(n);
        std::vector<std::uint64_t> offsets(chunks + 1);
        for (std::size_t c = 0; c < chunks; ++c) {
          std::uint16_t e;
          std::memcpy(&e, payload + mpc::head_bytes + 2 * c, 2);
          offsets[c + 1] = offsets[c] + e;
        }
        for (int T : {32, 128, 1024}) {
          INFO("kind " << static_cast<int>(k) << " n=" << n << " dim=" << dim << " team " << T);
          std::vector<float> a(n, -7.f), b(n, -7.f);
          fast().launch(chunks, T, mpc::decode_chunk_team_f32{payload, n, chunks, dim, offsets.data(), a.data()});
          exec::host_check{}.launch(chunks, T,
                                    mpc::decode_chunk_team_f32{payload, n, chunks, dim, offsets.data(), b.data()});
          CHECK(std::memcmp(a.data(), v.data(), n * 4) == 0);
          CHECK(std::memcmp(b.data(), v.data(), n * 4) == 0);
#if HCOMM_HAS_KOKKOS
          std::vector<float> kv(n, -7.f);
          exec::kokkos<>{}.launch(chunks, T, mpc::decode_chunk_team_f32{payload, n, chunks, dim, offsets.data(), kv.data()});
          CHECK(std::memcmp(kv.data(), v.data(), n * 4) == 0);
#endif
        }
      }
    }
  }
}

// ---- planted bugs: host-check reports each on every seed; host-fast runs them silently ------

// Missing phase boundary: thread t writes s[t] and reads s[t + 1] in the same phase.
struct missing_barrier_kernel {
  static constexpr int max_team = 256;
  static constexpr const char* name = "planted_missing_barrier";
  std::uint32_t* out;
  std::size_t scratch_bytes(int T) const { return exec::scratch_for<std::uint32_t>(static_cast<std::size_t>(T) + 1); }
  template <class Team>
  void operator()(Team& team) const {
    auto s = team.template shared<std::uint32_t>(static_cast<std::size_t>(team.size()) + 1, "s");
    team.for_threads([&](int t) {
      s[t] = static_cast<std::uint32_t>(t);
      if (t == 0) s[team.size()] = 0;
      out[t] = s[t + 1];  // BUG: s[t + 1] is written by thread t + 1 in this very phase
    });
  }
};

// An in-place update: s was written in an earlier phase, then thread 0 reads s[1] while
// thread 1 overwrites it in the same phase (the result depends on which runs first). One
// pair only, so the race is caught whichever of the two the shuffle runs first.
struct in_place_shift_kernel {
  static constexpr int max_team = 256;
  static constexpr const char* name = "planted_in_place_shift";
  std::uint32_t* out;
  std::size_t scratch_bytes(int T) const { return exec::scratch_for<std::uint32_t>(static_cast<std::size_t>(T)); }
  template <class Team>
  void operator()(Team& team) const {
    auto s = team.template shared<std::uint32_t>(static_cast<std::size_t>(team.size()), "s");
    team.for_threads([&](int t) { s[t] = static_cast<std::uint32_t>(t); });
    team.for_threads([&](int t) {
      if (t == 0) s[0] = s[1] + 1;  // BUG: needs a second buffer or a phase between
      if (t == 1) s[1] = 9;
    });
    team.for_threads([&](int t) { out[t] = s[t]; });
  }
};

// Off-by-one lane in a shuffle: a rotation without the wrap.
struct shuffle_off_by_one_kernel {
  static constexpr int max_team = 256;
  static constexpr const char* name = "planted_shuffle_lane";
  std::uint32_t* out;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team& team) const {
    auto v = team.template per_thread<std::uint32_t>();
    auto src = team.template per_thread<int>();
    team.for_threads([&](int t) {
      v[t] = static_cast<std::uint32_t>(t);
      src[t] = (t & 31) + 1;  // BUG: lane 31 asks for lane 32 (wanted ((t & 31) + 1) & 31)
    });
    auto r = team.shuffle(v, src);
    team.for_threads([&](int t) { out[t] = r[t]; });
  }
};

// Read of scratch nobody wrote: the last element is never initialised.
struct unwritten_read_kernel {
  static constexpr int max_team = 256;
  static constexpr const char* name = "planted_unwritten_read";
  std::uint32_t* out;
  std::size_t scratch_bytes(int T) const { return exec::scratch_for<std::uint32_t>(static_cast<std::size_t>(T)); }
  template <class Team>
  void operator()(Team& team) const {
    auto s = team.template shared<std::uint32_t>(static_cast<std::size_t>(team.size()), "s");
    team.for_threads([&](int t) {
      if (t + 1 < team.size()) s[t] = static_cast<std::uint32_t>(t);  // BUG: s[T-1] stays unwritten
    });
    team.for_threads([&](int t) { out[t] = s[team.size() - 1 - t]; });
  }
};

// Two threads write one word in a phase.
struct double_write_kernel {
  static constexpr int max_team = 256;
  static constexpr const char* name = "planted_double_write";
  std::uint32_t* out;
  std::size_t scratch_bytes(int T) const { return exec::scratch_for<std::uint32_t>(static_cast<std::size_t>(T)); }
  template <class Team>
  void operator()(Team& team) const {
    auto s = team.template shared<std::uint32_t>(static_cast<std::size_t>(team.size()), "s");
    team.for_threads([&](int t) { s[t / 2 * 2] = static_cast<std::uint32_t>(t); });  // BUG: t and t+1 collide
    team.for_threads([&](int t) { out[t] = t % 2 == 0 ? static_cast<std::uint32_t>(s[t]) : 0u; });
  }
};

template <class K>
void require_caught(const char* what) {
  std::vector<std::uint32_t> out(256);
  // One team per launch, so each seed is one shuffle of the racing threads.
  for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 12345u}) {
    INFO("seed " << seed);
    try {
      exec::host_check{seed}.launch(1, 64, K{out.data()});
      FAIL("host-check did not report " << what);
    } catch (const hcomm::error& e) {
      CHECK(e.code() == hcomm::errc::kernel_check);
      CHECK_THAT(e.what(), Contains(what) && Contains(K::name) && Contains("seed " + std::to_string(seed)));
    }
  }
  // host-fast notices nothing: the bug would ship.
  CHECK_NOTHROW(fast().launch(2, 64, K{out.data()}));
}

TEST_CASE("host-check catches a missing phase boundary every time", "[team][planted]") {
  require_caught<missing_barrier_kernel>("a missing phase boundary");
}
TEST_CASE("host-check catches an in-place update that reads a neighbour every time", "[team][planted]") {
  require_caught<in_place_shift_kernel>("a missing phase boundary");
}
TEST_CASE("host-check catches an off-by-one shuffle lane every time", "[team][planted]") {
  require_caught<shuffle_off_by_one_kernel>("reads lane 32, outside its warp");
}
TEST_CASE("host-check catches a read of scratch nobody wrote every time", "[team][planted]") {
  require_caught<unwritten_read_kernel>("which no thread wrote");
}
TEST_CASE("host-check catches two threads writing one word every time", "[team][planted]") {
  require_caught<double_write_kernel>("also writes in this phase");
}

// ---- misuse ---------------------------------------------------------------------------------

struct collective_in_phase_kernel {
  static constexpr int max_team = 64;
  static constexpr const char* name = "collective_in_phase";
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team& team) const {
    auto v = team.template per_thread<std::uint32_t>();
    team.for_threads([&](int t) {
      v[t] = 1;
      if (t < 5) (void)team.reduce(v, exec::sum{});  // some threads only
    });
  }
};
struct big_scratch_kernel {
  static constexpr int max_team = 64;
  static constexpr const char* name = "big_scratch";
  std::size_t bytes;
  std::size_t scratch_bytes(int) const { return bytes; }
  template <class Team>
  void operator()(Team& team) const {
    (void)team.template shared<std::uint32_t>(bytes / 4 + 1);  // one more than declared
  }
};
struct peek_kernel {  // team-level code reading per-thread state (not a collective)
  static constexpr int max_team = 64;
  static constexpr const char* name = "peek";
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team& team) const {
    auto v = team.template per_thread<std::uint32_t>();
    team.for_threads([&](int t) { v[t] = 1; });
    (void)static_cast<std::uint32_t>(v[3]);
  }
};

TEST_CASE("team misuse is a clear error on host-fast and host-check", "[team]") {
  const exec::host f = fast();
  const exec::host_check hc{};
  const auto both = [&](auto&& k, int team, const char* msg) {
    CHECK_THROWS_WITH(f.launch(3, team, k), Contains(msg));
    CHECK_THROWS_WITH(hc.launch(3, team, k), Contains(msg));
  };
  both(collective_in_phase_kernel{}, 64, "inside a phase");
  both(collective_in_phase_kernel{}, 48, "not a multiple of 32");
  both(collective_in_phase_kernel{}, 128, "in 32..64");
  both(big_scratch_kernel{64}, 64, "its scratch_bytes() says 64");
  both(big_scratch_kernel{exec::max_team_scratch_bytes + 16}, 64, "of team scratch exceed");
#if HCOMM_HAS_KOKKOS
  const exec::kokkos<> kx{};
  CHECK_THROWS_WITH(kx.launch(3, 64, collective_in_phase_kernel{}), Contains("inside a phase"));
  CHECK_THROWS_WITH(kx.launch(3, 48, collective_in_phase_kernel{}), Contains("not a multiple of 32"));
#endif
  CHECK_THROWS_WITH(hc.launch(1, 64, peek_kernel{}), Contains("team-level code touches per-thread state"));
}

}  // namespace
