// bench_team: the team kernels (exec/team.hpp) on the host-fast backend against the flat
// host kernels that do the same work, side by side in one run: MPC float32 chunk encode and
// decode (flat: the AVX2 or portable chunk bodies), the payload checksum's block hashes
// (flat: the AVX2 stripes), the exclusive scan (flat: the serial loop). The team kernels are
// what device executors run; this says what running them on a CPU costs.
//
//   bench_team [MiB] [rounds] [threads]     (defaults: 16 5 1)
//
// One JSON line per (kernel, implementation, team size): best and median seconds of the
// rounds, GB/s of input. The implementations alternate within each round.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/mpc/team.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/scan_kernels.hpp"

namespace {

namespace exec = hcomm::exec;
namespace mpc = hcomm::codec::mpc_detail;

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct entry {
  std::string kernel, impl;
  int team;
  std::function<void()> run;
  std::vector<double> times;
};

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 16;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  if (mib == 0 || rounds <= 0 || threads <= 0) {
    std::fprintf(stderr, "usage: bench_team [MiB > 0] [rounds > 0] [threads > 0]\n");
    return 2;
  }
  const std::size_t n = mib * (1u << 20) / 4;
  const std::size_t bytes = n * 4;
  exec::host ex;
  ex.threads = threads;

  // Smooth data (what gradients and activations look like to MPC).
  std::vector<float> in(n);
  for (std::size_t i = 0; i < n; ++i)
    in[i] = std::sin(0.0007f * static_cast<float>(i)) * 3.f + 0.01f * std::cos(0.05f * static_cast<float>(i));
  const std::size_t chunks = mpc::chunk_count(n);
  using geo = mpc::geometry<std::uint32_t>;
  std::vector<std::uint32_t> slots(chunks * geo::slot_words);
  std::vector<std::uint64_t> sizes(chunks + 1), dim{1};

  // A packed payload and its offsets for the decoders.
  hcomm::codec::engine<exec::host> eng{ex};
  const auto frame = eng.compress(hcomm::codec::parse_config("mpc:1"), std::span<const float>(in));
  const auto* payload = reinterpret_cast<const unsigned char*>(frame.data()) + hcomm::codec::header_bytes;
  if (payload[0] != mpc::mode_mpc) {
    std::fprintf(stderr, "bench_team: the data compressed to a raw payload\n");
    return 1;
  }
  std::vector<std::uint64_t> offsets(chunks + 1, 0);
  for (std::size_t c = 0; c < chunks; ++c) {
    std::uint16_t e;
    std::memcpy(&e, payload + mpc::head_bytes + 2 * c, 2);
    offsets[c + 1] = offsets[c] + e;
  }
  std::vector<float> out(n);

  // Checksum input: the input's bytes; scan input: the chunk sizes, repeated to n / 64 words.
  const std::uint64_t size = bytes;
  const std::size_t blocks = hcomm::checksum_blocks(bytes);
  std::vector<std::uint64_t> hashes(blocks + 1);
  std::vector<std::uint64_t> counts(n / 64), scanned(n / 64 + 1), partial(n / 64 + 2);
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = i % 1000;

  const auto* raw = reinterpret_cast<const unsigned char*>(in.data());
  std::vector<entry> es;
  es.push_back({"mpc_encode_f32", "flat", 0, [&] {
                  ex.for_each(chunks, mpc::encode_chunk_kernel<float>{in.data(), n, dim.data(), slots.data(),
                                                                      sizes.data(), 0});
                }, {}});
  es.push_back({"mpc_decode_f32", "flat", 0, [&] {
                  ex.for_each(chunks, mpc::decode_chunk_kernel<float>{payload, n, chunks, 1, offsets.data(),
                                                                      out.data()});
                }, {}});
  es.push_back({"checksum_blocks", "flat", 0, [&] {
                  ex.for_each(blocks, hcomm::checksum_block_kernel{raw, &size, hashes.data(), blocks});
                }, {}});
  es.push_back({"exclusive_scan", "flat", 0, [&] { ex.exclusive_scan(counts.data(), scanned.data(), counts.size()); },
                {}});
  for (int team : {32, 256}) {
    es.push_back({"mpc_encode_f32", "team", team, [&, team] {
                    ex.launch(chunks, team, mpc::encode_chunk_team_f32{in.data(), n, dim.data(), slots.data(),
                                                                       sizes.data()});
                  }, {}});
    es.push_back({"mpc_decode_f32", "team", team, [&, team] {
                    ex.launch(chunks, team, mpc::decode_chunk_team_f32{payload, n, chunks, 1, offsets.data(),
                                                                       out.data()});
                  }, {}});
    es.push_back({"checksum_blocks", "team", team, [&, team] {
                    ex.launch(blocks, team, hcomm::checksum_block_team_kernel{raw, &size, hashes.data()});
                  }, {}});
    es.push_back({"exclusive_scan", "team", team, [&, team] {
                    exec::run_exclusive_scan(ex, counts.data(), scanned.data(), counts.size(), team, partial.data());
                  }, {}});
  }
  for (auto& e : es) e.run();  // warm-up: pages touched, caches and predictors primed
  for (int r = 0; r < rounds; ++r)
    for (auto& e : es) e.times.push_back(seconds(e.run));

  for (auto& e : es) {
    std::sort(e.times.begin(), e.times.end());
    const double best = e.times.front(), median = e.times[e.times.size() / 2];
    // Bytes of values coded or hashed (the scan: its 8-byte counts).
    const double in_bytes = static_cast<double>(e.kernel == "exclusive_scan" ? counts.size() * 8 : bytes);
    std::printf(
        "{\"kernel\":\"%s\",\"impl\":\"%s\",\"team\":%d,\"threads\":%d,\"mib\":%zu,\"rounds\":%d,"
        "\"best_s\":%.6f,\"median_s\":%.6f,\"gbps_best\":%.3f}\n",
        e.kernel.c_str(), e.impl.c_str(), e.team, threads, mib, rounds, best, median, in_bytes / best / 1e9);
  }
  return 0;
}
