// msparse/kernels/simd.hpp: f8, eight floats of consecutive tokens, the unit the sparse
// kernels compute in.
//
//   f8 acc = load8(x);  acc += w * load8(x + 8);  store8(y, acc);
//
// On the host it is a GCC vector type: variables (not arrays) stay in registers, and inside
// the AVX2 runner (avx2/runner.hpp) each f8 operation is one AVX instruction (a plain SSE2
// build splits it in two). In CUDA device code it is a struct of eight floats with the
// same operators, so a kernel body written with f8 compiles unchanged for the GPU (define
// MSPARSE_F8_FORCE_STRUCT to run that form on the host, as one test does).
// Helpers take references: passing vector types by value in a non-AVX function changes the
// ABI (GCC's -Wpsabi note).
#pragma once
#include <cstring>

#include "hcomm/core/macros.hpp"

#if defined(MSPARSE_F8_FORCE_STRUCT) || defined(__CUDACC__) || !(defined(__GNUC__) || defined(__clang__))
#define MSPARSE_F8_STRUCT 1
#else
#define MSPARSE_F8_STRUCT 0
#endif

#if defined(__CUDACC__)
#define MSPARSE_UNROLL _Pragma("unroll")
#elif defined(__clang__)
#define MSPARSE_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define MSPARSE_UNROLL _Pragma("GCC unroll 16")
#else
#define MSPARSE_UNROLL
#endif

