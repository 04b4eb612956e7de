// cuBLAS opened at run time (examples/gpt/cublas_library.hpp): every entry point train_gpt
// calls is found in the toolkit's libraries (no GPU needed to open them), and a missing
// library or entry point is named. (That train_gpt loads no cuBLAS for the other devices is
// the ctest gpt_cpu_loads_no_cublas.)
#include <catch2/catch.hpp>
#include <string>

#include "cublas_library.hpp"

TEST_CASE("cuBLAS opens at run time with every entry point train_gpt calls", "[model][cublas]") {
  gpt::cublas_library lib;
  REQUIRE(gpt::cublas_library::open(lib) == "");
#define CHECK_FOUND(fn) CHECK(lib.fn != nullptr);
#define CHECK_TYPED_FOUND(fn, type) CHECK(lib.fn != nullptr);
  GPT_CUBLAS_ENTRY_POINTS(CHECK_FOUND)
  GPT_CUBLAS_TYPED_ENTRY_POINTS(CHECK_TYPED_FOUND)
  GPT_CUBLASLT_ENTRY_POINTS(CHECK_FOUND)
#undef CHECK_TYPED_FOUND
#undef CHECK_FOUND
  // the process's copy: the same libraries (dlopen hands back the loaded ones)
  CHECK(gpt::cublas_library::unavailable() == "");
  CHECK(gpt::cublas_api().cublasSgemm == lib.cublasSgemm);
  CHECK(std::string(lib.cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED)).size() > 0);
}

TEST_CASE("a missing cuBLAS is named, with where to point the loader", "[model][cublas]") {
  gpt::cublas_library lib;
  const std::string why = gpt::cublas_library::open(lib, "libcublasLt_absent.so.13");
  CHECK_THAT(why, Catch::StartsWith("cannot load cuBLAS: libcublasLt_absent.so.13: cannot open shared object file"));
  CHECK_THAT(why, Catch::Contains("libcublasLt_absent.so.13 on LD_LIBRARY_PATH"));
  CHECK(lib.cublasLtMatmul == nullptr);
}

TEST_CASE("a library without an entry point train_gpt calls is named", "[model][cublas]") {
  // The CUDA runtime is a real library, but has none of cuBLAS's entry points.
  const std::string cudart = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  gpt::cublas_library lib;
  const std::string why = gpt::cublas_library::open(lib, gpt::cublas_library::cublaslt_soname, cudart.c_str());
  CHECK(why == "cannot use cuBLAS: " + cudart + " has no cublasCreate_v2 (a cuBLAS older than the headers " +
                   "train_gpt was built with?)");
}
