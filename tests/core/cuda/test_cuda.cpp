// CUDA executor tests: the executor's members against host results, and the codec engine on
// hcomm::exec::cuda giving the same frame bytes and decoded values as the host executor for
// every registered codec (float, double, and bf16/f16 where the codec takes them). Without
// a usable device the binary prints "SKIPPED: no CUDA device (...)" and exits 77, which ctest
// reports as skipped (SKIP_RETURN_CODE).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>

#include "../team_probes.hpp"
#include "cuda_backend.hpp"
#include "hcomm/codec/registry.hpp"

namespace {

using namespace hcomm_test;
namespace codec = hcomm::codec;
namespace side = hcomm_test::cuda_side;

// All host threads: the host executor's thread-count independence is test_executors' job,
// and GPU machines have many cores for the large reference runs.
hcomm::exec::host host_ref() { return hcomm::exec::host{}; }

TEST_CASE("cuda executor: exclusive_scan matches the host, in place or not", "[cuda][exec]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{1000},
                        std::size_t{(1u << 20) + 7}, std::size_t{(1u << 24) + 3}}) {
    const auto in = random_words(n, n + 1);
    const auto want = host_exclusive_scan(in);
    for (bool in_place : {false, true}) {
      INFO("n=" << n << " in_place=" << in_place);
      CHECK(side::scan(in, in_place) == want);
    }
  }
}

TEST_CASE("cuda team collectives give their defined results", "[cuda][team]") {
  for (int T : {32, 64, 96, 256, 1024}) {
    INFO("team size " << T);
    std::vector<std::uint32_t> in(static_cast<std::size_t>(T));
    std::uint32_t x = static_cast<std::uint32_t>(T);
    for (auto& v : in) {
      x = x * 1664525u + 1013904223u;
      v = (x >> 30) == 0 ? 0u : x;
    }
    CHECK(side::team_collectives(in, T) == collectives_expected(in, T));
  }
}

TEST_CASE("cuda team mma on tensor cores gives the host's product to float rounding", "[cuda][team][mma]") {
  unsigned seed = 11;
  for (bool at : {false, true})
    for (bool bt : {false, true})
      for (bool acc : {false, true})
        for (int team : {32, 128}) {
          INFO("a_trans " << at << " b_trans " << bt << " accumulate " << acc << " team " << team);
          hcomm::exec::mma_shape s;
          s.m = 32, s.n = 48, s.k = 64, s.a_trans = at, s.b_trans = bt, s.accumulate = acc;
          s.lda = (at ? s.m : s.k) + 8, s.ldb = (bt ? s.k : s.n) + 16, s.ldc = s.n + 4;
          std::vector<std::uint16_t> a(static_cast<std::size_t>(s.lda) * (at ? s.k : s.m));
          std::vector<std::uint16_t> b(static_cast<std::size_t>(s.ldb) * (bt ? s.n : s.k));
          std::vector<float> c(static_cast<std::size_t>(s.ldc) * s.m);
          std::uint32_t x = seed++;
          const auto next = [&x] {
            x = x * 1664525u + 1013904223u;
            return static_cast<float>(x >> 8) / static_cast<float>(1u << 24) * 4.f - 2.f;
          };
          for (auto& v : a) v = hcomm::to_bf16_bits(next());
          for (auto& v : b) v = hcomm::to_bf16_bits(next());
          for (auto& v : c) v = next();
          const auto want = hcomm_test::mma_expected(a, b, c, s);
          const auto got = side::team_mma(a, b, c, s, team);
          REQUIRE(got.size() == want.size());
          double worst = 0;  // sums of 64 products of size up to 4: float rounding is ~1e-5
          for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
          CHECK(worst < 1e-3);
          // C's padding columns (j >= n) are untouched
          for (int i = 0; i < s.m; ++i)
            for (int j = s.n; j < s.ldc; ++j) CHECK(got[static_cast<std::size_t>(i) * s.ldc + j] == c[static_cast<std::size_t>(i) * s.ldc + j]);
        }
}

TEST_CASE("cuda streams overlap, and an event orders one stream after the other", "[cuda][stream]") {
  const auto r = side::two_streams(1u << 20);
  CHECK(r[0] == 1);  // the spinning kernel saw the other stream's flag
  CHECK(r[1] == 0);  // the copy after the event saw every value
}

