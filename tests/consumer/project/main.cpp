// Consumer of the installed package: compresses and decompresses a buffer with each codec
// through the typed policies, checks the result, prints one line per codec and "OK".
#if __has_include(<hcomm/hcomm.hpp>)
#include <hcomm/hcomm.hpp>
#else
#include <hcomm/codec/codec.hpp>
#endif
#include <hcomm/core/config.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

template <class Policy>
static bool round_trip(hcomm::codec::engine<>& eng, const std::vector<float>& x, double max_abs_error) {
  const auto cfg = hcomm::codec::config::of<Policy, float>();
  const std::vector<std::byte> frame = eng.compress(cfg, std::span<const float>(x));
  std::vector<float> y(x.size());
  eng.decompress(std::span<const std::byte>(frame), std::span<float>(y));
  double err = 0;
  for (std::size_t i = 0; i < x.size(); ++i) err = std::fmax(err, std::fabs(double(x[i]) - double(y[i])));
  const bool exact = std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
  const bool ok = max_abs_error == 0 ? exact : err <= max_abs_error;
  std::printf("%-8s %zu -> %zu bytes, max abs error %g: %s\n", hcomm::codec::to_string(cfg).c_str(),
              x.size() * sizeof(float), frame.size(), err, ok ? "ok" : "WRONG");
  return ok;
}

int main() {
  std::vector<float> x(100000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(double(i) * 0.001) * 10.0);

  hcomm::codec::engine<> eng;  // host executor (OpenMP)
  bool ok = round_trip<hcomm::Compressor<hcomm::Uncompressed>>(eng, x, 0);
  ok = round_trip<hcomm::Compressor<hcomm::Lossless>>(eng, x, 0) && ok;
  ok = round_trip<hcomm::Compressor<hcomm::Lossy<16>>>(eng, x, 1e-2) && ok;

  // A corrupted frame must be refused with a typed error, not decoded.
  auto frame = eng.compress(hcomm::codec::config::of<hcomm::Compressor<hcomm::Lossless>, float>(),
                            std::span<const float>(x));
  frame[frame.size() / 2] ^= std::byte{1};
  std::vector<float> y(x.size());
  bool refused = false;
  try {
    eng.decompress(std::span<const std::byte>(frame), std::span<float>(y));
  } catch (const hcomm::error& e) {
    refused = e.code() == hcomm::errc::corrupt_frame;
  }
  std::printf("corrupted frame refused: %s\n", refused ? "yes" : "NO");
  std::printf("hcomm %d.%d.%d (cuda %d, kokkos %d, mpi %d): %s\n", HCOMM_VERSION_MAJOR, HCOMM_VERSION_MINOR,
              HCOMM_VERSION_PATCH, HCOMM_HAS_CUDA, HCOMM_HAS_KOKKOS, HCOMM_HAS_MPI, ok && refused ? "OK" : "FAILED");
  return ok && refused ? 0 : 1;
}
