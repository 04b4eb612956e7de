// Schemes map each axis to the compressor the paper specifies (compile time), communicators
// offer exactly their axis' operations (requires-clauses, checked as concepts), and the
// runtime registry finds schemes by name and lists them when a name is unknown.
#include <catch2/catch.hpp>

#include <span>
#include <string>
#include <type_traits>

#include "hcomm/comm/bundle.hpp"
#include "hcomm/comm/registry.hpp"

using namespace hcomm;
template <class S, class A>
using comp = typename S::template compressor<A>;

// --- scheme mapping ---
static_assert(std::is_same_v<comp<scheme::none, DP>, Compressor<Uncompressed>>);
static_assert(std::is_same_v<comp<scheme::none, PP>, Compressor<Uncompressed>>);
static_assert(std::is_same_v<comp<scheme::none, TP>, Compressor<Uncompressed>>);
static_assert(std::is_same_v<comp<scheme::naive<8>, DP>, Compressor<Lossy<8>>>);
static_assert(std::is_same_v<comp<scheme::naive<8>, PP>, Compressor<Lossy<8>>>);
static_assert(std::is_same_v<comp<scheme::naive<8>, TP>, Compressor<Lossy<8>>>);
static_assert(std::is_same_v<comp<scheme::mzhybrid<4>, DP>, Compressor<Lossy<4>>>);
static_assert(std::is_same_v<comp<scheme::mzhybrid<4>, PP>, Compressor<Lossless>>);
static_assert(std::is_same_v<comp<scheme::mzhybrid<4>, TP>, Compressor<Lossless>>);
static_assert(std::is_same_v<comp<scheme::zhybrid<16, 8>, DP>, Compressor<Lossy<8>>>);
static_assert(std::is_same_v<comp<scheme::zhybrid<16, 8>, PP>, Compressor<Lossy<16>>>);
static_assert(std::is_same_v<comp<scheme::zhybrid<16, 8>, TP>, Compressor<Lossy<16>>>);
// the baselines: bf16 on every axis; int8 on DP with PP/TP in bf16
static_assert(std::is_same_v<comp<scheme::bf16, DP>, Compressor<Cast<BF16>>>);
static_assert(std::is_same_v<comp<scheme::bf16, PP>, Compressor<Cast<BF16>>>);
static_assert(std::is_same_v<comp<scheme::bf16, TP>, Compressor<Cast<BF16>>>);
static_assert(std::is_same_v<comp<scheme::int8<256>, DP>, Compressor<Int8<256>>>);
static_assert(std::is_same_v<comp<scheme::int8<256>, PP>, Compressor<Cast<BF16>>>);
static_assert(std::is_same_v<comp<scheme::int8<256>, TP>, Compressor<Cast<BF16>>>);
using qb = bundle<scheme::with_error_feedback<scheme::int8<256>>>;
static_assert(qb::dp_comm::error_feedback && !qb::pp_comm::error_feedback && !qb::tp_comm::error_feedback);
static_assert(qb::dp_comm::config() == codec::config{codec_id::int8, dtype::f32, 256, true});
static_assert(qb::tp_comm::config() == codec::config{codec_id::bf16, dtype::f32, 0, true});
static_assert(!scheme::zhybrid<16, 8>::error_feedback);
static_assert(scheme::with_error_feedback<scheme::zhybrid<16, 8>>::error_feedback);
static_assert(scheme::scheme_policy<scheme::mzhybrid<8>> && !scheme::scheme_policy<int> &&
              !scheme::scheme_policy<Compressor<Lossless>>);

// --- bundle types follow the scheme; error feedback lands on DP only ---
using zb = bundle<scheme::with_error_feedback<scheme::zhybrid<16, 6>>>;
static_assert(zb::dp_comm::error_feedback && !zb::pp_comm::error_feedback && !zb::tp_comm::error_feedback);
static_assert(std::is_same_v<zb::dp_comm::compressor, Compressor<Lossy<6>>>);
static_assert(std::is_same_v<zb::pp_comm::axis, ParallelAxis<PP>>);
static_assert(bundle<scheme::mzhybrid<8>>::tp_comm::config() ==
              codec::config{codec_id::mpc, dtype::f32, 0, true});
static_assert(bundle<scheme::mzhybrid<8>>::dp_comm::config() ==
              codec::config{codec_id::zfp, dtype::f32, 8, true});

// --- policies in any order, defaults for missing slots ---
static_assert(std::is_same_v<communicator<Compressor<Lossy<8>>, ParallelAxis<DP>>::compressor, Compressor<Lossy<8>>>);
static_assert(std::is_same_v<communicator<ParallelAxis<TP>>::compressor, Compressor<Uncompressed>>);
static_assert(communicator<ErrorFeedback, ParallelAxis<DP>, Compressor<Lossy<6>>>::error_feedback);

