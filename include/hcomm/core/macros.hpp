// hcomm/core/macros.hpp: portability macros shared by every kernel body.
//
// Kernels are written once as functors whose call operator is HCOMM_HOST_DEVICE; the host,
// CUDA and Kokkos executors all run the same body, so CPU tests cover GPU code.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HCOMM_HOST_DEVICE __host__ __device__ inline
#define HCOMM_DEVICE_COMPILE 1
#else
#define HCOMM_HOST_DEVICE inline
#define HCOMM_DEVICE_COMPILE 0
#endif

#if defined(_MSC_VER)
#define HCOMM_FORCEINLINE __forceinline
#else
#define HCOMM_FORCEINLINE inline __attribute__((always_inline))
#endif

#define HCOMM_STRINGIFY_(x) #x
#define HCOMM_STRINGIFY(x) HCOMM_STRINGIFY_(x)
