// tests/core/cuda/cuda_backend.hpp: the CUDA side of the CUDA tests, as plain functions.
// cuda_backend.cu (nvcc) runs the shared probes (../exec_probes.hpp) and the codec engine on
// hcomm::exec::cuda; test_cuda.cpp (g++, Catch2) compares the results with the host
// executor. Keeping Catch2 out of nvcc keeps the CUDA compile small.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../exec_probes.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm_test::cuda_side {

int device_count(std::string* why);  // 0 with the reason when no device can be used
std::string device_name();

std::vector<std::uint64_t> scan(const std::vector<std::uint64_t>& in, bool in_place);
std::vector<std::uint64_t> for_each(std::size_t n);
std::vector<unsigned char> copy_fill(std::size_t n);
// Scan workspace bytes held by one executor after each of: scan(n_big), scan(n_big) again,
// scan(small), scan(n_big) — the workspace must be allocated once and never shrink.
std::vector<std::size_t> scan_workspace_sizes(std::size_t n_big);

outcome run_engine(const hcomm::codec::config& c, const void* host_in, std::size_t n);

// The collectives probe (../team_probes.hpp) as one team of `team` threads on the GPU.
std::vector<std::uint32_t> team_collectives(const std::vector<std::uint32_t>& in, int team);
// team.mma (../team_probes.hpp's mma_probe) as one team of `team` threads on the GPU's tensor
// cores: C from a, b (bfloat16 bits) and c.
std::vector<float> team_mma(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                            const std::vector<float>& c, const hcomm::exec::mma_shape& s, int team);
// Two streams: a kernel on stream A spins (bounded) until a kernel on stream B sets a flag,
// so it sees 1 only if the streams overlap; then B waits for an event recorded on A after A
// wrote n values and copies them. Returns {flag seen, mismatches of the copy}.
std::vector<std::uint64_t> two_streams(std::size_t n);

}  // namespace hcomm_test::cuda_side