namespace msparse::kernels {

// Hint: bring the cache line holding p into L1 (no-op in device code).
HCOMM_HOST_DEVICE void prefetch_l1(const void* p) {
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_prefetch(p, 0, 3);
#else
  (void)p;
#endif
}

#if MSPARSE_F8_STRUCT
struct f8 {
  float v[8];
  HCOMM_HOST_DEVICE f8& operator+=(const f8& o) {
    for (int i = 0; i < 8; ++i) v[i] += o.v[i];
    return *this;
  }
  HCOMM_HOST_DEVICE float operator[](int i) const { return v[i]; }
};
HCOMM_HOST_DEVICE f8 operator+(const f8& a, const f8& b) {
  f8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] + b.v[i];
  return r;
}
HCOMM_HOST_DEVICE f8 operator*(const f8& a, const f8& b) {
  f8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] * b.v[i];
  return r;
}
HCOMM_HOST_DEVICE f8 operator*(float a, const f8& b) {
  f8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = a * b.v[i];
  return r;
}
HCOMM_HOST_DEVICE void load8(f8& r, const float* p) {
  for (int i = 0; i < 8; ++i) r.v[i] = p[i];
}
HCOMM_HOST_DEVICE void store8(float* p, const f8& a) {
  for (int i = 0; i < 8; ++i) p[i] = a.v[i];
}
HCOMM_HOST_DEVICE void splat8(f8& r, float s) {
  for (int i = 0; i < 8; ++i) r.v[i] = s;
}
// acc += a * b, fused on the device.
HCOMM_HOST_DEVICE void fma8(f8& acc, float a, const f8& b) {
#if defined(__CUDA_ARCH__)
  for (int i = 0; i < 8; ++i) acc.v[i] = fmaf(a, b.v[i], acc.v[i]);
#else
  for (int i = 0; i < 8; ++i) acc.v[i] += a * b.v[i];
#endif
}
HCOMM_HOST_DEVICE void fma8(f8& acc, const f8& a, const f8& b) {
#if defined(__CUDA_ARCH__)
  for (int i = 0; i < 8; ++i) acc.v[i] = fmaf(a.v[i], b.v[i], acc.v[i]);
#else
  for (int i = 0; i < 8; ++i) acc.v[i] += a.v[i] * b.v[i];
#endif
}
// r[i][j] <-> r[j][i]
HCOMM_HOST_DEVICE void transpose8x8(f8* r) {
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) {
      const float t = r[i].v[j];
      r[i].v[j] = r[j].v[i];
      r[j].v[i] = t;
    }
}
// lanes 0..3 of r = sums of lanes of a[0..3]
HCOMM_HOST_DEVICE void reduce4x8(f8& r, const f8* a) {
  for (int i = 0; i < 4; ++i)
    r.v[i] = ((a[i].v[0] + a[i].v[4]) + (a[i].v[2] + a[i].v[6])) + ((a[i].v[1] + a[i].v[5]) + (a[i].v[3] + a[i].v[7]));
  for (int i = 4; i < 8; ++i) r.v[i] = 0.0f;
}
// p[0..3] += lanes 0..3 of s.
HCOMM_HOST_DEVICE void add4(float* p, const f8& s) {
  for (int i = 0; i < 4; ++i) p[i] += s.v[i];
}
// r[i] = sum of lanes of a[i], i = 0..7.
HCOMM_HOST_DEVICE void reduce8x8(f8& r, const f8* a) {
  for (int i = 0; i < 8; ++i)
    r.v[i] = ((a[i].v[0] + a[i].v[4]) + (a[i].v[2] + a[i].v[6])) + ((a[i].v[1] + a[i].v[5]) + (a[i].v[3] + a[i].v[7]));
}
#else
typedef float f8 __attribute__((vector_size(32), aligned(4)));
typedef int i8_ __attribute__((vector_size(32)));
// Unaligned, may-alias vector access: one 256-bit move (GCC may expand a 32-byte memcpy into
// two 128-bit moves, and a 256-bit reload of two 128-bit stores to the stack stalls store
// forwarding).
typedef float f8u_ __attribute__((vector_size(32), aligned(4), may_alias));
HCOMM_FORCEINLINE void load8(f8& r, const float* p) { r = *reinterpret_cast<const f8u_*>(p); }
HCOMM_FORCEINLINE void store8(float* p, const f8& a) { *reinterpret_cast<f8u_*>(p) = a; }
HCOMM_FORCEINLINE void splat8(f8& r, float s) { r = f8{s, s, s, s, s, s, s, s}; }
HCOMM_FORCEINLINE void fma8(f8& acc, float a, const f8& b) { acc += a * b; }
HCOMM_FORCEINLINE void fma8(f8& acc, const f8& a, const f8& b) { acc += a * b; }
// r[i][j] <-> r[j][i]: unpack, 64-bit interleave, 128-bit lane swap (24 shuffles).
HCOMM_FORCEINLINE void transpose8x8(f8* r) {
  const i8_ lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
  const i8_ lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
  const i8_ lo4 = {0, 1, 2, 3, 8, 9, 10, 11}, hi4 = {4, 5, 6, 7, 12, 13, 14, 15};
  const f8 t0 = __builtin_shuffle(r[0], r[1], lo), t1 = __builtin_shuffle(r[0], r[1], hi);
  const f8 t2 = __builtin_shuffle(r[2], r[3], lo), t3 = __builtin_shuffle(r[2], r[3], hi);
  const f8 t4 = __builtin_shuffle(r[4], r[5], lo), t5 = __builtin_shuffle(r[4], r[5], hi);
  const f8 t6 = __builtin_shuffle(r[6], r[7], lo), t7 = __builtin_shuffle(r[6], r[7], hi);
  const f8 u0 = __builtin_shuffle(t0, t2, lo2), u1 = __builtin_shuffle(t0, t2, hi2);
  const f8 u2 = __builtin_shuffle(t1, t3, lo2), u3 = __builtin_shuffle(t1, t3, hi2);
  const f8 u4 = __builtin_shuffle(t4, t6, lo2), u5 = __builtin_shuffle(t4, t6, hi2);
  const f8 u6 = __builtin_shuffle(t5, t7, lo2), u7 = __builtin_shuffle(t5, t7, hi2);
  r[0] = __builtin_shuffle(u0, u4, lo4);
  r[4] = __builtin_shuffle(u0, u4, hi4);
  r[1] = __builtin_shuffle(u1, u5, lo4);
  r[5] = __builtin_shuffle(u1, u5, hi4);
  r[2] = __builtin_shuffle(u2, u6, lo4);
  r[6] = __builtin_shuffle(u2, u6, hi4);
  r[3] = __builtin_shuffle(u3, u7, lo4);
  r[7] = __builtin_shuffle(u3, u7, hi4);
}
// lanes 0..3 of r = sums of lanes of a[0..3] (lanes 4..7 unspecified).
HCOMM_FORCEINLINE void reduce4x8(f8& r, const f8* a) {
  const i8_ lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
  const i8_ lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
  const i8_ up = {4, 5, 6, 7, 4, 5, 6, 7};
  const f8 u0 = __builtin_shuffle(a[0], a[1], lo) + __builtin_shuffle(a[0], a[1], hi);
  const f8 u1 = __builtin_shuffle(a[2], a[3], lo) + __builtin_shuffle(a[2], a[3], hi);
  const f8 w = __builtin_shuffle(u0, u1, lo2) + __builtin_shuffle(u0, u1, hi2);
  r = w + __builtin_shuffle(w, up);
}
// p[0..3] += lanes 0..3 of s (one 128-bit load, add, store).
HCOMM_FORCEINLINE void add4(float* p, const f8& s) {
  typedef float f4 __attribute__((vector_size(16), aligned(4)));
  f4 o;
  std::memcpy(&o, p, sizeof(f4));
  o += __builtin_shufflevector(s, s, 0, 1, 2, 3);
  std::memcpy(p, &o, sizeof(f4));
}
// r[i] = sum of lanes of a[i], i = 0..7, by a shuffle tree (14 shuffles, 7 adds).
HCOMM_FORCEINLINE void reduce8x8(f8& r, const f8* a) {
  const i8_ lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
  const f8 u0 = __builtin_shuffle(a[0], a[1], lo) + __builtin_shuffle(a[0], a[1], hi);
  const f8 u1 = __builtin_shuffle(a[2], a[3], lo) + __builtin_shuffle(a[2], a[3], hi);
  const f8 u2 = __builtin_shuffle(a[4], a[5], lo) + __builtin_shuffle(a[4], a[5], hi);
  const f8 u3 = __builtin_shuffle(a[6], a[7], lo) + __builtin_shuffle(a[6], a[7], hi);
  // u0 lanes: a0[0+2], a1[0+2], a0[1+3], a1[1+3] | same for lanes 4..7
  const i8_ lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
  const f8 w0 = __builtin_shuffle(u0, u1, lo2) + __builtin_shuffle(u0, u1, hi2);
  const f8 w1 = __builtin_shuffle(u2, u3, lo2) + __builtin_shuffle(u2, u3, hi2);
  // w0 lanes: a0..a3 over lanes 0..3 | a0..a3 over lanes 4..7
  const i8_ lo3 = {0, 1, 2, 3, 8, 9, 10, 11}, hi3 = {4, 5, 6, 7, 12, 13, 14, 15};
  r = __builtin_shuffle(w0, w1, lo3) + __builtin_shuffle(w0, w1, hi3);
}
#endif

}  // namespace msparse::kernels
