// gpu_smoke: the first stage of scripts/gpu-check.sh on a bare GPU machine. It checks, one
// line each, what every later stage stands on, so that a failure names its cause:
//
//   gpu_smoke [--no-gpu] [--mpi|--no-mpi] [--list-libs DIR] [--lib-names]
//
//   versions    CUDA driver and runtime; device name, SMs, memory, compute capability
//   context     cudaFree(0), then a kernel launch checked on the host (the kit's sm_90
//               code runs on this device)
//   cublas      cublasCreate and one 8x8x8 sgemm of small integers, equal to the host's
//   cublaslt    cublasLtCreate and 8x8x8 matmuls with train_gpt's epilogues: bias with A
//               transposed (small integers: exact), bias + GELU keeping GELU's input (the
//               input exact), GELU's gradient from that input (GELU and its gradient within
//               1e-3 of the host's tanh form, printed); whether fp32 pedantic compute has a
//               fused GELU algorithm (printed)
//   nccl        a 1-rank communicator (ncclGetUniqueId, ncclCommInitRank) and one in-place
//               ncclAllReduce of 8 floats on the device, checked
//   mpi         under mpirun (or with --mpi): MPI_Allreduce of the rank numbers; every rank
//               prints OK. --list-libs DIR then writes DIR/maps-rank<r>.txt: the shared
//               objects mapped into the rank ("self PATH") and, rank 0, its parent, the
//               launcher ("exe PATH", "parent PATH"): scripts/gpu-check.sh checks that the
//               MPI runtime came from the kit.
//   --lib-names prints the sonames it dlopens (libcublas.so.<major> libcublasLt.so.<major>
//               libnccl.so.2).
//
// cuBLAS and NCCL are opened with dlopen (libcublas.so.<major>, libnccl.so.2 from the loader's
// search path): NCCL (~200 MB) cannot travel in the kit and may live only in PyTorch's wheels
// there; a missing library fails its own check with the loader's message, not the program.
// --no-gpu skips every CUDA call (the dry run of gpu-check.sh on a machine without a GPU).
// Exit status: 0 every check passed; 1 a check failed; 77 no usable GPU (the MPI part, if
// asked for, still runs first).
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#ifndef HCOMM_SMOKE_MPI
#define HCOMM_SMOKE_MPI 0
#endif
#if HCOMM_SMOKE_MPI
#include <mpi.h>
#endif

