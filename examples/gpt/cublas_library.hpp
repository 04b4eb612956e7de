// examples/gpt/cublas_library.hpp: cuBLAS and cuBLASLt, opened with dlopen when --device cuda
// first needs them, instead of being linked to train_gpt. Loading libcublasLt runs its static
// initialisers, which take about 90 MB of private memory and 0.1 s of CPU in every process
// that loads it (bench/model/RESULTS.md); linked, every rank of a CPU run paid that.
//
//   if (std::string no = gpt::cublas_library::unavailable(); !no.empty()) ...  // why not
//   const gpt::cublas_library& cb = gpt::cublas_api();   // throws hcomm::error (unsupported)
//   cb.cublasSgemm(handle, ...);                          // the entry points, by their C names
//
// The sonames are those of the headers' major version (libcublasLt.so.13 and
// libcublas.so.13 for CUDA 13), looked up as the dynamic loader does (LD_LIBRARY_PATH,
// train_gpt's run path, the loader's cache), then in the folder of the CUDA runtime this
// process loaded (a toolkit keeps them together); libcublas from libcublasLt's folder first,
// so that the two come from one toolkit. They stay loaded until the process ends. The calls
// go through the handles' own symbols, so a library preloaded to wrap cuBLAS functions
// (LD_PRELOAD) does not see them.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <type_traits>
#include <utility>

#include "hcomm/core/error.hpp"

#define GPT_CUBLAS_STR_(x) #x
#define GPT_CUBLAS_STR(x) GPT_CUBLAS_STR_(x)

// The entry points train_gpt calls. Several are macros of cublas_v2.h (cublasCreate is
// cublasCreate_v2, ...): members and dlsym's names are the expanded ones. cublasGemmEx also
// has a C++ overload (an inline wrapper taking the compute type as a cudaDataType), so its
// entry has the C function's type written out.
#define GPT_CUBLAS_ENTRY_POINTS(X) \
  X(cublasCreate)                  \
  X(cublasDestroy)                 \
  X(cublasSetStream)               \
  X(cublasSetPointerMode)          \
  X(cublasSetMathMode)             \
  X(cublasSgemm)                   \
  X(cublasGetStatusString)
#define GPT_CUBLAS_TYPED_ENTRY_POINTS(Y)                                                                     \
  Y(cublasGemmEx, cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,    \
                                     const void*, const void*, cudaDataType, int, const void*, cudaDataType, \
                                     int, const void*, void*, cudaDataType, int, cublasComputeType_t,        \
                                     cublasGemmAlgo_t))
#define GPT_CUBLASLT_ENTRY_POINTS(X)      \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtMatmul)                       \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)

namespace gpt {

struct cublas_library {
  static constexpr const char* cublas_soname = "libcublas.so." GPT_CUBLAS_STR(CUBLAS_VER_MAJOR);
  static constexpr const char* cublaslt_soname = "libcublasLt.so." GPT_CUBLAS_STR(CUBLAS_VER_MAJOR);

#define GPT_CUBLAS_MEMBER(fn) decltype(&::fn) fn = nullptr;
#define GPT_CUBLAS_TYPED_MEMBER(fn, type) std::type_identity_t<type> fn = nullptr;
  GPT_CUBLAS_ENTRY_POINTS(GPT_CUBLAS_MEMBER)
  GPT_CUBLAS_TYPED_ENTRY_POINTS(GPT_CUBLAS_TYPED_MEMBER)
  GPT_CUBLASLT_ENTRY_POINTS(GPT_CUBLAS_MEMBER)
#undef GPT_CUBLAS_TYPED_MEMBER
#undef GPT_CUBLAS_MEMBER

  // The process's copy, opened on the first call (a failure is kept too: every later call
  // gives the same answer). Throws hcomm::error (unsupported) with unavailable()'s words.
  static const cublas_library& get() {
    const auto& [lib, why] = process();
    if (!why.empty()) hcomm::fail(hcomm::errc::unsupported, why);
    return lib;
  }
  // Why cuBLAS cannot be used here ("" when it can): what get() would throw.
  static std::string unavailable() { return process().second; }

