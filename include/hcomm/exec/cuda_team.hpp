// hcomm/exec/cuda_team.hpp: the team handle of the CUDA backend (exec/team.hpp). A team is
// a thread block; a phase is the body run by every thread of the block, then __syncthreads;
// per-thread state is a register value; scratch is the block's dynamic shared memory;
// collectives are warp intrinsics (__ballot_sync, __shfl_*_sync) plus a small static
// shared-memory area for the team-wide steps, in the combination order exec/team.hpp defines;
// mma is WMMA on the tensor cores.
//
// Misuse inside a kernel (scratch past what scratch_bytes() declared, a collective or
// shared()/per_thread() inside a phase) prints what happened, with block and thread, and
// traps: the stream reports an error at the next checked call (host-check names the kernel).
//
// CUDA code: compiled only by nvcc (hcomm/exec/cuda.hpp includes it).
#pragma once

#if !defined(__CUDACC__)
#error "hcomm/exec/cuda_team.hpp is CUDA code: compile it with nvcc (include hcomm/exec/exec.hpp instead)"
#else

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "hcomm/exec/team.hpp"

namespace hcomm::exec::detail {

// One value per thread: the thread's own register (the index is the thread's own by rule).
template <class T>
struct cuda_thread_value {
  T v;
  __device__ T& operator[](int) { return v; }
  __device__ const T& operator[](int) const { return v; }
};

// Values moved by shuffles travel as 32-bit words.
template <class T>
__device__ T shfl_value(const T& x, int src) {
  static_assert(std::is_trivially_copyable_v<T>, "hcomm: shuffled values must be trivially copyable");
  constexpr int words = (sizeof(T) + 3) / 4;
  std::uint32_t w[words] = {};
  std::memcpy(w, &x, sizeof(T));
  for (int i = 0; i < words; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], src);
  T out;
  std::memcpy(&out, w, sizeof(T));
  return out;
}

inline constexpr std::size_t cuda_collective_bytes = 32 * 16;  // one value per warp, values up to 16 bytes

class cuda_team {
 public:
  template <class T>
  using thread_view = cuda_thread_value<T>;

  __device__ cuda_team(std::size_t league, unsigned char* smem, std::size_t smem_bytes, unsigned char* coll)
      : league_(league), smem_(smem), smem_bytes_(smem_bytes), coll_(coll) {}

  __device__ void begin(std::size_t rank) {
    rank_ = rank;
    used_ = 0;
  }

  __device__ int size() const { return static_cast<int>(blockDim.x); }
  __device__ std::size_t league_rank() const { return rank_; }
  __device__ std::size_t league_size() const { return league_; }

  template <class F>
  __device__ void for_threads(F&& f) {
    check(!in_phase_, "for_threads inside a phase");
    in_phase_ = true;
    f(static_cast<int>(threadIdx.x));
    in_phase_ = false;
    __syncthreads();
  }

  template <class T>
  __device__ raw_view<T> shared(std::size_t n, const char* = "scratch") {
    check(!in_phase_, "shared() inside a phase");
    const std::size_t bytes = scratch_for<T>(n);
    check(used_ + bytes <= smem_bytes_, "declares more scratch than its scratch_bytes()");
    T* p = reinterpret_cast<T*>(smem_ + used_);
    used_ += bytes;
    return raw_view<T>{p};
  }

  template <class T>
  __device__ cuda_thread_value<T> per_thread() {
    check(!in_phase_, "per_thread() inside a phase");
    return cuda_thread_value<T>{};
  }

  // ---- collectives ----

  template <class T>
  __device__ cuda_thread_value<std::uint32_t> ballot(const cuda_thread_value<T>& p) {
    enter();
    return {__ballot_sync(0xffffffffu, p.v != T{})};
  }

  template <class T>
  __device__ cuda_thread_value<T> shuffle(const cuda_thread_value<T>& v, const cuda_thread_value<int>& src) {
    enter();
    return {shfl_value(v.v, src.v & 31)};
  }

  template <class T>
  __device__ cuda_thread_value<T> shuffle_xor(const cuda_thread_value<T>& v, int mask) {
    enter();
    return {shfl_value(v.v, (lane() ^ mask) & 31)};
  }

  template <class T, class Op>
  __device__ cuda_thread_value<T> warp_reduce(const cuda_thread_value<T>& v, Op op) {
    enter();
    return {warp_total(v.v, op)};
  }

