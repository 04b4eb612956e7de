// hcomm/core/cpu_features.hpp: the cached CPU check, the one override (force_portable and
// HCOMM_FORCE_PORTABLE) and the dispatch that every kernel with an AVX2 variant goes through:
// the override must really switch the path taken, for a probe kernel and for the library's
// own kernels (which register their variants where they are built).
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdlib>
#include <string>

#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/zfp.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "msparse/kernels/launch.hpp"

namespace {

// Records which body ran: 1 = portable, 2 = AVX2 variant.
struct probe_kernel {
  int* ran;
  void operator()(std::size_t i) const { hcomm::cpu::dispatch(*this, i); }
  void body(std::size_t) const { *ran = 1; }
};
// A kernel without a variant: always the portable body.
struct plain_kernel {
  int* ran;
  void operator()(std::size_t i) const { hcomm::cpu::dispatch(*this, i); }
  void body(std::size_t) const { *ran = 1; }
};

int ran_by(const probe_kernel& k) {
  *k.ran = 0;
  k(0);
  return *k.ran;
}

bool env_forced() {
  const char* v = std::getenv("HCOMM_FORCE_PORTABLE");
  return v != nullptr && v[0] == '1';
}

}  // namespace

template <>
struct hcomm::cpu::avx2_variant<probe_kernel> {
  static constexpr bool available = true;
  static void run(const probe_kernel& k, std::size_t) { *k.ran = 2; }
};

TEST_CASE("cpu: the AVX2 tier is AVX2, BMI2, FMA and POPCNT, detected once", "[cpu]") {
  const hcomm::cpu::features& f = hcomm::cpu::host_features();
  CHECK(&f == &hcomm::cpu::host_features());
  CHECK(f.avx2_tier() == (f.avx2 && f.bmi2 && f.fma && f.popcnt));
  const hcomm::cpu::features again = hcomm::cpu::detect();
  CHECK(again.avx2 == f.avx2);
  CHECK(again.bmi2 == f.bmi2);
  CHECK(again.fma == f.fma);
  CHECK(again.popcnt == f.popcnt);
  if (!HCOMM_X86_VARIANTS) CHECK_FALSE(f.avx2_tier());
  INFO("isa " << hcomm::cpu::isa_name());
  CHECK(hcomm::cpu::portable_forced() == env_forced());
  CHECK(hcomm::cpu::use_avx2() == (f.avx2_tier() && !env_forced()));
}

TEST_CASE("cpu: dispatch takes the AVX2 variant unless force_portable says otherwise", "[cpu]") {
  int ran = 0;
  const probe_kernel k{&ran};
  const bool avx2 = HCOMM_X86_VARIANTS && hcomm::cpu::host_features().avx2_tier() && !env_forced();
  CHECK(ran_by(k) == (avx2 ? 2 : 1));
  {
    const hcomm::cpu::force_portable guard;
    CHECK(hcomm::cpu::portable_forced());
    CHECK_FALSE(hcomm::cpu::use_avx2());
    CHECK(std::string(hcomm::cpu::isa_name()) == "portable");
    CHECK(ran_by(k) == 1);
    {
      const hcomm::cpu::force_portable nested;
      CHECK(ran_by(k) == 1);
    }
    CHECK(ran_by(k) == 1);  // the outer guard still holds
    const hcomm::cpu::force_portable off(false);
    CHECK(ran_by(k) == 1);
  }
  CHECK(ran_by(k) == (avx2 ? 2 : 1));  // back once the guards are gone
  {
    const hcomm::cpu::force_portable off(false);  // a guard that is off changes nothing
    CHECK(ran_by(k) == (avx2 ? 2 : 1));
  }
  int plain = 0;
  plain_kernel{&plain}(0);
  CHECK(plain == 1);
  if (HCOMM_X86_VARIANTS && hcomm::cpu::host_features().avx2_tier() && !env_forced())
    SUCCEED("this host ran both paths");
  else
    WARN("no AVX2 tier here (or HCOMM_FORCE_PORTABLE=1): only the portable path ran");
}

TEST_CASE("cpu: the library's kernels with AVX2 variants go through the one dispatch", "[cpu]") {
  namespace zd = hcomm::codec::zfp_detail;
  namespace md = hcomm::codec::mpc_detail;
  constexpr bool built = HCOMM_X86_VARIANTS;
  STATIC_REQUIRE(hcomm::cpu::avx2_variant<zd::encode_group_kernel<float>>::available == built);
  STATIC_REQUIRE(hcomm::cpu::avx2_variant<zd::decode_group_kernel<double>>::available == built);
  STATIC_REQUIRE(hcomm::cpu::avx2_variant<md::sample_dims_kernel<float>>::available == built);
  STATIC_REQUIRE(hcomm::cpu::avx2_variant<md::encode_chunk_kernel<double>>::available == built);
  STATIC_REQUIRE(hcomm::cpu::avx2_variant<md::gather_kernel<float>>::available == built);
  STATIC_REQUIRE(hcomm::cpu::avx2_variant<md::decode_chunk_kernel<float>>::available == built);
  STATIC_REQUIRE(hcomm::cpu::avx2_variant<hcomm::detail::bh::stripes>::available == built);
  // Kernels without one.
  STATIC_REQUIRE_FALSE(hcomm::cpu::avx2_variant<md::pick_dim_kernel>::available);
  STATIC_REQUIRE_FALSE(hcomm::cpu::avx2_variant<zd::patch_nonfinite_kernel<float>>::available);
  // msparse picks its runner with the same check.
  {
    const hcomm::cpu::force_portable guard;
    CHECK(std::string(msparse::kernels::host_isa()) == "baseline");
  }
  CHECK(std::string(msparse::kernels::host_isa()) == (hcomm::cpu::use_avx2() ? "avx2+fma" : "baseline"));
}
