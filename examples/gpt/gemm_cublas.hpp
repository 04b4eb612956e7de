// examples/gpt/gemm_cublas.hpp: the GEMM of the portable backend on CUDA device memory
// (cuBLAS on the executor's stream), the CUDA counterpart of gemm_host.hpp. cuBLAS and
// cuBLASLt are opened at run time, by the first object that needs them (cublas_library.hpp).
//
//   gpt::cublas_gemm g(stream);                 // one handle, shared by copies
//   g(false, true, M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
//   // C[M,N] = alpha op(A) op(B) + beta C, row-major; op transposes when its flag is set
//   g.use_bf16();  g.reserve(a, b);             // --precision bf16: this copy on tensor cores
//   g.reserve_workspace();                      // cuBLASLt's workspace (the model makes it)
//   if (g.can_fuse(gemm_epilogue::gelu_aux, ...)) g.fuse(gemm_epilogue::gelu_aux, ...);
//
// Row-major C is column-major C^T = op(B)^T op(A)^T, so cuBLAS gets the operands swapped:
// (op_b, op_a, N, M, K, B, ldb, A, lda, C, ldc) and no data moves.
// fp32 (the default): sgemm with pedantic math (CUBLAS_PEDANTIC_MATH: no TF32, no
// reduced-precision reductions), as the PyTorch reference runs with TF32 off; `tf32 = true`
// allows TF32 tensor cores for speed runs.
// bf16 (use_bf16): A and B are converted to bfloat16 (nearest, ties to even: the flat kernel
// portable::to_bf16, which host-check runs in CI) into scratch on the stream, then
// cublasGemmEx multiplies them on tensor cores with fp32 accumulation and fp32 C: what
// gemm_host.hpp's bf16 mode computes on the host, up to the order of the sums. gemm_reuse
// (gemm_reuse.hpp), in device memory: keep_a converts A straight into the caller's buffer and
// multiplies from there, kept_b is multiplied as it is (no conversion), same_a reuses the
// previous call's conversion of A.
// Epilogues (gemm_epilogue.hpp; on unless cublas_options::epilogues is false, i.e.
// --gemm-epilogues off): bias, bias + GELU (keeping GELU's input) and GELU's gradient fused
// into the GEMM by cublasLtMatmul, same operand types and math as above. The algorithm for
// each shape and pointer alignment is cuBLASLt's first heuristic choice, asked once and kept
// with its descriptors; a shape it has none for (GELU's leading dimension must divide by 8;
// bias and aux must be 16-byte aligned) is left to portable_ops' own kernels and counted
// (fusion_counts()).
// cuBLAS gives the same bits on every run on one GPU model and toolkit, which bitwise resume
// and the parallel equalities rely on (so --deterministic has no off: README); so does
// cuBLASLt with a fixed algorithm and workspace, and which GEMMs fuse depends only on shapes
// and buffer offsets, the same in every run of one configuration.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "cublas_library.hpp"
#include "device_array.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_host.hpp"
#include "gemm_reuse.hpp"
#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/exec/cuda.hpp"
#include "portable/elementwise.hpp"

namespace gpt {

inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    hcomm::fail(hcomm::errc::unsupported,
                std::string("cuBLAS: ") + what + " failed: " + cublas_api().cublasGetStatusString(s));
}

struct cublas_options {
  bool epilogues = true;  // bias and GELU fused by cuBLASLt (gemm_epilogue.hpp)
  bool tf32 = false;      // fp32 GEMMs on TF32 tensor cores (speed runs; not PyTorch's fp32 reference)
};

struct cublas_gemm {
  static constexpr const char* name = "cuBLAS";
  using idx = std::ptrdiff_t;
  // cuBLASLt's workspace: what NVIDIA recommends for Hopper (smaller GPUs need less).
  static constexpr std::size_t workspace_bytes = std::size_t{32} << 20;

  cublas_gemm() = default;
  explicit cublas_gemm(cudaStream_t stream, cublas_options o = {})
      : h_(make(stream, o.tf32)), s_(std::make_shared<state>(hcomm::exec::cuda{stream}, o)) {}

