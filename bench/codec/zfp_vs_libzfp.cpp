// zfp_vs_libzfp: hcomm's ZFP kernels against libzfp's serial fixed-rate 1-D coder on the same
// array, interleaved (ours, then libzfp, in every repetition) and timed by thread CPU time,
// the minimum over the repetitions: on a shared machine this is steadier than separate
// benchmark rows. Also checks that the streams and the decoded values are identical.
//
//   zfp_vs_libzfp [smooth|noise] [RATE] [REPS] [MIB]     (defaults: noise 8 15 16)
//
// Data as bench_codecs: "smooth" = slow sines + 1e-4 noise, "noise" = Gaussian, sigma 1e-3.
// Runs the kernels directly (one thread, no frame, no checksum): the codec's own speed.
#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "hcomm/codec/zfp.hpp"

namespace {
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace hcomm::codec;
  const std::string data = argc > 1 ? argv[1] : "noise";
  const unsigned rate = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 8;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 15;
  const std::size_t mib = argc > 4 ? static_cast<std::size_t>(std::atoi(argv[4])) : 16;
  if ((data != "smooth" && data != "noise") || rate < 3 || rate > 32 || reps < 1 || mib < 1) {
    std::fprintf(stderr, "usage: zfp_vs_libzfp [smooth|noise] [RATE 3..32] [REPS] [MIB]\n");
    return 2;
  }
  const std::size_t n = mib << 18;  // floats
  std::vector<float> x(n), y(n), yref(n);
  std::mt19937_64 g(1234);
  std::normal_distribution<double> nd(0.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i);
    x[i] = data == "smooth" ? static_cast<float>(std::sin(t * 1e-4) + 0.5 * std::sin(t * 3.7e-3 + 1.0) +
                                                 0.25 * std::cos(t * 2.1e-2) + 1e-4 * nd(g))
                            : static_cast<float>(1e-3 * nd(g));
  }
  const unsigned mb = zfp_codec<float>::maxbits(rate);
  const std::size_t G = zfp_codec<float>::groups(n), W = zfp_codec<float>::stream_words(n, rate);
  std::vector<std::uint64_t> ours(W + 2), theirs(W + 64), counts(G + 1);
  double enc = 1e30, dec = 1e30, lenc = 1e30, ldec = 1e30;
  for (int r = 0; r < reps; ++r) {
    const zfp_detail::encode_group_kernel<float> ek{x.data(), n, mb, ours.data(), counts.data()};
    const zfp_detail::decode_group_kernel<float> dk{reinterpret_cast<const unsigned char*>(ours.data()), W, n, mb,
                                                    y.data()};
    double t0 = cpu_seconds();
    for (std::size_t i = 0; i < G; ++i) ek(i);
    double t1 = cpu_seconds();
    for (std::size_t i = 0; i < G; ++i) dk(i);
    double t2 = cpu_seconds();
    enc = std::min(enc, t1 - t0);
    dec = std::min(dec, t2 - t1);

    zfp_field* f = zfp_field_1d(x.data(), zfp_type_float, n);
    zfp_field* fo = zfp_field_1d(yref.data(), zfp_type_float, n);
    zfp_stream* z = zfp_stream_open(nullptr);
    zfp_stream_set_rate(z, rate, zfp_type_float, 1, zfp_false);
    bitstream* bs = stream_open(theirs.data(), theirs.size() * 8);
    zfp_stream_set_bit_stream(z, bs);
    t0 = cpu_seconds();
    zfp_compress(z, f);
    t1 = cpu_seconds();
    zfp_stream_rewind(z);
    zfp_decompress(z, fo);
    t2 = cpu_seconds();
    lenc = std::min(lenc, t1 - t0);
    ldec = std::min(ldec, t2 - t1);
    zfp_field_free(f);
    zfp_field_free(fo);
    stream_close(bs);
    zfp_stream_close(z);
  }
  const bool same = std::memcmp(ours.data(), theirs.data(), W * 8) == 0 &&
                    std::memcmp(y.data(), yref.data(), n * sizeof(float)) == 0;
  const double gb = static_cast<double>(n) * 4 / 1e9;
  std::printf(
      "{\"data\":\"%s\",\"rate\":%u,\"mib\":%zu,\"reps\":%d,\"hcomm_compress_gbs\":%.3f,\"hcomm_decompress_gbs\":%.3f,"
      "\"libzfp_compress_gbs\":%.3f,\"libzfp_decompress_gbs\":%.3f,\"compress_x\":%.2f,\"decompress_x\":%.2f,"
      "\"identical\":%s}\n",
      data.c_str(), rate, mib, reps, gb / enc, gb / dec, gb / lenc, gb / ldec, lenc / enc, ldec / dec,
      same ? "true" : "false");
  return same ? 0 : 1;
}
