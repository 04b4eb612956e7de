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
  elseif(TARGET Kokkos::kokkos)
    # Debian's Trilinos-built Kokkos (3.4.1) defines only Kokkos::kokkos (no kokkoscore
    # alias) and points its include dir at <prefix>/lib/include, which does not exist; the
    # headers are in Kokkos_INCLUDE_DIRS (/usr/include/trilinos). Repair only when broken.
    get_target_property(_hcomm_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
    set(_hcomm_kokkos_ok FALSE)
    foreach(_d IN LISTS _hcomm_kokkos_inc)
      if(EXISTS "${_d}/Kokkos_Core.hpp")
        set(_hcomm_kokkos_ok TRUE)
      endif()
    endforeach()
    if(NOT _hcomm_kokkos_ok)
      set(_hcomm_kokkos_fix "")
      foreach(_d IN LISTS Kokkos_INCLUDE_DIRS ITEMS /usr/include/trilinos)
        get_filename_component(_d "${_d}" REALPATH)
        if(NOT _hcomm_kokkos_fix AND EXISTS "${_d}/Kokkos_Core.hpp")
          set(_hcomm_kokkos_fix "${_d}")
        endif()
      endforeach()
      if(_hcomm_kokkos_fix)
        set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_hcomm_kokkos_fix}")
      else()
        message(WARNING "hcomm: Kokkos_Core.hpp not found next to the Kokkos package; HCOMM_ENABLE_KOKKOS turned OFF")
        set(HCOMM_ENABLE_KOKKOS OFF CACHE BOOL "" FORCE)
      endif()
    endif()
  else()
    message(WARNING "hcomm: the Kokkos package defines no Kokkos::kokkos target; HCOMM_ENABLE_KOKKOS turned OFF")
    set(HCOMM_ENABLE_KOKKOS OFF CACHE BOOL "" FORCE)
  endif()
endif()

if(HCOMM_ENABLE_CUDA)
  # Default GPU architectures A100 (80) and H100/H200 (90). This must happen before
  # enable_language(CUDA), which otherwise fills CMAKE_CUDA_ARCHITECTURES with nvcc's own
  # default (75 for CUDA 13). -DCMAKE_CUDA_ARCHITECTURES=... or $CUDAARCHS still win.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    set(CMAKE_CUDA_ARCHITECTURES 80 90 CACHE STRING "GPU architectures to build for (default: A100, H100/H200)")
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know C++20 for nvcc 13: tell it the flag, and that cuda_std_20 exists
  # (so CUDA_STANDARD 20 and target_compile_features(... cuda_std_20) both work).
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  endif()
  find_package(CUDAToolkit REQUIRED)
endif()

set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)    # OpenBLAS: trainer, sparse kernels' dense baselines
find_package(benchmark QUIET)  # Google Benchmark for bench/
find_package(Catch2 2 QUIET)   # Debian ships Catch2 v2.13
