# Finds what the enabled options need. Each block says why it is needed.
find_package(OpenMP REQUIRED COMPONENTS CXX)   # host executor runs kernels across chunks

if(HCOMM_ENABLE_MPI)
  find_package(MPI REQUIRED COMPONENTS C)      # C API only: the C++ bindings are deprecated
endif()

if(HCOMM_ENABLE_ZFP_ORACLE)
  find_package(zfp CONFIG REQUIRED)            # libzfp 1.0: bit-exact oracle for our ZFP
endif()

if(HCOMM_ENABLE_KOKKOS)
  find_package(Kokkos CONFIG QUIET)
  if(NOT Kokkos_FOUND)
    message(WARNING "hcomm: Kokkos not found; HCOMM_ENABLE_KOKKOS turned OFF (install libtrilinos-kokkos-dev)")
    set(HCOMM_ENABLE_KOKKOS OFF CACHE BOOL "" FORCE)
  elseif(TARGET Kokkos::kokkoscore AND EXISTS /usr/include/trilinos/Kokkos_Core.hpp)
    # Debian's package points the imported target at /usr/lib/include; the headers are
    # in /usr/include/trilinos.
    set_target_properties(Kokkos::kokkoscore PROPERTIES INTERFACE_INCLUDE_DIRECTORIES /usr/include/trilinos)
  endif()
endif()

if(HCOMM_ENABLE_CUDA)
  enable_language(CUDA)
  # CMake 3.25 does not know CUDA20 for nvcc 13; tell it the flag.
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  find_package(CUDAToolkit REQUIRED)
endif()

set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)    # OpenBLAS: trainer, sparse kernels' dense baselines
find_package(benchmark QUIET)  # Google Benchmark for bench/
find_package(Catch2 2 QUIET)   # Debian ships Catch2 v2.13
