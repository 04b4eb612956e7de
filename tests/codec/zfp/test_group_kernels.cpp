// The ZFP group kernels (codec/zfp/group_kernels.hpp): the dispatch between their AVX2
// variant and their portable body, and groups that code independently of how they are
// spread over threads.
#include <cstdlib>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/zfp/group_kernels.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/exec/host.hpp"
#include "zfp_test_util.hpp"

using namespace zfp_test;

// tests/codec/extra.cmake runs this case and the libzfp comparisons again with
// HCOMM_FORCE_PORTABLE=1: then the group kernels must take their portable bodies.
TEST_CASE("zfp group kernels take the portable path when forced", "[zfp]") {
  namespace zd = hcomm::codec::zfp_detail;
  const char* env = std::getenv("HCOMM_FORCE_PORTABLE");
  const bool forced = env != nullptr && env[0] == '1';
  INFO("HCOMM_FORCE_PORTABLE=" << (env ? env : "(unset)") << ", AVX2 tier "
                               << hcomm::cpu::host_features().avx2_tier());
  // The group kernels have AVX2 variants wherever they are built, and the dispatch skips
  // them exactly when the override is on (or the CPU lacks the tier).
  CHECK(hcomm::cpu::avx2_variant<zd::encode_group_kernel<float>>::available == bool(HCOMM_X86_VARIANTS));
  CHECK(hcomm::cpu::avx2_variant<zd::decode_group_kernel<float>>::available == bool(HCOMM_X86_VARIANTS));
  CHECK(hcomm::cpu::portable_forced() == forced);
  CHECK(hcomm::cpu::use_avx2() == (!forced && hcomm::cpu::host_features().avx2_tier()));
}

TEST_CASE("zfp output does not depend on the thread count", "[zfp]") {
  const auto x = make_data<float>(kind::noise, 300007, 3);
  auto y = x;
  y[5] = std::numeric_limits<float>::infinity();
  y[300000] = std::numeric_limits<float>::quiet_NaN();
  for (const std::vector<float>* v : {&x, const_cast<const std::vector<float>*>(&y)}) {
    const auto a = our_encode(*v, 8, hcomm::exec::host{1});
    const auto b = our_encode(*v, 8, hcomm::exec::host{2});
    const auto c = our_encode(*v, 8, hcomm::exec::host{7});
    REQUIRE(a.payload == b.payload);
    REQUIRE(a.payload == c.payload);
  }
}