TEST_CASE("cuda executor: scan workspace is allocated once and reused", "[cuda][exec]") {
  const auto sizes = side::scan_workspace_sizes((1u << 22) + 5);
  REQUIRE(sizes.size() == 4);
  CHECK(sizes[0] > 0);
  CHECK(sizes[1] == sizes[0]);
  CHECK(sizes[2] == sizes[0]);
  CHECK(sizes[3] == sizes[0]);
}

TEST_CASE("cuda executor: for_each visits every index exactly once (grid-stride)", "[cuda][exec]") {
  // 3 * 2^20 indices need 12288 blocks of 256: more than the grid cap, so threads stride.
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{255}, std::size_t{257},
                        std::size_t{3u << 20}, std::size_t{(1u << 25) + 1}}) {
    INFO("n=" << n);
    const auto a = side::for_each(n);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += a[i] != ((static_cast<std::uint64_t>(i) << 8) + 1);
    CHECK(wrong == 0);
    CHECK(a[n] == 0);
  }
}

TEST_CASE("cuda executor: copy, fill_zero, from_host and to_host move the right bytes", "[cuda][exec]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{100003},
                        std::size_t{1u << 24}}) {
    INFO("n=" << n);
    CHECK(side::copy_fill(n) == host_copy_fill_expected(n));
  }
}

// Every codec of the list on float and double, and on bf16 and f16 where it takes them.
template <bool Takes, template <class> class C, class T>
struct taken {
  using type = std::tuple<>;
};
template <template <class> class C, class T>
struct taken<true, C, T> {
  using type = std::tuple<C<T>>;
};
template <template <class> class C, class T>
using taken_t = typename taken<codec::family_takes<C, T>, C, T>::type;
template <class List>
struct codec_types;
template <template <class> class... Cs>
struct codec_types<codec::codec_list<Cs...>> {
  using type = decltype(std::tuple_cat(std::declval<std::tuple<Cs<float>..., Cs<double>...>>(),
                                       std::declval<taken_t<Cs, hcomm::bf16>>()...,
                                       std::declval<taken_t<Cs, hcomm::f16>>()...));
};
static_assert(std::tuple_size_v<codec_types<codec::registered_codecs>::type> == 2 * 5 + 2 * 3,
              "float and double of the five codecs, bf16 and f16 of none, MPC and ZFP");

TEMPLATE_LIST_TEST_CASE("cuda executor: every registered codec gives the host executor's frame bytes",
                        "[cuda][codec]", codec_types<codec::registered_codecs>::type) {
  using Codec = TestType;
  using T = typename Codec::value_type;
  codec::engine<hcomm::exec::host> ref_engine{host_ref()};
  const auto params = params_of<Codec>();
  REQUIRE(!params.empty());
  auto compare = [&](const codec::config& c, const std::vector<T>& data) {
    const outcome ref = run_engine(ref_engine, c, data.data(), data.size());
    const outcome got = side::run_engine(c, data.data(), data.size());
    REQUIRE(ref.ok == got.ok);
    if (!ref.ok) {
      INFO("host: " << ref.what << "\ncuda: " << got.what);
      CHECK(ref.code == got.code);
      return;
    }
    CHECK(ref.frame == got.frame);
    CHECK(ref.decoded == got.decoded);
  };
  for (std::size_t n : {0, 1, 3, 4, 5, 31, 32, 33, 1023, 1024, 1025}) {
    for (auto kind : all_kinds) {
      const auto data = make_data<T>(kind, n, 7 * n + 1);
      for (unsigned p : params) {
        for (bool checksum : {true, false}) {
          const codec::config c{Codec::id, hcomm::dtype_of<T>, p, checksum};
          INFO(codec::to_string(c) << " " << hcomm::to_string(c.type) << " n=" << n << " " << to_string(kind)
                                   << " checksum=" << checksum);
          compare(c, data);
        }
      }
    }
  }
  for (std::size_t n : {std::size_t{(1u << 20) + 7}, std::size_t{(1u << 24) + 1}}) {
    for (auto kind : {data_kind::smooth, data_kind::noise}) {
      const auto data = make_data<T>(kind, n, n);
      for (unsigned p : {params.front(), params.back()}) {
        const codec::config c{Codec::id, hcomm::dtype_of<T>, p, true};
        INFO(codec::to_string(c) << " " << hcomm::to_string(c.type) << " n=" << n << " " << to_string(kind));
        compare(c, data);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (side::device_count(&why) == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n", why.c_str());
    std::fflush(stdout);
    return 77;  // ctest: SKIP_RETURN_CODE
  }
  std::printf("CUDA device: %s\n", side::device_name().c_str());
  return Catch::Session().run(argc, argv);
}