// --- what each axis offers (negative cases as concepts; hard errors are in neg/*.cpp) ---
template <class C>
concept can_send = requires(C& c, std::span<const float> x) { c.send(x, 0, 0); };
template <class C>
concept can_isend = requires(C& c, std::span<const double> x) { c.isend(x, 0, 0); };
template <class C>
concept can_allreduce = requires(C& c, std::span<float> x) { c.allreduce(x); };
template <class C>
concept can_allgather = requires(C& c, std::span<const float> a, std::span<float> b) { c.allgather(a, b); };
template <class C>
concept can_reduce_scatter = requires(C& c, std::span<const float> a, std::span<float> b) { c.reduce_scatter(a, b); };
template <class C>
concept can_broadcast = requires(C& c, std::span<float> x) { c.broadcast(x, 0); };
template <class C>
concept has_residual = requires(C& c) { c.template residual<float>(); };

using dpc = communicator<ParallelAxis<DP>, Compressor<Lossy<8>>>;
using ppc = communicator<ParallelAxis<PP>, Compressor<Lossless>>;
using tpc = communicator<ParallelAxis<TP>, Compressor<Lossy<16>>>;
static_assert(can_send<ppc> && can_isend<ppc> && !can_allreduce<ppc> && !can_allgather<ppc> && !can_broadcast<ppc>);
static_assert(!can_send<tpc> && can_allreduce<tpc> && can_allgather<tpc> && can_reduce_scatter<tpc> &&
              !can_broadcast<tpc>);
static_assert(!can_send<dpc> && !can_isend<dpc> && can_allreduce<dpc> && can_allgather<dpc> &&
              can_reduce_scatter<dpc> && can_broadcast<dpc>);
static_assert(!has_residual<dpc> && has_residual<communicator<ParallelAxis<DP>, Compressor<Lossy<8>>, ErrorFeedback>>);

TEST_CASE("scheme names", "[comm][scheme]") {
  CHECK(scheme::none::name() == "none");
  CHECK(scheme::naive<8>::name() == "naive:8");
  CHECK(scheme::mzhybrid<4>::name() == "mzhybrid:4");
  CHECK(scheme::zhybrid<16, 8>::name() == "zhybrid:16,8");
  CHECK(scheme::with_error_feedback<scheme::naive<8>>::name() == "naive:8+ef");
  CHECK(scheme::bf16::name() == "bf16");
  CHECK(scheme::int8<256>::name() == "int8:256");
  CHECK(scheme::with_error_feedback<scheme::int8<256>>::name() == "int8:256+ef");
}

TEST_CASE("registry dispatches by name", "[comm][registry]") {
  const int rate = dispatch_scheme("zhybrid:16,8", []<class S>() {
    return static_cast<int>(S::template compressor<DP>::param) * 100 +
           static_cast<int>(S::template compressor<TP>::param);
  });
  CHECK(rate == 816);
  std::string seen;
  dispatch_scheme("mzhybrid:8", [&]<class S>() { seen = S::name(); });
  CHECK(seen == "mzhybrid:8");
  for (const auto& n : scheme_names()) {
    std::string back;
    dispatch_scheme(n, [&]<class S>() { back = S::name(); });
    CHECK(back == n);
  }
  CHECK(has_scheme("naive:8", default_schemes{}));
  CHECK_FALSE(has_scheme("naive:9", default_schemes{}));
  CHECK(has_scheme("zhybrid:16,8"));  // the default list without naming it
  CHECK((has_scheme("bf16") && has_scheme("int8:256") && has_scheme("int8:256+ef")));  // train_gpt --scheme
  CHECK_FALSE(has_scheme("zhybrid:16,9"));
  // A custom list instantiates only its own variants.
  using mine = scheme_list<scheme::naive<12>, scheme::zhybrid<20, 10>>;
  std::string got;
  dispatch_scheme("zhybrid:20,10", [&]<class S>() { got = S::name(); }, mine{});
  CHECK(got == "zhybrid:20,10");
}

TEST_CASE("registry: unknown names list the registered ones", "[comm][registry]") {
  try {
    dispatch_scheme("zhybrid:16,9", []<class S>() {});
    FAIL("no error");
  } catch (const hcomm::error& e) {
    CHECK(e.code() == errc::invalid_argument);
    const std::string w = e.what();
    CHECK(w.find("unknown scheme 'zhybrid:16,9'") != std::string::npos);
    CHECK(w.find("registered: none, naive:4, naive:8") != std::string::npos);
    CHECK(w.find("zhybrid:16,8") != std::string::npos);
  }
}