namespace {

// NCCL's ABI (nccl.h of NCCL 2.x; stable since 2.0): declared here so that the program
// builds where nccl.h is missing.
using nccl_result = int;  // ncclResult_t: ncclSuccess == 0
using nccl_comm = struct nccl_comm_opaque*;
struct nccl_unique_id {
  char internal[128];  // NCCL_UNIQUE_ID_BYTES
};
constexpr int nccl_float32 = 7;  // ncclFloat32
constexpr int nccl_sum = 0;      // ncclSum

#define HCOMM_SMOKE_STR2(x) #x
#define HCOMM_SMOKE_STR(x) HCOMM_SMOKE_STR2(x)
constexpr const char* cublas_soname = "libcublas.so." HCOMM_SMOKE_STR(CUBLAS_VER_MAJOR);
constexpr const char* cublaslt_soname = "libcublasLt.so." HCOMM_SMOKE_STR(CUBLAS_VER_MAJOR);
constexpr const char* nccl_soname = "libnccl.so.2";

std::string tag = "gpu_smoke";
int failures = 0;

void ok(const char* check, const std::string& what) { std::printf("%s: %s: OK %s\n", tag.c_str(), check, what.c_str()); }
void fail(const char* check, const std::string& what) {
  std::printf("%s: %s: FAIL %s\n", tag.c_str(), check, what.c_str());
  ++failures;
}

// The file a symbol was loaded from.
std::string origin(const void* sym) {
  Dl_info info{};
  if (sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "?";
}

bool cuda_ok(cudaError_t e, const char* check, const char* call) {
  if (e == cudaSuccess) return true;
  fail(check, std::string(call) + ": " + cudaGetErrorString(e));
  return false;
}

__global__ void fill(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 3 * i + 1;
}

// 0: a device is there; 77: none (message printed).
int versions_and_device() {
  int drv = 0, rt = 0;
  cudaRuntimeGetVersion(&rt);
  const cudaError_t de = cudaDriverGetVersion(&drv);
  char buf[512];
  std::snprintf(buf, sizeof buf, "driver %d.%d, runtime %d.%d (%s)", drv / 1000, (drv % 1000) / 10, rt / 1000,
                (rt % 1000) / 10, origin(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion")).c_str());
  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  if (de != cudaSuccess || drv == 0 || ce != cudaSuccess || count == 0) {
    std::printf("%s: SKIPPED: no usable GPU (%s; %s)\n", tag.c_str(), buf,
                ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
    return 77;
  }
  ok("versions", buf);
  cudaDeviceProp p{};
  if (!cuda_ok(cudaGetDeviceProperties(&p, 0), "device", "cudaGetDeviceProperties")) return 0;
  std::snprintf(buf, sizeof buf, "%d device(s); 0: %s, sm_%d%d, %d SMs, %.1f GiB", count, p.name, p.major, p.minor,
                p.multiProcessorCount, static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  ok("device", buf);
  return 0;
}

void context_and_kernel() {
  if (!cuda_ok(cudaSetDevice(0), "context", "cudaSetDevice") || !cuda_ok(cudaFree(nullptr), "context", "cudaFree(0)"))
    return;
  constexpr int n = 4096;
  int* d = nullptr;
  if (!cuda_ok(cudaMalloc(&d, n * sizeof(int)), "context", "cudaMalloc")) return;
  fill<<<(n + 255) / 256, 256>>>(d, n);
  std::vector<int> h(n, -1);
  if (cuda_ok(cudaGetLastError(), "context", "kernel launch") &&
      cuda_ok(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost), "context", "cudaMemcpy")) {
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += h[i] != 3 * i + 1;
    if (bad == 0)
      ok("context", "cudaFree(0), kernel of 4096 threads checked");
    else
      fail("context", std::to_string(bad) + " of 4096 kernel results wrong");
  }
  cudaFree(d);
}

void* open_lib(const char* check, const char* name) {
  void* h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    const char* e = dlerror();
    fail(check, std::string("dlopen ") + name + ": " + (e ? e : "?") +
                    " (gpu-check.sh puts the toolkit's and PyTorch's library folders on LD_LIBRARY_PATH)");
  }
  return h;
}

template <class F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

void cublas_check() {
  const std::string name = cublas_soname;
  void* lib = open_lib("cublas", name.c_str());
  if (lib == nullptr) return;
  auto create = sym<decltype(&cublasCreate_v2)>(lib, "cublasCreate_v2");
  auto destroy = sym<decltype(&cublasDestroy_v2)>(lib, "cublasDestroy_v2");
  auto version = sym<decltype(&cublasGetVersion_v2)>(lib, "cublasGetVersion_v2");
  auto sgemm = sym<decltype(&cublasSgemm_v2)>(lib, "cublasSgemm_v2");
  if (!create || !destroy || !version || !sgemm) {
    fail("cublas", "missing symbols in " + name);
    return;
  }
  cublasHandle_t handle = nullptr;
  if (const cublasStatus_t s = create(&handle); s != CUBLAS_STATUS_SUCCESS) {
    fail("cublas", "cublasCreate: status " + std::to_string(static_cast<int>(s)));
    return;
  }
  int v = 0;
  version(handle, &v);
  constexpr int n = 8;  // column-major C = A B, small integers: exact in float
  std::vector<float> a(n * n), b(n * n), c(n * n, -1.0f), want(n * n, 0.0f);
  for (int i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>(i % 7 - 3);
    b[i] = static_cast<float>(i % 5 - 2);
  }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) want[i + j * n] += a[i + k * n] * b[k + j * n];
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  const std::size_t bytes = n * n * sizeof(float);
  if (cuda_ok(cudaMalloc(&da, bytes), "cublas", "cudaMalloc") && cuda_ok(cudaMalloc(&db, bytes), "cublas", "cudaMalloc") &&
      cuda_ok(cudaMalloc(&dc, bytes), "cublas", "cudaMalloc")) {
    cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t s = sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, db, n, &zero, dc, n);
    if (s != CUBLAS_STATUS_SUCCESS) {
      fail("cublas", "cublasSgemm: status " + std::to_string(static_cast<int>(s)));
    } else if (cuda_ok(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost), "cublas", "cudaMemcpy")) {
      if (c == want)
        ok("cublas", "version " + std::to_string(v) + ", 8x8x8 sgemm equals the host (" +
                         origin(reinterpret_cast<void*>(sgemm)) + ")");
      else
        fail("cublas", "8x8x8 sgemm differs from the host");
    }
  }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  destroy(handle);
}

// cuBLASLt as gemm_cublas.hpp calls it (fp32, CUBLAS_COMPUTE_32F, column-major 8x8x8): the
// bias epilogue, then bias + GELU with GELU's input kept (CUBLASLT_EPILOGUE_GELU_AUX_BIAS).
void cublaslt_check() {
  const std::string name = cublaslt_soname;
  void* lib = open_lib("cublaslt", name.c_str());
  if (lib == nullptr) return;
  auto create = sym<decltype(&cublasLtCreate)>(lib, "cublasLtCreate");
  auto destroy = sym<decltype(&cublasLtDestroy)>(lib, "cublasLtDestroy");
  auto desc_create = sym<decltype(&cublasLtMatmulDescCreate)>(lib, "cublasLtMatmulDescCreate");
  auto desc_destroy = sym<decltype(&cublasLtMatmulDescDestroy)>(lib, "cublasLtMatmulDescDestroy");
  auto desc_set = sym<decltype(&cublasLtMatmulDescSetAttribute)>(lib, "cublasLtMatmulDescSetAttribute");
  auto layout_create = sym<decltype(&cublasLtMatrixLayoutCreate)>(lib, "cublasLtMatrixLayoutCreate");
  auto layout_destroy = sym<decltype(&cublasLtMatrixLayoutDestroy)>(lib, "cublasLtMatrixLayoutDestroy");
  auto pref_create = sym<decltype(&cublasLtMatmulPreferenceCreate)>(lib, "cublasLtMatmulPreferenceCreate");
  auto pref_destroy = sym<decltype(&cublasLtMatmulPreferenceDestroy)>(lib, "cublasLtMatmulPreferenceDestroy");
  auto pref_set = sym<decltype(&cublasLtMatmulPreferenceSetAttribute)>(lib, "cublasLtMatmulPreferenceSetAttribute");
  auto heuristic = sym<decltype(&cublasLtMatmulAlgoGetHeuristic)>(lib, "cublasLtMatmulAlgoGetHeuristic");
  auto matmul = sym<decltype(&cublasLtMatmul)>(lib, "cublasLtMatmul");
  if (!create || !destroy || !desc_create || !desc_destroy || !desc_set || !layout_create || !layout_destroy ||
      !pref_create || !pref_destroy || !pref_set || !heuristic || !matmul) {
    fail("cublaslt", "missing symbols in " + name);
    return;
  }
  cublasLtHandle_t lt = nullptr;
  if (const cublasStatus_t s = create(&lt); s != CUBLAS_STATUS_SUCCESS) {
    fail("cublaslt", "cublasLtCreate: status " + std::to_string(static_cast<int>(s)));
    return;
  }
  constexpr int n = 8;
  std::vector<float> a(n * n), b(n * n), bias(n);
  for (int i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>(i % 7 - 3);
    b[i] = static_cast<float>(i % 5 - 2);
  }
  for (int i = 0; i < n; ++i) bias[i] = static_cast<float>(i - 4);
  // op(A) B (column-major, small integers: exact), plus the bias along the rows of D if asked
  auto product = [&](bool ta, bool with_bias) {
    std::vector<float> p(n * n, 0.0f);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        for (int k = 0; k < n; ++k) p[i + j * n] += (ta ? a[k + i * n] : a[i + k * n]) * b[k + j * n];
        if (with_bias) p[i + j * n] += bias[i];
      }
    return p;
  };
  auto gelu = [](double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); };
  auto dgelu = [](double x) {
    const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), t = std::tanh(u);
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
  };
  const std::size_t bytes = n * n * sizeof(float);
  constexpr std::size_t ws_bytes = std::size_t{4} << 20;
  float *da = nullptr, *db = nullptr, *dc = nullptr, *daux = nullptr, *dbias = nullptr;
  void* ws = nullptr;
  std::string err;
  auto st = [&](cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS && err.empty()) err = std::string(call) + ": status " + std::to_string(static_cast<int>(s));
    return s == CUBLAS_STATUS_SUCCESS;
  };
  // one matmul D = op(A) B with epilogue e (dgelu: no bias, aux read); false (err set) if
  // cuBLASLt refuses it; with launch false only asks the heuristic
  auto run = [&](cublasLtEpilogue_t e, bool ta, cublasComputeType_t compute, bool launch = true) {
    err.clear();
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t l = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    const cublasOperation_t op = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    bool done = st(desc_create(&desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate") &&
                st(desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof op), "transa") &&
                st(desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), "epilogue");
    if (done && e != CUBLASLT_EPILOGUE_DGELU)
      done = st(desc_set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias), "bias pointer");
    if (done && e != CUBLASLT_EPILOGUE_BIAS) {
      const std::int64_t ld = n;
      done = st(desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &daux, sizeof daux), "aux pointer") &&
             st(desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld), "aux ld");
    }
    const std::uint64_t wsb = ws_bytes;
    done = done && st(layout_create(&l, CUDA_R_32F, n, n, n), "cublasLtMatrixLayoutCreate") &&
           st(pref_create(&pref), "cublasLtMatmulPreferenceCreate") &&
           st(pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb), "workspace preference");
    cublasLtMatmulHeuristicResult_t r{};
    int found = 0;
    done = done && st(heuristic(lt, desc, l, l, l, l, pref, 1, &r, &found), "cublasLtMatmulAlgoGetHeuristic");
    if (done && (found == 0 || r.state != CUBLAS_STATUS_SUCCESS)) {
      err = "no algorithm for the epilogue";
      done = false;
    }
    const float one = 1.0f, zero = 0.0f;
    if (launch)
      done = done && st(matmul(lt, desc, &one, da, l, db, l, &zero, dc, l, dc, l, &r.algo, ws, ws_bytes, nullptr),
                        "cublasLtMatmul");
    if (pref) pref_destroy(pref);
    if (l) layout_destroy(l);
    if (desc) desc_destroy(desc);
    return done && (!launch || cuda_ok(cudaDeviceSynchronize(), "cublaslt", "cudaDeviceSynchronize"));
  };
  auto back = [&](float* d) {
    std::vector<float> h(n * n, -1.0f);
    cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost);
    return h;
  };
  if (cuda_ok(cudaMalloc(&da, bytes), "cublaslt", "cudaMalloc") && cuda_ok(cudaMalloc(&db, bytes), "cublaslt", "cudaMalloc") &&
      cuda_ok(cudaMalloc(&dc, bytes), "cublaslt", "cudaMalloc") && cuda_ok(cudaMalloc(&daux, bytes), "cublaslt", "cudaMalloc") &&
      cuda_ok(cudaMalloc(&dbias, n * sizeof(float)), "cublaslt", "cudaMalloc") &&
      cuda_ok(cudaMalloc(&ws, ws_bytes), "cublaslt", "cudaMalloc")) {
    cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dbias, bias.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    // GELU's arithmetic on the GPU is cuBLASLt's own: within 1e-3 (printed), not bitwise
    double worst_g = 0, worst_d = 0;
    const std::vector<float> pre = product(false, true), plain = product(false, false);
    if (!run(CUBLASLT_EPILOGUE_BIAS, true, CUBLAS_COMPUTE_32F)) {
      fail("cublaslt", "bias epilogue (A transposed, as train_gpt's forward): " + err);
    } else if (back(dc) != product(true, true)) {
      fail("cublaslt", "bias epilogue: the 8x8x8 result differs from the host");
    } else if (!run(CUBLASLT_EPILOGUE_GELU_AUX_BIAS, false, CUBLAS_COMPUTE_32F)) {
      fail("cublaslt", "bias + GELU epilogue: " + err);
    } else if (back(daux) != pre) {
      fail("cublaslt", "bias + GELU epilogue: the kept GELU input differs from the host's product");
    } else {
      const std::vector<float> g = back(dc);
      for (int i = 0; i < n * n; ++i) worst_g = std::fmax(worst_g, std::fabs(g[i] - gelu(pre[i])) / (1 + std::fabs(gelu(pre[i]))));
      if (!run(CUBLASLT_EPILOGUE_DGELU, false, CUBLAS_COMPUTE_32F)) {  // aux: the GELU input just kept
        fail("cublaslt", "GELU-gradient epilogue: " + err);
      } else {
        const std::vector<float> d = back(dc);
        for (int i = 0; i < n * n; ++i) {
          const double want = plain[i] * dgelu(pre[i]);
          worst_d = std::fmax(worst_d, std::fabs(d[i] - want) / (1 + std::fabs(want)));
        }
        if (!(worst_g <= 1e-3) || !(worst_d <= 1e-3)) {
          fail("cublaslt", "GELU differs from the tanh form by " + std::to_string(worst_g) + ", its gradient by " +
                               std::to_string(worst_d) + " (bound 1e-3)");
        } else {
          const bool pedantic = run(CUBLASLT_EPILOGUE_GELU_AUX_BIAS, false, CUBLAS_COMPUTE_32F_PEDANTIC, false);
          ok("cublaslt", "bias, bias + GELU and GELU-gradient epilogues on 8x8x8 matmuls as the host (GELU within " +
                             std::to_string(worst_g) + ", its gradient within " + std::to_string(worst_d) +
                             " of the tanh form); fp32 pedantic compute (train_gpt's fp32) " +
                             (pedantic ? "has" : "has NO") + " fused GELU algorithm; " +
                             origin(reinterpret_cast<void*>(matmul)));
        }
      }
    }
  }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(daux);
  cudaFree(dbias);
  cudaFree(ws);
  destroy(lt);
}

