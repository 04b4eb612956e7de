// hcomm/exec/team.hpp: team kernels, the cooperative level of the execution model.
//
// A team kernel is run by `ex.launch(league, team_size, k)`: `league` independent teams of
// `team_size` threads (a multiple of 32, 32..1024, at most K::max_team). Each team calls
// k(team) once; the body is team-level code (uniform: the same for every thread) that runs
// *phases* and *collectives*:
//
//   struct block_sum {                                        // one team per 1024 values
//     static constexpr int max_team = 1024;                   // compile-time bound
//     static constexpr const char* name = "block_sum";        // for error reports
//     const float* in;  float* out;
//     std::size_t scratch_bytes(int) const { return 0; }      // team-shared bytes it declares
//     template <class Team> HCOMM_HOST_DEVICE void operator()(Team& team) const {
//       auto v = team.template per_thread<float>();           // one value per thread
//       const std::size_t base = team.league_rank() * 1024;
//       team.for_threads([&](int t) {                         // phase: every thread once,
//         float s = 0;                                        //   then a barrier
//         for (int i = t; i < 1024; i += team.size()) s += in[base + i];
//         v[t] = s;
//       });
//       const float total = team.reduce(v, exec::sum{});      // collective, fixed order
//       team.for_threads([&](int t) { if (t == 0) out[team.league_rank()] = total; });
//     }
//   };
//   ex.launch(blocks, 256, block_sum{in, out});
//
// Rules (host-check enforces them; GPUs silently misbehave when they are broken):
//  - Inside a phase, thread t touches only its own per-thread state (v[t]) and team-shared
//    scratch (`team.template shared<T>(n)`); a scratch word written by one thread in a phase
//    is read by no other thread in that phase (write in one phase, read in the next), and no
//    two threads write the same word in one phase. Results of a phase leave it only through
//    scratch, per-thread state or global memory: captured locals are per thread on a GPU.
//  - Collectives (ballot, shuffle, reduce, scan, transpose, broadcast) are called by the team,
//    between phases, never inside a phase body; per-thread state is read between phases only
//    through them. They combine in a fixed order (below), so results never depend on timing.
//  - Team-level code may read scratch (a uniform value every thread reads), never write it.
//
// Collective semantics (identical on every backend, defined on 32-lane warps; lane = t % 32):
//  - ballot(p): every lane gets its warp's mask, bit l set when lane l's p is non-zero.
//  - shuffle(v, src): lane l gets v of lane src[l] (0..31) of its warp; shuffle_xor(v, m):
//    lane l gets v of lane l ^ m.  (CUDA wraps lanes >= 32; host-check reports them.)
//  - warp_reduce(v, op): every lane gets its warp's total, a tree: for o = 16, 8, 4, 2, 1,
//    lane l < o takes op(v[l], v[l + o]); lane 0's result.  reduce(v, op): op folded over
//    the warps' totals in warp order (uniform result).
//  - warp_inclusive_scan(v, op): for o = 1, 2, 4, 8, 16, lane l >= o takes op(v[l - o], v[l]).
//    inclusive_scan(v, op): the warp scans, each offset by op folded over the earlier warps'
//    totals in warp order. exclusive_scan(v, op, identity): thread t gets thread t-1's
//    inclusive value (thread 0 identity).
//  - transpose32(w): 32x32 bit transpose per warp: lane j's bit i = lane i's bit j.
//  - broadcast(v, t): thread t's value, to the team (uniform).
//  - mma(C, A, B, shape): a matrix product on tensor cores, from scratch to scratch:
//    C[m x n] = (shape.accumulate ? C : 0) + A[m x k] B[k x n], A and B bfloat16
//    (hcomm::bf16), C float, C row-major, A and B row-major or stored transposed (mma_shape).
//    m, n, k are multiples of 16 (mma_tile); the 16 x 16 tiles of C are shared out to the
//    warps (tile r * n/16 + c to warp (r * n/16 + c) % warps), each warp summing its tile over
//    k. Each product of two bfloat16 values is exact in float; the host backends add them one
//    by one in k order, tensor cores in their own order, so backends agree to float rounding
//    of the sums, not bit for bit. Each operand starts a multiple of 32 bytes into scratch
//    (scratch_for of the arrays before it adds up to one), leading dimensions are multiples of 8
//    (A, B) and 4 (C), and C overlaps neither A nor B (host-check reports any unwritten read,
//    and a C tile that overlaps what another warp reads). The CUDA backend runs it as WMMA
//    on sm_80 and newer.
//
// Backends: host (exec/host_team.hpp: a phase is a loop over the threads, teams in
// parallel over OpenMP), host_check (exec/host_check.hpp: tests only; shuffled thread order,
// a shadow of every scratch word), cuda (exec/cuda_team.hpp: a team is a thread block),
// kokkos (exec/kokkos_team.hpp: a TeamPolicy member, threads as vector lanes).
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::exec {

inline constexpr int warp_size = 32;
inline constexpr int max_team_threads = 1024;
// Team-shared scratch every backend accepts: the opt-in limit per block of the smallest GPU
// the CUDA build targets (sm_80, 163 KiB), less the 512 bytes the CUDA team keeps for its
// collectives (exec/cuda_team.hpp). Host backends refuse more, so that a kernel tested on the
// CPU also fits the GPU.
inline constexpr std::size_t max_team_scratch_bytes = 163 * 1024 - 512;

// What launch needs of a kernel (its call operator is a template over the team type, so it
// cannot be probed here; a wrong one fails to compile at launch).
template <class K>
concept team_kernel = requires(const K& k, int t) {
  { K::max_team } -> std::convertible_to<int>;
  { k.scratch_bytes(t) } -> std::convertible_to<std::size_t>;
};

namespace detail {
struct probe_team_kernel {
  static constexpr int max_team = 32;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team&) const {}
};
}  // namespace detail