  // --precision bf16: bfloat16 operands on tensor cores, fp32 accumulation (see above), for
  // this object and the copies made of it from now on; other copies stay fp32 (the shared
  // handle's math mode is set for each call), so one GEMM serves fp32 and bf16 models.
  void use_bf16() {
    need_handle();
    bf16_ = true;
  }
  bool bf16_mode() const { return bf16_; }
  // Room for A and B operands of up to a and b elements now (bf16), so that no step allocates
  // device memory (the model reserves while its own buffers are made: a failure there stops
  // every rank cleanly).
  void reserve(std::size_t a, std::size_t b) {
    need_handle();
    if (!bf16_) return;
    if (s_->a.size() < a) {
      s_->a = device_array<hcomm::bf16, hcomm::exec::cuda>(s_->ex, a);
      s_->a_of = nullptr;  // the new scratch holds no conversion
    }
    if (s_->b.size() < b) s_->b = device_array<hcomm::bf16, hcomm::exec::cuda>(s_->ex, b);
  }

  // cuBLASLt's workspace, made now with the model (epilogues only; nothing otherwise).
  void reserve_workspace() {
    need_handle();
    if (!s_->opt.epilogues || s_->lt) return;
    cublasLtHandle_t lt = nullptr;
    cublas_check(cublas_api().cublasLtCreate(&lt), "cublasLtCreate");
    s_->lt.reset(lt, destroy_lt{});
    s_->workspace = device_array<std::byte, hcomm::exec::cuda>(s_->ex, workspace_bytes);
  }

  // Whether fuse() runs this GEMM with epilogue e (gemm_epilogue.hpp), the same reuse asked;
  // launches nothing.
  bool can_fuse(gemm_epilogue e, bool trans_a, bool trans_b, idx M, idx N, idx K, const float* A, idx lda,
                const float* B, idx ldb, float* C, idx ldc, const float* bias, const float* aux,
                gemm_reuse r = {}) const {
    need_handle();
    if (!s_->lt || M == 0 || N == 0 || K == 0) return false;
    if ((e != gemm_epilogue::bias && !aux) || (e == gemm_epilogue::bias && !bias)) return false;
    if (align(bias) < 16 || align(aux) < 16 || (e != gemm_epilogue::bias && ldc % 8 != 0)) {
      ++s_->unfused;
      return false;
    }
    const plan& p = plan_for(e, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, bias, aux, r);
    if (!p.ok) ++s_->unfused;
    return p.ok;
  }
  // The fused GEMM (alpha 1, beta 0) on the stream; can_fuse must have said yes.
  void fuse(gemm_epilogue e, bool trans_a, bool trans_b, idx M, idx N, idx K, const float* A, idx lda, const float* B,
            idx ldb, float* C, idx ldc, const float* bias, const float* aux, gemm_reuse r = {}) const {
    const plan& p = plan_for(e, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, bias, aux, r);
    if (!p.ok) hcomm::fail(hcomm::errc::invalid_argument, "cublas_gemm::fuse: cuBLASLt has no algorithm for this GEMM");
    const void* a = A;
    const void* b = B;
    if (bf16_) {
      a = converted_a(A, operand_span(trans_a ? K : M, trans_a ? M : K, lda), r);
      b = converted_b(B, operand_span(trans_b ? N : K, trans_b ? K : N, ldb), r);
    }
    const lt_call& d = p.d;
    point(d.desc.get(), e, bias, aux);
    const float one = 1.f, zero = 0.f;
    const cublasStatus_t st =
        cublas_api().cublasLtMatmul(s_->lt.get(), d.desc.get(), &one, b, d.a.get(), a, d.b.get(), &zero, C, d.c.get(),
                                    C, d.c.get(), &p.algo, s_->workspace.data(), workspace_bytes, s_->ex.stream());
    if (st != CUBLAS_STATUS_SUCCESS)
      hcomm::fail(hcomm::errc::unsupported, std::string("cuBLASLt: matmul with a fused epilogue failed: ") +
                                                cublas_api().cublasGetStatusString(st) +
                                                " (--gemm-epilogues off runs without)");
    ++s_->fused;
  }
  // GEMMs run with an epilogue so far, and GEMMs that asked for one and ran without.
  std::pair<std::size_t, std::size_t> fusion_counts() const {
    return s_ ? std::pair{s_->fused, s_->unfused} : std::pair<std::size_t, std::size_t>{0, 0};
  }