void nccl_check() {
  void* lib = open_lib("nccl", nccl_soname);
  if (lib == nullptr) return;
  auto get_version = sym<nccl_result (*)(int*)>(lib, "ncclGetVersion");
  auto get_id = sym<nccl_result (*)(nccl_unique_id*)>(lib, "ncclGetUniqueId");
  auto init = sym<nccl_result (*)(nccl_comm*, int, nccl_unique_id, int)>(lib, "ncclCommInitRank");
  auto allreduce =
      sym<nccl_result (*)(const void*, void*, std::size_t, int, int, nccl_comm, cudaStream_t)>(lib, "ncclAllReduce");
  auto destroy = sym<nccl_result (*)(nccl_comm)>(lib, "ncclCommDestroy");
  auto err = sym<const char* (*)(nccl_result)>(lib, "ncclGetErrorString");
  if (!get_version || !get_id || !init || !allreduce || !destroy || !err) {
    fail("nccl", "missing symbols in libnccl.so.2");
    return;
  }
  auto nccl_ok = [&](nccl_result r, const char* call) {
    if (r == 0) return true;
    fail("nccl", std::string(call) + ": " + err(r));
    return false;
  };
  int v = 0;
  get_version(&v);
  nccl_unique_id id{};
  nccl_comm comm = nullptr;
  if (!nccl_ok(get_id(&id), "ncclGetUniqueId") || !nccl_ok(init(&comm, 1, id, 0), "ncclCommInitRank")) return;
  constexpr int n = 8;
  float* d = nullptr;
  cudaStream_t s = nullptr;
  std::vector<float> h(n), back(n, -1.0f);
  for (int i = 0; i < n; ++i) h[i] = 0.5f * static_cast<float>(i) - 1.0f;
  if (cuda_ok(cudaStreamCreate(&s), "nccl", "cudaStreamCreate") && cuda_ok(cudaMalloc(&d, sizeof(float) * n), "nccl", "cudaMalloc") &&
      cuda_ok(cudaMemcpy(d, h.data(), sizeof(float) * n, cudaMemcpyHostToDevice), "nccl", "cudaMemcpy") &&
      nccl_ok(allreduce(d, d, n, nccl_float32, nccl_sum, comm, s), "ncclAllReduce") &&
      cuda_ok(cudaStreamSynchronize(s), "nccl", "cudaStreamSynchronize") &&
      cuda_ok(cudaMemcpy(back.data(), d, sizeof(float) * n, cudaMemcpyDeviceToHost), "nccl", "cudaMemcpy")) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "version %d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    if (back == h)
      ok("nccl", std::string(buf) + ", 1-rank communicator, ncclAllReduce of 8 floats checked (" +
                     origin(reinterpret_cast<void*>(allreduce)) + ")");
    else
      fail("nccl", "1-rank ncclAllReduce changed the data");
  }
  if (d) cudaFree(d);
  if (s) cudaStreamDestroy(s);
  destroy(comm);
}