// An executor that runs team kernels.
template <class E>
concept team_executor = requires(const E& e, std::size_t league, int team) {
  e.launch(league, team, detail::probe_team_kernel{});
};

// The shape of a team matrix product (team.mma): C[m x n] (+)= A[m x k] B[k x n]. A(i, p) is
// A[i * lda + p], or A[p * lda + i] when a_trans (A stored as its k x m transpose); B(p, j) is
// B[p * ldb + j], or B[j * ldb + p] when b_trans; C(i, j) is C[i * ldc + j].
struct mma_shape {
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
  bool a_trans = false, b_trans = false;
  bool accumulate = false;  // C += A B, else C = A B
};
inline constexpr int mma_tile = 16;
inline constexpr std::size_t mma_align = 32;  // bytes: WMMA's alignment of a tile's first element

// Why a shape cannot run (nullptr when it can): every backend refuses the same shapes.
HCOMM_HOST_DEVICE constexpr const char* mma_shape_error(const mma_shape& s) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.m % mma_tile || s.n % mma_tile || s.k % mma_tile)
    return "m, n and k must be positive multiples of 16";
  if (s.lda % 8 || s.ldb % 8 || s.ldc % 4) return "leading dimensions must be multiples of 8 (A, B) and 4 (C)";
  if (s.lda < (s.a_trans ? s.m : s.k) || s.ldb < (s.b_trans ? s.k : s.n) || s.ldc < s.n)
    return "a leading dimension is shorter than its matrix's row length";
  return nullptr;
}

// Combination operators for the collectives (usable in device code).
struct sum {
  template <class T>
  HCOMM_HOST_DEVICE T operator()(const T& a, const T& b) const { return static_cast<T>(a + b); }
};
struct max {
  template <class T>
  HCOMM_HOST_DEVICE T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
struct bit_or {
  template <class T>
  HCOMM_HOST_DEVICE T operator()(const T& a, const T& b) const { return static_cast<T>(a | b); }
};

// A plain view of T values (scratch on host and CUDA, per-thread arrays on host).
template <class T>
struct raw_view {
  T* data = nullptr;
  HCOMM_HOST_DEVICE T& operator[](std::size_t i) const { return data[i]; }
};

namespace detail {

template <class K>
constexpr const char* kernel_name() {
  if constexpr (requires { K::name; })
    return K::name;
  else
    return "(unnamed team kernel)";
}

template <class F>
constexpr void reject_team_kernel_in_for_each() {
  static_assert(!team_kernel<F>,
                "hcomm: this functor is a team kernel (it has max_team and scratch_bytes): run it with "
                "ex.launch(league, team_size, kernel), not ex.for_each");
}

// The checks every backend makes before a launch; throws hcomm::error(invalid_argument).
template <class K>
void check_team_launch(const char* backend, const K& k, int team_size, std::size_t scratch_limit) {
  static_assert(team_kernel<K>,
                "hcomm: launch takes a team kernel: static constexpr int max_team, std::size_t "
                "scratch_bytes(int team_size) const, template <class Team> void operator()(Team&) const");
  static_assert(K::max_team >= warp_size && K::max_team <= max_team_threads && K::max_team % warp_size == 0,
                "hcomm: a team kernel's max_team must be a multiple of 32 in 32..1024");
  const std::string who = std::string("hcomm: ") + backend + " launch of " + kernel_name<K>() + ": ";
  if (team_size < warp_size || team_size > K::max_team || team_size % warp_size != 0)
    fail(errc::invalid_argument, who + "team size " + std::to_string(team_size) +
                                     " is not a multiple of 32 in 32.." + std::to_string(K::max_team));
  const std::size_t bytes = k.scratch_bytes(team_size);
  if (bytes > scratch_limit)
    fail(errc::invalid_argument, who + std::to_string(bytes) + " bytes of team scratch exceed this backend's " +
                                     std::to_string(scratch_limit));
}

// Scratch is handed out in 16-byte steps (any element type the kernels use).
HCOMM_HOST_DEVICE constexpr std::size_t scratch_round(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

}  // namespace detail

// Bytes that `shared<T>(n)` takes from a team's scratch (kernels add these up in
// scratch_bytes, in the order they declare them).
template <class T>
HCOMM_HOST_DEVICE constexpr std::size_t scratch_for(std::size_t n) {
  return detail::scratch_round(n * sizeof(T));
}

}  // namespace hcomm::exec
