// Compile-time tests of the concepts and policy tags: the positive and negative cases that a
// requires-expression can observe. (A wrong template argument such as Lossy<0> is a hard
// static_assert error, not a substitution failure; those cases are the must-not-compile
// tests in tests/core/neg/, run by check_compile_fails.cmake.) The runtime TEST_CASEs repeat
// a few facts so that ctest has something to run and report.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hcomm/codec/codec.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/exec/exec.hpp"
#include "hcomm/policy/axis.hpp"
#include "hcomm/policy/compressor.hpp"

namespace {

using namespace hcomm;

// ---- compressor_policy --------------------------------------------------------------------
static_assert(compressor_policy<Compressor<Lossless>>);
static_assert(compressor_policy<Compressor<LosslessDim<4>>>);
static_assert(compressor_policy<Compressor<Lossy<3>>>);
static_assert(compressor_policy<Compressor<Lossy<8>>>);
static_assert(compressor_policy<Compressor<Lossy<64>>>);
static_assert(compressor_policy<Compressor<Uncompressed>>);
static_assert(!compressor_policy<Lossless>, "a bare tag is not a Compressor<...>");
static_assert(!compressor_policy<Lossy<8>>);
static_assert(!compressor_policy<int>);
static_assert(!compressor_policy<void>);
static_assert(!compressor_policy<ParallelAxis<DP>>, "an axis is not a compressor");

static_assert(compression_tag<Lossless> && compression_tag<Lossy<16>> && compression_tag<Uncompressed>);
static_assert(!compression_tag<int> && !compression_tag<Compressor<Lossless>> && !compression_tag<DP>);

// Values carried by the tags and forwarded by the wrapper.
static_assert(Compressor<Lossy<8>>::codec == codec_id::zfp && Compressor<Lossy<8>>::param == 8);
static_assert(!Compressor<Lossy<8>>::is_lossless && Lossy<8>::rate == 8);
static_assert(Compressor<Lossless>::codec == codec_id::mpc && Compressor<Lossless>::param == 0);
static_assert(Compressor<LosslessDim<32>>::param == 32 && LosslessDim<32>::dim == 32);
static_assert(Compressor<Uncompressed>::codec == codec_id::none && Compressor<Uncompressed>::is_lossless);
static_assert(std::is_same_v<Compressor<Lossy<16>>::tag, Lossy<16>>);
static_assert(std::is_empty_v<Compressor<Lossy<8>>> && std::is_empty_v<Lossless>, "policies are empty tags");
// The baselines: the bfloat16 cast and blockwise int8, both lossy.
static_assert(compressor_policy<Compressor<Cast<BF16>>> && compressor_policy<Compressor<Int8<256>>>);
static_assert(compressor_policy<Compressor<Int8<>>> && Int8<>::block == 256 && compressor_policy<Compressor<Int8<8>>>);
static_assert(compression_tag<Cast<BF16>> && compression_tag<Int8<512>> && !compression_tag<BF16>);
static_assert(Compressor<Cast<BF16>>::codec == codec_id::bf16 && Compressor<Cast<BF16>>::param == 0 &&
              !Compressor<Cast<BF16>>::is_lossless);
static_assert(Compressor<Int8<64>>::codec == codec_id::int8 && Compressor<Int8<64>>::param == 64 &&
              !Compressor<Int8<64>>::is_lossless);
static_assert(std::is_empty_v<Compressor<Int8<>>> && std::is_empty_v<Cast<BF16>> && std::is_empty_v<BF16>);

// ---- axis_policy --------------------------------------------------------------------------
static_assert(axis_policy<ParallelAxis<DP>> && axis_policy<ParallelAxis<PP>> && axis_policy<ParallelAxis<TP>>);
static_assert(!axis_policy<DP>, "a bare axis tag is not a ParallelAxis<...>");
static_assert(!axis_policy<int>);
static_assert(!axis_policy<Compressor<Lossless>>);
static_assert(axis_tag<DP> && axis_tag<PP> && axis_tag<TP>);
static_assert(!axis_tag<int> && !axis_tag<ParallelAxis<DP>>);
static_assert(ParallelAxis<DP>::id == axis_id::dp && ParallelAxis<PP>::id == axis_id::pp &&
              ParallelAxis<TP>::id == axis_id::tp);
static_assert(std::is_same_v<ParallelAxis<TP>::tag, TP>);
static_assert(std::is_empty_v<ParallelAxis<DP>>);

// ---- exec::executor -----------------------------------------------------------------------
static_assert(exec::executor<exec::host>);
static_assert(!exec::host::is_device);
#if HCOMM_EXEC_HAS_KOKKOS
static_assert(exec::executor<exec::kokkos<>>);
static_assert(exec::executor<exec::kokkos<Kokkos::DefaultHostExecutionSpace>>);
static_assert(!exec::kokkos<Kokkos::DefaultHostExecutionSpace>::is_device);
#endif

struct no_scan {  // everything but exclusive_scan
  static constexpr bool is_device = false;
  template <class F> void for_each(std::size_t, const F&) const {}
  void* allocate(std::size_t) const { return nullptr; }
  void deallocate(void*) const {}
  void copy(void*, const void*, std::size_t) const {}
  void to_host(void*, const void*, std::size_t) const {}
  void from_host(void*, const void*, std::size_t) const {}
  void fill_zero(void*, std::size_t) const {}
  void synchronize() const {}
};
struct complete : no_scan {
  void exclusive_scan(const std::uint64_t*, std::uint64_t*, std::size_t) const {}
};
struct non_const_for_each : complete {  // executors are used through const references
  template <class F> void for_each(std::size_t, const F&) = delete;
};
struct allocate_returns_int : complete {
  int* allocate(std::size_t) const { return nullptr; }
};
struct no_is_device {  // complete's members without is_device
  template <class F> void for_each(std::size_t, const F&) const {}
  void exclusive_scan(const std::uint64_t*, std::uint64_t*, std::size_t) const {}
  void* allocate(std::size_t) const { return nullptr; }
  void deallocate(void*) const {}
  void copy(void*, const void*, std::size_t) const {}
  void to_host(void*, const void*, std::size_t) const {}
  void from_host(void*, const void*, std::size_t) const {}
  void fill_zero(void*, std::size_t) const {}
  void synchronize() const {}
};
static_assert(exec::executor<complete>, "the minimal complete executor must satisfy the concept");
static_assert(!exec::executor<no_scan>);
static_assert(!exec::executor<non_const_for_each>);
static_assert(!exec::executor<allocate_returns_int>, "allocate must return void*");
static_assert(!exec::executor<no_is_device>);
static_assert(!exec::executor<int>);

// The engine is constrained on the concept.
template <class E>
concept engine_accepts = requires { typename codec::engine<E>; } && requires(codec::engine<E>& e) { e.executor(); };
static_assert(engine_accepts<exec::host>);
static_assert(!engine_accepts<int> && !engine_accepts<no_scan>, "engine<E> rejects non-executors");

// ---- codec_kernel -------------------------------------------------------------------------
template <class List>
struct all_kernels;
template <template <class> class... Cs>
struct all_kernels<codec::codec_list<Cs...>> {
  static constexpr bool value = (... && (codec::codec_kernel<Cs<float>> && codec::codec_kernel<Cs<double>>));
  static constexpr std::size_t count = sizeof...(Cs);
};
static_assert(all_kernels<codec::registered_codecs>::value, "every registered codec satisfies codec_kernel");
static_assert(all_kernels<codec::registered_codecs>::count >= 1);
static_assert(codec::codec_kernel<codec::none_codec<float>> && codec::codec_kernel<codec::none_codec<double>>);
static_assert(std::is_same_v<codec::none_codec<double>::value_type, double>);

struct kernel_without_id {
  using value_type = float;
  static bool valid_param(unsigned) { return true; }
  static std::size_t max_payload_bytes(std::size_t, unsigned) { return 0; }
  static std::size_t workspace_bytes(std::size_t, unsigned) { return 0; }
};
struct kernel_bad_bound {
  static constexpr codec_id id = codec_id::none;
  using value_type = float;
  static bool valid_param(unsigned) { return true; }
  static int max_payload_bytes(std::size_t, unsigned) { return 0; }  // must be std::size_t
  static std::size_t workspace_bytes(std::size_t, unsigned) { return 0; }
};
struct kernel_ok {
  static constexpr codec_id id = codec_id::none;
  using value_type = float;
  static bool valid_param(unsigned) { return true; }
  static std::size_t max_payload_bytes(std::size_t, unsigned) { return 0; }
  static std::size_t workspace_bytes(std::size_t, unsigned) { return 0; }
};
static_assert(codec::codec_kernel<kernel_ok>);
static_assert(!codec::codec_kernel<kernel_without_id>);
static_assert(!codec::codec_kernel<kernel_bad_bound>);
static_assert(!codec::codec_kernel<int>);

// config::of maps policies to runtime configs.
static_assert(codec::config::of<Compressor<Lossy<8>>, float>() == codec::config{codec_id::zfp, dtype::f32, 8, true});
static_assert(codec::config::of<Compressor<Int8<128>>, double>() == codec::config{codec_id::int8, dtype::f64, 128, true});
static_assert(codec::config::of<Compressor<Cast<BF16>>, float>() == codec::config{codec_id::bf16, dtype::f32, 0, true});
static_assert(codec::config::of<Compressor<Lossless>, double>(false) ==
              codec::config{codec_id::mpc, dtype::f64, 0, false});
static_assert(floating_element<float> && floating_element<double> && !floating_element<int> &&
              !floating_element<long double>);

TEST_CASE("policies: tags carry their values at run time too", "[policy]") {
  CHECK(Compressor<Lossy<16>>::param == 16);
  CHECK(ParallelAxis<PP>::name == "pp");
  CHECK(to_string(axis_id::tp) == "tp");
  CHECK(codec::to_string(codec::config::of<Compressor<Lossy<8>>, float>()) == "zfp:8");
}

TEST_CASE("policies: the engine runs on the host executor through the concept", "[policy]") {
  codec::engine<exec::host> eng;
  const float x[3] = {1, 2, 3};
  float y[3] = {};
  const auto c = codec::config::of<Compressor<Uncompressed>, float>();
  const auto frame = eng.compress(c, std::span<const float>(x));
  eng.decompress(std::span<const std::byte>(frame), std::span<float>(y));
  CHECK((y[0] == 1 && y[1] == 2 && y[2] == 3));
}

}  // namespace