  template <class T, class Op>
  __device__ T reduce(const cuda_thread_value<T>& v, Op op) {
    enter();
    static_assert(sizeof(T) <= 16, "hcomm: team collectives take values of up to 16 bytes");
    T* slot = reinterpret_cast<T*>(coll_);
    const T total = warp_total(v.v, op);
    if (lane() == 0) slot[warp()] = total;
    __syncthreads();
    T acc = slot[0];
    for (int w = 1; w < warps(); ++w) acc = op(acc, slot[w]);
    __syncthreads();  // the slots are free again
    return acc;
  }

  template <class T, class Op>
  __device__ cuda_thread_value<T> warp_inclusive_scan(const cuda_thread_value<T>& v, Op op) {
    enter();
    return {warp_scan(v.v, op)};
  }

  template <class T, class Op>
  __device__ cuda_thread_value<T> inclusive_scan(const cuda_thread_value<T>& v, Op op) {
    enter();
    T x = warp_scan(v.v, op);
    const T carry = warp_carry(x, op);
    return {warp() == 0 ? x : op(carry, x)};
  }

  template <class T, class Op>
  __device__ cuda_thread_value<T> exclusive_scan(const cuda_thread_value<T>& v, Op op, T identity) {
    enter();
    const T x = warp_scan(v.v, op);
    const T carry = warp_carry(x, op);
    const T before = shfl_value(x, lane() > 0 ? lane() - 1 : 0);  // this warp's inclusive value of lane - 1
    if (lane() == 0) return {warp() == 0 ? identity : carry};
    return {warp() == 0 ? before : op(carry, before)};
  }

  __device__ cuda_thread_value<std::uint32_t> transpose32(const cuda_thread_value<std::uint32_t>& v) {
    enter();
    std::uint32_t out = 0;
    for (int j = 0; j < 32; ++j) {
      const std::uint32_t b = __ballot_sync(0xffffffffu, (v.v >> j) & 1u);
      if (lane() == j) out = b;
    }
    return {out};
  }

  template <class T>
  __device__ T broadcast(const cuda_thread_value<T>& v, int t) {
    enter();
    static_assert(sizeof(T) <= 16, "hcomm: team collectives take values of up to 16 bytes");
    T* slot = reinterpret_cast<T*>(coll_);
    if (static_cast<int>(threadIdx.x) == t) slot[0] = v.v;
    __syncthreads();
    const T out = slot[0];
    __syncthreads();
    return out;
  }

  // The tensor-core product (exec/team.hpp): WMMA 16x16x16 tiles, bfloat16 operands and float
  // accumulators, warp w taking the tiles w, w + warps, ... of C; a barrier after.
  template <class VC, class VA, class VB>
  __device__ void mma(const VC& C, const VA& A, const VB& B, const mma_shape& s) {
    enter();
    check(mma_shape_error(s) == nullptr, "mma: a shape exec/team.hpp's mma_shape_error refuses");
    check(aligned(C.data) && aligned(A.data) && aligned(B.data), "mma: an operand not 32-byte aligned");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const auto* a = reinterpret_cast<const __nv_bfloat16*>(A.data);
    const auto* b = reinterpret_cast<const __nv_bfloat16*>(B.data);
    using nvcuda::wmma::col_major;
    using nvcuda::wmma::row_major;
    const int tn = s.n / mma_tile, tiles = s.m / mma_tile * tn;
    for (int r = warp(); r < tiles; r += warps()) {
      const int i0 = r / tn * mma_tile, j0 = r % tn * mma_tile;
      if (!s.a_trans && !s.b_trans) mma_tile_sum<row_major, row_major>(C.data, a, b, s, i0, j0);
      else if (!s.a_trans) mma_tile_sum<row_major, col_major>(C.data, a, b, s, i0, j0);
      else if (!s.b_trans) mma_tile_sum<col_major, row_major>(C.data, a, b, s, i0, j0);
      else mma_tile_sum<col_major, col_major>(C.data, a, b, s, i0, j0);
    }
#else
    check(false, "mma: tensor cores need sm_80 or newer");
#endif
    __syncthreads();
  }

 private:
  __device__ int lane() const { return static_cast<int>(threadIdx.x) & 31; }
  __device__ int warp() const { return static_cast<int>(threadIdx.x) >> 5; }
  __device__ int warps() const { return static_cast<int>(blockDim.x) >> 5; }

