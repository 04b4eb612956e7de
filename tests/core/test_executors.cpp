// Executors: unit tests of each member (scan, for_each coverage, copy/fill) on every host-side
// executor, and the engine over every registered codec (float, double, and bf16 and f16 for the
// codecs that take them) giving byte-identical frames and decoded values on every executor
// (host at 1, 2 and 3 threads, host-check, Kokkos' default space) for the same input. The
// codec list comes from codec/registry.hpp, so codecs added there are covered without editing
// this file.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "exec_probes.hpp"
#include "hcomm/codec/codec.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/exec/exec.hpp"
#include "hcomm/exec/host_check.hpp"
#if HCOMM_EXEC_HAS_KOKKOS
#include "kokkos_session.hpp"
#endif

namespace {

using namespace hcomm_test;
namespace codec = hcomm::codec;
namespace exec = hcomm::exec;

#if HCOMM_EXEC_HAS_KOKKOS
const hcomm_test::kokkos_session the_kokkos_session;
#endif

// Executor setups under test. The reference for byte comparisons is host_1.
struct host_1 {
  using exec_type = exec::host;
  static exec_type make() { exec::host h; h.threads = 1; return h; }
  static constexpr const char* name = "host(1 thread)";
};
struct host_2 {
  using exec_type = exec::host;
  static exec_type make() { exec::host h; h.threads = 2; return h; }
  static constexpr const char* name = "host(2 threads)";
};
struct host_3 {  // odd thread count: uneven static chunking
  using exec_type = exec::host;
  static exec_type make() { exec::host h; h.threads = 3; return h; }
  static constexpr const char* name = "host(3 threads)";
};
// Host-check: the device code paths (team kernels, all chunks at once) in host memory, with
// races and unwritten reads reported.
struct host_checked {
  using exec_type = exec::host_check;
  static exec_type make() { return exec::host_check{11}; }
  static constexpr const char* name = "host_check";
};
#if HCOMM_EXEC_HAS_KOKKOS
struct kokkos_default {
  using exec_type = exec::kokkos<>;
  static exec_type make() { return exec::kokkos<>{}; }
  static constexpr const char* name = "kokkos(DefaultExecutionSpace)";
};
using executor_setups = std::tuple<host_1, host_2, host_3, host_checked, kokkos_default>;
using compared_setups = std::tuple<host_2, host_3, host_checked, kokkos_default>;
#else
using executor_setups = std::tuple<host_1, host_2, host_3, host_checked>;
using compared_setups = std::tuple<host_2, host_3, host_checked>;
#endif

// ---- executor members ----------------------------------------------------------------------

TEMPLATE_LIST_TEST_CASE("executor: exclusive_scan writes n+1 prefix sums, in place or not", "[exec]",
                        executor_setups) {
  const auto ex = TestType::make();
  INFO(TestType::name);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{1000},
                        std::size_t{(1u << 20) + 7}}) {
    const auto in = random_words(n, n + 1);
    const auto want = host_exclusive_scan(in);
    for (bool in_place : {false, true}) {
      INFO("n=" << n << " in_place=" << in_place);
      const auto got = scan_probe(ex, in, in_place);
      REQUIRE(got.size() == n + 1);
      CHECK(got == want);
    }
  }
}

TEMPLATE_LIST_TEST_CASE("executor: for_each visits every index exactly once", "[exec]", executor_setups) {
  const auto ex = TestType::make();
  INFO(TestType::name);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4097},
                        std::size_t{3u << 20}}) {
    INFO("n=" << n);
    const auto a = for_each_probe(ex, n);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += a[i] != ((static_cast<std::uint64_t>(i) << 8) + 1);
    CHECK(wrong == 0);
    CHECK(a[n] == 0);  // nothing past the range
  }
}

TEMPLATE_LIST_TEST_CASE("executor: copy, fill_zero, from_host and to_host move the right bytes", "[exec]",
                        executor_setups) {
  const auto ex = TestType::make();
  INFO(TestType::name);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{100003}}) {
    INFO("n=" << n);
    CHECK(copy_fill_probe(ex, n) == host_copy_fill_expected(n));
  }
}

TEMPLATE_LIST_TEST_CASE("executor: allocate gives aligned memory, nullptr for 0 bytes", "[exec]",
                        executor_setups) {
  const auto ex = TestType::make();
  INFO(TestType::name);
  CHECK(ex.allocate(0) == nullptr);
  ex.deallocate(nullptr);  // must be a no-op
  for (std::size_t bytes : {std::size_t{1}, std::size_t{63}, std::size_t{1} << 20}) {
    void* p = ex.allocate(bytes);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);  // codecs rely on word alignment
    ex.deallocate(p);
  }
  ex.synchronize();
}

// ---- all executors x all registered codecs ------------------------------------------------

template <class Setup, class Codec>
struct agree_case {
  using setup = Setup;
  using codec_type = Codec;
};