  void operator()(bool trans_a, bool trans_b, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t K, float alpha,
                  const float* A, std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, float beta, float* C,
                  std::ptrdiff_t ldc, gemm_reuse r = {}) const {
    need_handle();
    if (M == 0 || N == 0) return;
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K);
    math_mode();
    if (!bf16_) {
      cublas_check(cublas_api().cublasSgemm(h_.get(), op_b, op_a, n, m, k, &alpha, B, static_cast<int>(ldb), A,
                               static_cast<int>(lda), &beta, C, static_cast<int>(ldc)),
                   "sgemm");
      return;
    }
    const hcomm::bf16* a = converted_a(A, operand_span(trans_a ? K : M, trans_a ? M : K, lda), r);
    const hcomm::bf16* b = converted_b(B, operand_span(trans_b ? N : K, trans_b ? K : N, ldb), r);
    cublas_check(cublas_api().cublasGemmEx(h_.get(), op_b, op_a, n, m, k, &alpha, b, CUDA_R_16BF, static_cast<int>(ldb),
                                           a, CUDA_R_16BF, static_cast<int>(lda), &beta, C, CUDA_R_32F,
                                           static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "GemmEx (bf16 operands, fp32 accumulation)");
  }

 private:
  struct destroy {
    void operator()(cublasHandle_t h) const noexcept { cublas_api().cublasDestroy(h); }
  };
  struct destroy_lt {
    void operator()(cublasLtHandle_t h) const noexcept { cublas_api().cublasLtDestroy(h); }
  };
  // cuBLASLt's descriptors of one GEMM shape and epilogue (its pointers set per call).
  struct lt_call {
    struct free_desc {
      void operator()(cublasLtMatmulDesc_t d) const noexcept { cublas_api().cublasLtMatmulDescDestroy(d); }
    };
    struct free_layout {
      void operator()(cublasLtMatrixLayout_t l) const noexcept { cublas_api().cublasLtMatrixLayoutDestroy(l); }
    };
    std::unique_ptr<cublasLtMatmulDescOpaque_t, free_desc> desc;
    std::unique_ptr<cublasLtMatrixLayoutOpaque_t, free_layout> a, b, c;  // cuBLAS's A (our B), B (our A), C = D
  };
  // A cuBLASLt algorithm and the descriptors for one GEMM shape, epilogue and set of pointer
  // alignments (ok false: cuBLASLt has none).
  struct plan {
    bool ok = false;
    cublasLtMatmulAlgo_t algo{};
    lt_call d;
  };
  using plan_key = std::tuple<int, bool, bool, idx, idx, idx, idx, idx, idx, int, int, int, int, int, bool, bool>;
  // The handle's math mode, the bf16 operand scratch, grown as needed (freed stream-ordered),
  // cuBLASLt's handle, workspace and plans: shared by copies, one host thread at a time, as
  // the handle.
  struct state {
    hcomm::exec::cuda ex;
    cublas_options opt;
    cublasMath_t math;  // what make() set, then what math_mode() last set
    device_array<hcomm::bf16, hcomm::exec::cuda> a, b;
    const float* a_of = nullptr;  // the operand `a` holds the conversion of, and its extent
    std::size_t a_span = 0;
    std::shared_ptr<cublasLtContext> lt;
    device_array<std::byte, hcomm::exec::cuda> workspace;
    std::map<plan_key, plan> plans;
    std::size_t fused = 0, unfused = 0;
    state(hcomm::exec::cuda e, cublas_options o) : ex(e), opt(o), math(fp32_math(o.tf32)) {}
  };
  std::shared_ptr<cublasContext> h_;
  std::shared_ptr<state> s_;
  bool bf16_ = false;  // this copy's operands: bfloat16 (use_bf16) or fp32

