// Frames committed in tests/core/data/ (written by the host path before the codecs had team
// kernels) must come out byte for byte on every executor: the host engine, and host-check,
// which runs the device code paths (team kernels for MPC float chunks, the checksum and the
// scan). Set HCOMM_WRITE_GOLDEN=1 to rewrite the files, only for a deliberate format change.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "exec_probes.hpp"
#include "hcomm/codec/codec.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_check.hpp"

#ifndef HCOMM_GOLDEN_DIR
#error "HCOMM_GOLDEN_DIR must name tests/core/data"
#endif

namespace {

namespace codec = hcomm::codec;
namespace exec = hcomm::exec;

template <class T>
std::vector<T> golden_input(int kind, std::size_t n) {
  std::vector<T> v(n);
  std::mt19937_64 g(static_cast<std::uint64_t>(kind) * 1000003u + n);
  for (std::size_t i = 0; i < n; ++i) {
    if (kind == 0) {
      v[i] = static_cast<T>(std::sin(0.003 * static_cast<double>(i)) * 50.0 + 0.25 * static_cast<double>(i % 5));
    } else if (kind == 1) {
      v[i] = static_cast<T>(std::ldexp(static_cast<double>(g() % 100000) - 50000.0, -10));
    } else {
      const std::uint64_t w = g();  // any bit pattern: NaN payloads, Inf, subnormals
      std::memcpy(&v[i], &w, sizeof(T));
    }
  }
  return v;
}

struct golden_case {
  const char* file;
  const char* config;
  hcomm::dtype type;
  int kind;
  std::size_t n;
};
const golden_case golden_cases[] = {
    {"mpc_auto_f32_smooth.frame", "mpc", hcomm::dtype::f32, 0, 2500},
    {"mpc_1_f32_steps.frame", "mpc:1", hcomm::dtype::f32, 1, 2100},
    {"mpc_3_f32_smooth.frame", "mpc:3", hcomm::dtype::f32, 0, 3071},
    {"mpc_1_f32_bits.frame", "mpc:1", hcomm::dtype::f32, 2, 1500},
    {"mpc_auto_f64_smooth.frame", "mpc", hcomm::dtype::f64, 0, 1800},
    {"zfp_8_f32_smooth.frame", "zfp:8", hcomm::dtype::f32, 0, 2000},
    {"zfp_16_f64_steps.frame", "zfp:16", hcomm::dtype::f64, 1, 1000},
    // the baselines; kind 2 (any bit pattern) takes NaN payloads, Inf and subnormals through
    // bf16's rounding and int8's side list
    {"bf16_f32_bits.frame", "bf16", hcomm::dtype::f32, 2, 1500},
    {"bf16_f64_smooth.frame", "bf16", hcomm::dtype::f64, 0, 1200},
    {"int8_256_f32_smooth.frame", "int8:256", hcomm::dtype::f32, 0, 2000},
    {"int8_64_f32_bits.frame", "int8:64", hcomm::dtype::f32, 2, 1100},
    {"int8_32_f64_steps.frame", "int8:32", hcomm::dtype::f64, 1, 1000},
};

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

template <class Exec, class T>
hcomm_test::outcome frame_on(const Exec& ex, const codec::config& c, const std::vector<T>& v) {
  codec::engine<Exec> eng{ex};
  return hcomm_test::run_engine(eng, c, v.data(), v.size());
}

template <class T>
void check_case(const golden_case& gc) {
  const auto v = golden_input<T>(gc.kind, gc.n);
  const codec::config c = codec::parse_config(gc.config, gc.type);
  const std::string path = std::string(HCOMM_GOLDEN_DIR) + "/" + gc.file;
  exec::host one;
  one.threads = 1;
  const auto host = frame_on(one, c, v);
  REQUIRE(host.ok);
  if (std::getenv("HCOMM_WRITE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(host.frame.data()), static_cast<std::streamsize>(host.frame.size()));
    WARN("wrote " << path);
  }
  const auto golden = read_file(path);
  REQUIRE(!golden.empty());
  CHECK(host.frame == golden);
  exec::host two;
  two.threads = 2;
  CHECK(frame_on(two, c, v).frame == golden);
  for (std::uint64_t seed : {1u, 77u}) {
    const auto checked = frame_on(exec::host_check{seed}, c, v);
    REQUIRE(checked.ok);
    CHECK(checked.frame == golden);
    CHECK(checked.decoded == host.decoded);
  }
}

TEST_CASE("committed frames come out byte for byte on host and host-check", "[golden][codec]") {
  for (const auto& gc : golden_cases) {
    INFO(gc.file);
    if (gc.type == hcomm::dtype::f32)
      check_case<float>(gc);
    else
      check_case<double>(gc);
  }
}

}  // namespace