// Codec<T> of the 16-bit types only for the families that take them (family_takes).
template <bool Takes, class Setup, template <class> class C, class T>
struct case_if {
  using type = std::tuple<>;
};
template <class Setup, template <class> class C, class T>
struct case_if<true, Setup, C, T> {
  using type = std::tuple<agree_case<Setup, C<T>>>;
};

template <class Setup, class List>
struct cases_for;
template <class Setup, template <class> class... Cs>
struct cases_for<Setup, codec::codec_list<Cs...>> {
  using type = decltype(std::tuple_cat(
      std::declval<std::tuple<agree_case<Setup, Cs<float>>..., agree_case<Setup, Cs<double>>...>>(),
      std::declval<typename case_if<codec::family_takes<Cs, hcomm::bf16>, Setup, Cs, hcomm::bf16>::type>()...,
      std::declval<typename case_if<codec::family_takes<Cs, hcomm::f16>, Setup, Cs, hcomm::f16>::type>()...));
};

template <class Setups>
struct all_cases;
template <class... Ss>
struct all_cases<std::tuple<Ss...>> {
  using type = decltype(std::tuple_cat(std::declval<typename cases_for<Ss, codec::registered_codecs>::type>()...));
};
using agreement_cases = all_cases<compared_setups>::type;

template <class T>
void require_same(const outcome& ref, const outcome& got) {
  REQUIRE(ref.ok == got.ok);
  if (!ref.ok) {
    INFO("reference error: " << ref.what << "\nexecutor error: " << got.what);
    CHECK(ref.code == got.code);
    return;
  }
  CHECK(ref.frame.size() == got.frame.size());
  CHECK(ref.frame == got.frame);
  CHECK(ref.decoded == got.decoded);
}

TEMPLATE_LIST_TEST_CASE("executors agree: every registered codec gives the same frame bytes on every executor",
                        "[exec][codec]", agreement_cases) {
  using Setup = typename TestType::setup;
  using Codec = typename TestType::codec_type;
  using T = typename Codec::value_type;
  codec::engine<exec::host> ref_engine{host_1::make()};
  codec::engine<typename Setup::exec_type> engine{Setup::make()};
  const auto params = params_of<Codec>();
  REQUIRE(!params.empty());
  std::size_t compared = 0;
  for (std::size_t n : {0, 1, 3, 4, 5, 31, 32, 33, 1023, 1025}) {
    for (auto kind : all_kinds) {
      const auto data = make_data<T>(kind, n, 7 * n + 1);
      for (unsigned p : params) {
        for (bool checksum : {true, false}) {
          const codec::config c{Codec::id, hcomm::dtype_of<T>, p, checksum};
          INFO(Setup::name << " vs " << host_1::name << ": " << codec::to_string(c) << " "
                           << hcomm::to_string(c.type) << " n=" << n << " " << to_string(kind)
                           << " checksum=" << checksum);
          const outcome ref = run_engine(ref_engine, c, data.data(), n);
          const outcome got = run_engine(engine, c, data.data(), n);
          require_same<T>(ref, got);
          ++compared;
        }
      }
    }
  }
  // Large inputs: many chunks, several 64 KiB checksum blocks, uneven thread splits.
  for (std::size_t n : {std::size_t{(1u << 18) + 7}, std::size_t{(1u << 20) + 7}}) {
    for (auto kind : {data_kind::smooth, data_kind::noise}) {
      const auto data = make_data<T>(kind, n, n);
      for (unsigned p : {params.front(), params.back()}) {
        const codec::config c{Codec::id, hcomm::dtype_of<T>, p, true};
        INFO(Setup::name << " vs " << host_1::name << ": " << codec::to_string(c) << " "
                         << hcomm::to_string(c.type) << " n=" << n << " " << to_string(kind));
        const outcome ref = run_engine(ref_engine, c, data.data(), n);
        CHECK(ref.ok);  // codecs must take smooth and noisy data of any length
        require_same<T>(ref, run_engine(engine, c, data.data(), n));
        ++compared;
      }
    }
  }
  CHECK(compared > 0);
}

// The comparison above must be able to fail: a frame that differs in one payload byte is
// not accepted as equal, and the reference run itself produces a decodable frame.
TEST_CASE("executors agree: the comparison detects a one-byte difference", "[exec]") {
  codec::engine<exec::host> eng{host_1::make()};
  const auto data = make_data<float>(data_kind::smooth, 1000, 1);
  const codec::config c{hcomm::codec_id::none, hcomm::dtype::f32, 0, true};
  outcome a = run_engine(eng, c, data.data(), data.size());
  REQUIRE(a.ok);
  REQUIRE(a.frame.size() == codec::header_bytes + 4000);
  outcome b = a;
  b.frame[codec::header_bytes + 17] ^= 1;
  CHECK(a.frame != b.frame);
  CHECK(std::memcmp(a.decoded.data(), data.data(), 4000) == 0);
}

}  // namespace