  // The math the handle needs for this copy's calls: fp32 pedantic (or TF32 if asked), or the
  // default for bf16 operands, which lets cublasGemmEx use tensor cores.
  static cublasMath_t fp32_math(bool tf32) { return tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH; }
  void math_mode() const {
    const cublasMath_t want = bf16_ ? CUBLAS_DEFAULT_MATH : fp32_math(s_->opt.tf32);
    if (s_->math == want) return;
    cublas_check(cublas_api().cublasSetMathMode(h_.get(), want), "cublasSetMathMode");
    s_->math = want;
  }

  void need_handle() const {
    if (!h_) hcomm::fail(hcomm::errc::invalid_argument, "cublas_gemm: made without a stream (cublas_gemm(stream))");
  }
  // The largest power of two (at most 256) that divides the address: what cuBLASLt may assume.
  static int align(const void* p) {
    if (!p) return 256;
    const auto u = reinterpret_cast<std::uintptr_t>(p);
    return static_cast<int>(std::min<std::uintptr_t>(256, u & (~u + 1)));
  }
  template <class T>
  static void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t what, const T& v) {
    cublas_check(cublas_api().cublasLtMatmulDescSetAttribute(d, what, &v, sizeof v), "cublasLtMatmulDescSetAttribute");
  }
  // The epilogue's bias and aux pointers of this call.
  static void point(cublasLtMatmulDesc_t desc, gemm_epilogue e, const float* bias, const float* aux) {
    if (bias && e != gemm_epilogue::dgelu) set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    if (e != gemm_epilogue::bias) set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
  }
  // Row-major C[M,N] = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, as in operator():
  // cuBLASLt's A is our B, its B our A, its bias runs along C^T's N rows.
  lt_call describe(gemm_epilogue e, bool trans_a, bool trans_b, idx M, idx N, idx K, idx lda, idx ldb, idx ldc,
                   const float* bias, const float* aux) const {
    lt_call d;
    const bool tf32 = s_->opt.tf32 && !bf16_;
    cublasLtMatmulDesc_t desc = nullptr;
    // the plain path's math: fp32 pedantic (the handle's CUBLAS_PEDANTIC_MATH), TF32 if asked,
    // bf16 operands with cuBLAS's default fp32 compute (as cublasGemmEx there)
    const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                        : bf16_ ? CUBLAS_COMPUTE_32F
                                                   : CUBLAS_COMPUTE_32F_PEDANTIC;
    cublas_check(cublas_api().cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    d.desc.reset(desc);
    const cublasOperation_t op_a = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    set(desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
    set(desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
    const cublasLtEpilogue_t epi = e == gemm_epilogue::bias ? CUBLASLT_EPILOGUE_BIAS
                                   : e == gemm_epilogue::dgelu ? CUBLASLT_EPILOGUE_DGELU
                                   : bias                      ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                                                               : CUBLASLT_EPILOGUE_GELU_AUX;
    set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
    point(desc, e, bias, aux);  // the heuristic reads the pointers' alignment
    if (e != gemm_epilogue::bias) set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<std::int64_t>(ldc));
    const cudaDataType_t in = bf16_ ? CUDA_R_16BF : CUDA_R_32F;
    auto layout = [](cudaDataType_t t, idx rows, idx cols, idx ld) {
      cublasLtMatrixLayout_t l = nullptr;
      cublas_check(
          cublas_api().cublasLtMatrixLayoutCreate(&l, t, static_cast<std::uint64_t>(rows),
                                                  static_cast<std::uint64_t>(cols), static_cast<std::int64_t>(ld)),
          "cublasLtMatrixLayoutCreate");
      return l;
    };
    d.a.reset(trans_b ? layout(in, K, N, ldb) : layout(in, N, K, ldb));
    d.b.reset(trans_a ? layout(in, M, K, lda) : layout(in, K, M, lda));
    d.c.reset(layout(CUDA_R_32F, N, M, ldc));
    return d;
  }
  const plan& plan_for(gemm_epilogue e, bool trans_a, bool trans_b, idx M, idx N, idx K, const float* A, idx lda,
                       const float* B, idx ldb, float* C, idx ldc, const float* bias, const float* aux,
                       const gemm_reuse& reuse) const {
    // bf16 operands: the scratch's (an allocation's) alignment, or the caller's kept buffers'
    const int aa = bf16_ ? (reuse.keep_a ? align(reuse.keep_a) : 256) : align(A);
    const int ab = bf16_ ? (reuse.kept_b ? align(reuse.kept_b) : 256) : align(B), ac = align(C);
    const plan_key k{static_cast<int>(e), trans_a, trans_b, M, N, K, lda, ldb, ldc, aa, ab, ac, align(bias),
                     align(aux), bias != nullptr, bf16_};
    if (auto it = s_->plans.find(k); it != s_->plans.end()) return it->second;
    // kept only once complete: a throw below leaves no half-made plan behind
    plan p;
    p.d = describe(e, trans_a, trans_b, M, N, K, lda, ldb, ldc, bias, aux);
    const lt_call& d = p.d;
    cublasLtMatmulPreference_t pref = nullptr;
    cublas_check(cublas_api().cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(cublas_library::cublasLtMatmulPreferenceDestroy)> own(
        pref, cublas_api().cublasLtMatmulPreferenceDestroy);
    auto pref_set = [&](cublasLtMatmulPreferenceAttributes_t what, auto v) {
      cublas_check(cublas_api().cublasLtMatmulPreferenceSetAttribute(pref, what, &v, sizeof v),
                   "cublasLtMatmulPreferenceSetAttribute");
    };
    pref_set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<std::uint64_t>(workspace_bytes));
    pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<std::uint32_t>(ab));
    pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<std::uint32_t>(aa));
    pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<std::uint32_t>(ac));
    pref_set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<std::uint32_t>(ac));
    cublasLtMatmulHeuristicResult_t r{};
    int found = 0;
    const cublasStatus_t st = cublas_api().cublasLtMatmulAlgoGetHeuristic(
        s_->lt.get(), d.desc.get(), d.a.get(), d.b.get(), d.c.get(), d.c.get(), pref, 1, &r, &found);
    // no algorithm: the separate kernels; any other failure is a bug in the descriptors
    if (st != CUBLAS_STATUS_NOT_SUPPORTED) cublas_check(st, "cublasLtMatmulAlgoGetHeuristic");
    if (st == CUBLAS_STATUS_SUCCESS && found > 0 && r.state == CUBLAS_STATUS_SUCCESS) {
      p.ok = true;
      p.algo = r.algo;
    }
    return s_->plans.emplace(k, std::move(p)).first->second;
  }
  // A's conversion: into the caller's keep_a; the one `a` holds where the caller says A is
  // the previous call's (same_a) and pointer and extent agree; else a fresh one into `a`
  // (stream order makes the reuse safe).
  const hcomm::bf16* converted_a(const float* x, std::size_t n, const gemm_reuse& r) const {
    if (r.keep_a) {
      s_->ex.for_each(n, portable::to_bf16{x, r.keep_a});
      s_->a_of = nullptr;  // `a` does not hold the previous call's A now
      return r.keep_a;
    }
    if (r.same_a && s_->a_of == x && s_->a_span == n) return s_->a.data();
    s_->a_of = x;
    s_->a_span = n;
    return converted(s_->a, x, n);
  }
  const hcomm::bf16* converted_b(const float* x, std::size_t n, const gemm_reuse& r) const {
    return r.kept_b ? r.kept_b : converted(s_->b, x, n);
  }
  const hcomm::bf16* converted(device_array<hcomm::bf16, hcomm::exec::cuda>& to, const float* x, std::size_t n) const {
    if (to.size() < n) to = device_array<hcomm::bf16, hcomm::exec::cuda>(s_->ex, n);
    s_->ex.for_each(n, portable::to_bf16{x, to.data()});
    return to.data();
  }
  static std::shared_ptr<cublasContext> make(cudaStream_t stream, bool tf32) {
    cublasHandle_t h = nullptr;
    cublas_check(cublas_api().cublasCreate(&h), "cublasCreate (is a GPU visible?)");
    std::shared_ptr<cublasContext> p(h, destroy{});
    cublas_check(cublas_api().cublasSetStream(h, stream), "cublasSetStream");
    cublas_check(cublas_api().cublasSetMathMode(h, fp32_math(tf32)), "cublasSetMathMode");
    cublas_check(cublas_api().cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
    return p;
  }
};

}  // namespace gpt