// Shared objects mapped into process `pid`, one line each ("WHO PATH"), into `out`.
[[maybe_unused]] void list_libs(std::FILE* out, const char* who, const std::string& pid) {
  std::ifstream maps("/proc/" + pid + "/maps");
  std::set<std::string> seen;
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find(".so") != std::string::npos && seen.insert(path).second)
      std::fprintf(out, "%s %s\n", who, path.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool gpu = true;
  std::string list;  // --list-libs DIR
  int mpi = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-gpu")) gpu = false;
    else if (!std::strcmp(argv[i], "--mpi")) mpi = 1;
    else if (!std::strcmp(argv[i], "--no-mpi")) mpi = 0;
    else if (!std::strcmp(argv[i], "--list-libs") && i + 1 < argc) list = argv[++i];
    else if (!std::strcmp(argv[i], "--lib-names")) {
      std::printf("%s %s %s\n", cublas_soname, cublaslt_soname, nccl_soname);
      return 0;
    } else {
      std::fprintf(stderr, "usage: gpu_smoke [--no-gpu] [--mpi|--no-mpi] [--list-libs DIR] [--lib-names]\n");
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (mpi) {
#if HCOMM_SMOKE_MPI
    int rank = 0, size = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    tag = "gpu_smoke[" + std::to_string(rank) + "/" + std::to_string(size) + "]";
    int sum = -1;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string first(lib, std::strcspn(lib, "\n,"));
    if (sum == size * (size - 1) / 2)
      ok("mpi", "MPI_Allreduce of the ranks of " + std::to_string(size) + " gives " + std::to_string(sum) + "; " + first +
                    " (" + origin(dlsym(RTLD_DEFAULT, "MPI_Allreduce")) + ")");
    else
      fail("mpi", "MPI_Allreduce of the ranks gave " + std::to_string(sum));
    if (!list.empty()) {
      const std::string file = list + "/maps-rank" + std::to_string(rank) + ".txt";
      if (std::FILE* out = std::fopen(file.c_str(), "w")) {
        list_libs(out, "self", "self");
        if (rank == 0) {
          const std::string ppid = std::to_string(getppid());
          char exe[4096] = {0};
          const ssize_t n = readlink(("/proc/" + ppid + "/exe").c_str(), exe, sizeof exe - 1);
          std::fprintf(out, "exe %s\n", n > 0 ? exe : "?");
          list_libs(out, "parent", ppid);
        }
        std::fclose(out);
        std::printf("%s: mapped shared objects listed in %s\n", tag.c_str(), file.c_str());
      } else {
        fail("mpi", "cannot write " + file);
      }
    }
#else
    fail("mpi", "built without MPI (HCOMM_ENABLE_MPI=OFF)");
#endif
  }
  int rc = 0;
  if (gpu) {
    rc = versions_and_device();
    if (rc == 0) {
      context_and_kernel();
      cublas_check();
      cublaslt_check();
      nccl_check();
    }
  } else {
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    std::printf("%s: --no-gpu: CUDA runtime %d.%d linked (%s); GPU checks skipped\n", tag.c_str(), rt / 1000,
                (rt % 1000) / 10, origin(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion")).c_str());
  }
#if HCOMM_SMOKE_MPI
  if (mpi) {
    // One verdict for all ranks: a rank's failure fails every rank.
    int f = failures, any = 0;
    MPI_Allreduce(&f, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    failures = any;
    MPI_Finalize();
  }
#endif
  if (failures > 0) {
    std::printf("%s: FAIL (%d check(s) failed)\n", tag.c_str(), failures);
    return 1;
  }
  if (rc == 77) return 77;
  std::printf("%s: PASS\n", tag.c_str());
  return 0;
}