  __device__ void check(bool ok, const char* what) const {
    if (!ok) {
      printf("hcomm: cuda team kernel, block %d thread %d: %s\n", static_cast<int>(blockIdx.x),
             static_cast<int>(threadIdx.x), what);
      __trap();
    }
  }
  __device__ void enter() const { check(!in_phase_, "a collective inside a phase"); }
  __device__ static bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % mma_align == 0; }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // One warp: the 16x16 tile of C at (i0, j0), summed over k in steps of 16. A row-major A is
  // WMMA's row_major matrix_a, a transposed one its col_major (the same for B).
  template <class LA, class LB>
  __device__ static void mma_tile_sum(float* C, const __nv_bfloat16* A, const __nv_bfloat16* B, const mma_shape& s,
                                      int i0, int j0) {
    namespace wmma = nvcuda::wmma;
    constexpr bool a_row = std::is_same_v<LA, wmma::row_major>, b_row = std::is_same_v<LB, wmma::row_major>;
    wmma::fragment<wmma::accumulator, mma_tile, mma_tile, mma_tile, float> acc;
    wmma::fragment<wmma::matrix_a, mma_tile, mma_tile, mma_tile, __nv_bfloat16, LA> fa;
    wmma::fragment<wmma::matrix_b, mma_tile, mma_tile, mma_tile, __nv_bfloat16, LB> fb;
    float* c = C + static_cast<std::size_t>(i0) * s.ldc + j0;
    if (s.accumulate)
      wmma::load_matrix_sync(acc, c, static_cast<unsigned>(s.ldc), wmma::mem_row_major);
    else
      wmma::fill_fragment(acc, 0.f);
    for (int p = 0; p < s.k; p += mma_tile) {
      const __nv_bfloat16* a = a_row ? A + static_cast<std::size_t>(i0) * s.lda + p : A + static_cast<std::size_t>(p) * s.lda + i0;
      const __nv_bfloat16* b = b_row ? B + static_cast<std::size_t>(p) * s.ldb + j0 : B + static_cast<std::size_t>(j0) * s.ldb + p;
      wmma::load_matrix_sync(fa, a, static_cast<unsigned>(s.lda));
      wmma::load_matrix_sync(fb, b, static_cast<unsigned>(s.ldb));
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c, acc, static_cast<unsigned>(s.ldc), wmma::mem_row_major);
  }
#endif

  // The tree of exec/team.hpp: for o = 16 .. 1, lane l < o takes op(v[l], v[l + o]); lane 0's
  // result to every lane.
  template <class T, class Op>
  __device__ T warp_total(T x, Op op) const {
    for (int o = 16; o > 0; o /= 2) {
      const T other = shfl_value(x, (lane() + o) & 31);
      if (lane() < o) x = op(x, other);
    }
    return shfl_value(x, 0);
  }
  template <class T, class Op>
  __device__ T warp_scan(T x, Op op) const {
    for (int o = 1; o < 32; o *= 2) {
      const T other = shfl_value(x, lane() >= o ? lane() - o : lane());
      if (lane() >= o) x = op(other, x);
    }
    return x;
  }
  // op folded over the totals (last lanes' inclusive values) of the warps before this one.
  template <class T, class Op>
  __device__ T warp_carry(const T& inclusive, Op op) const {
    static_assert(sizeof(T) <= 16, "hcomm: team collectives take values of up to 16 bytes");
    T* slot = reinterpret_cast<T*>(coll_);
    if (lane() == 31) slot[warp()] = inclusive;
    __syncthreads();
    T carry = slot[0];
    for (int w = 1; w < warp(); ++w) carry = op(carry, slot[w]);
    __syncthreads();
    return carry;
  }

  std::size_t league_, rank_ = 0;
  unsigned char* smem_;
  std::size_t smem_bytes_, used_ = 0;
  unsigned char* coll_;
  bool in_phase_ = false;
};

// The grid: blocks take teams league-strided; the barrier between teams keeps a team's
// team-level scratch reads apart from the next team's first writes.
template <class K>
__global__ void cuda_team_kernel(std::size_t league, std::size_t smem_bytes, K k) {
  extern __shared__ __align__(128) unsigned char hcomm_team_smem[];
  __shared__ __align__(16) unsigned char hcomm_team_coll[cuda_collective_bytes];
  cuda_team team(league, hcomm_team_smem, smem_bytes, hcomm_team_coll);
  for (std::size_t r = blockIdx.x; r < league; r += gridDim.x) {
    team.begin(r);
    k(team);
    __syncthreads();
  }
}

}  // namespace hcomm::exec::detail

#endif  // __CUDACC__