  // Opens the two libraries by these sonames into `into`: "" when every entry point was
  // found, else why not (the loader's words, then where to point LD_LIBRARY_PATH).
  static std::string open(cublas_library& into, const char* cublaslt_name = cublaslt_soname,
                          const char* cublas_name = cublas_soname) {
    std::string why;
    void* lt = open_one(cublaslt_name, "", why);  // first: libcublas needs it
    if (!lt) return why;
    void* blas = open_one(cublas_name, origin(lt), why);
    if (!blas) return why;
#define GPT_CUBLAS_FIND(lib, name, fn) \
  if (!find(lib, name, GPT_CUBLAS_STR(fn), into.fn, why)) return why;
#define GPT_CUBLAS_FIND_BLAS(fn) GPT_CUBLAS_FIND(blas, cublas_name, fn)
#define GPT_CUBLAS_FIND_TYPED(fn, type) GPT_CUBLAS_FIND(blas, cublas_name, fn)
#define GPT_CUBLAS_FIND_LT(fn) GPT_CUBLAS_FIND(lt, cublaslt_name, fn)
    GPT_CUBLAS_ENTRY_POINTS(GPT_CUBLAS_FIND_BLAS)
    GPT_CUBLAS_TYPED_ENTRY_POINTS(GPT_CUBLAS_FIND_TYPED)
    GPT_CUBLASLT_ENTRY_POINTS(GPT_CUBLAS_FIND_LT)
#undef GPT_CUBLAS_FIND_LT
#undef GPT_CUBLAS_FIND_TYPED
#undef GPT_CUBLAS_FIND_BLAS
#undef GPT_CUBLAS_FIND
    return "";
  }

 private:
  // The process's copy, and why it could not be opened ("" when it could).
  static const std::pair<cublas_library, std::string>& process() {
    static const std::pair<cublas_library, std::string> p = [] {
      std::pair<cublas_library, std::string> r;
      r.second = open(r.first);
      return r;
    }();
    return p;
  }

  // The folder a loaded library came from ("" if unknown).
  static std::string origin(void* handle) {
    char dir[PATH_MAX] = {};
    return handle && dlinfo(handle, RTLD_DI_ORIGIN, dir) == 0 ? std::string(dir) : std::string();
  }
  // The folder of the CUDA runtime this process loaded ("" if none is loaded).
  static std::string cudart_folder() {
    const std::string so = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
    void* h = dlopen(so.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    const std::string dir = origin(h);
    if (h) dlclose(h);  // (RTLD_NOLOAD took a reference)
    return dir;
  }
  // Opens `name` from `first_dir` if given (libcublas from libcublasLt's folder: one toolkit),
  // else as the loader searches, else beside the CUDA runtime (a toolkit's lib folder holds
  // both). Null with `why` (each attempt's words) when none opens.
  static void* open_one(const char* name, const std::string& first_dir, std::string& why) {
    if (!first_dir.empty())
      if (void* h = dlopen((first_dir + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = dlerror();
    why = "cannot load cuBLAS: " + (e ? std::string(e) : std::string(name) + ": not found");
    if (const std::string rt = cudart_folder(); !rt.empty()) {
      const std::string path = rt + "/" + name;
      if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
      if (access(path.c_str(), F_OK) == 0) {  // there, but it does not load: say why too
        const char* e2 = dlerror();
        why += "; " + (e2 ? std::string(e2) : path);
      }
    }
    why += std::string(" (put the folder of the CUDA toolkit's or PyTorch's ") + name + " on LD_LIBRARY_PATH)";
    return nullptr;
  }
  template <class F>
  static bool find(void* lib, const char* lib_name, const char* symbol, F& out, std::string& why) {
    out = reinterpret_cast<F>(dlsym(lib, symbol));
    if (out) return true;
    why = std::string("cannot use cuBLAS: ") + lib_name + " has no " + symbol +
          " (a cuBLAS older than the headers train_gpt was built with?)";
    return false;
  }
};

// The process's cuBLAS (cublas_library::get()).
inline const cublas_library& cublas_api() { return cublas_library::get(); }

}  // namespace gpt
