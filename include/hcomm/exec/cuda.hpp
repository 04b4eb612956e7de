// hcomm/exec/cuda.hpp: the CUDA executor. Runs the same kernel functors as the host
// executor, as grid-stride kernels on one stream, and team kernels (exec/team.hpp) a team
// per thread block (exec/cuda_team.hpp), in device memory.
//
//   cudaStream_t s;  cudaStreamCreate(&s);
//   hcomm::exec::cuda ex{s};                    // does not own s: destroy it after ex
//   hcomm::codec::engine<hcomm::exec::cuda> eng{ex};
//   eng.compress_async(cfg, d_in, n, d_frame, cap, d_frame_bytes);  // never waits on the host
//
// Every member is stream-ordered on the executor's stream and returns without waiting,
// except to_host (it must hand the bytes to the host, so it synchronises the stream) and
// synchronize. Kernel functors are copied to the device by value: their call operator must
// be HCOMM_HOST_DEVICE and they must be trivially copyable (hold pointers, not containers).
//
// Thread safety: an executor object caches the scan's workspace and two device attributes
// in mutable members, so one object must not be used from two host threads at once. Copies
// are independent (a copy shares the stream but not the workspace); give each thread its
// own copy, ideally with its own stream. An executor is tied to the CUDA device that is
// current at its first call.
//
// This header is CUDA code: it compiles only under nvcc. hcomm/exec/exec.hpp includes it
// when the build has CUDA (HCOMM_HAS_CUDA) and the translation unit is compiled by nvcc.
#pragma once

#if !defined(__CUDACC__)
#error "hcomm/exec/cuda.hpp is CUDA code: compile this file with nvcc (a .cu source, or LANGUAGE CUDA), or include hcomm/exec/exec.hpp, which adds the CUDA executor only under nvcc"
#else

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <atomic>
#include <memory>

#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/cuda_team.hpp"
#include "hcomm/exec/scan_kernels.hpp"
#include "hcomm/exec/team.hpp"

// Throws hcomm::error(cuda_failure, "file:line: expr: <cudaGetErrorString>") when a CUDA
// runtime call does not return cudaSuccess.
#define HCOMM_CUDA_CHECK(expr)                                                                   \
  do {                                                                                           \
    const cudaError_t hcomm_cuda_err_ = (expr);                                                  \
    if (hcomm_cuda_err_ != cudaSuccess)                                                          \
      ::hcomm::fail(::hcomm::errc::cuda_failure, std::string(__FILE__) + ":" +                   \
                                                     HCOMM_STRINGIFY(__LINE__) + ": " #expr ": " + \
                                                     ::cudaGetErrorString(hcomm_cuda_err_));     \
  } while (0)

namespace hcomm::exec {

namespace detail {

// One thread per index while the grid lasts, then strides: the grid is capped at a few
// waves of the device so a launch over 2^30 chunks does not create 2^22 blocks.
template <class F>
__global__ void cuda_for_each_kernel(std::size_t n, F f) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

}  // namespace detail

// Number of usable CUDA devices; 0 (with the reason in *why) when there is no driver, no
// device, or the runtime fails. Never throws: tests use it to decide whether to skip.
inline int cuda_device_count(std::string* why = nullptr) noexcept {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    (void)cudaGetLastError();  // clear it so that later calls do not report it again
    return 0;
  }
  if (count == 0 && why) *why = "cudaGetDeviceCount returned 0";
  return count;
}

// A point in a stream's work (cudaEvent_t, created without timing). Copies share the event.
class cuda_event {
 public:
  cuda_event() = default;
  explicit cuda_event(cudaStream_t s) {
    cudaEvent_t e = nullptr;
    HCOMM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ev_ = std::shared_ptr<CUevent_st>(e, [](cudaEvent_t x) { (void)cudaEventDestroy(x); });
    HCOMM_CUDA_CHECK(cudaEventRecord(e, s));
  }
  cudaEvent_t get() const noexcept { return ev_.get(); }
  // True once the stream passed the point (an event never recorded is complete).
  bool ready() const {
    if (!ev_) return true;
    const cudaError_t e = cudaEventQuery(ev_.get());
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    HCOMM_CUDA_CHECK(e);
    return true;
  }
  void synchronize() const {
    if (ev_) HCOMM_CUDA_CHECK(cudaEventSynchronize(ev_.get()));
  }

 private:
  std::shared_ptr<CUevent_st> ev_;
};

class cuda {
 public:
  using event_type = cuda_event;
  static constexpr bool is_device = true;
  static constexpr const char* name = "cuda";
  static constexpr unsigned block_size = 256;  // 256 x 255 registers still fits one SM
  static constexpr int scan_team = 256;        // team size of exclusive_scan's kernels

  // Default: the legacy default stream. The executor does not own the stream. (Not one
  // explicit constructor with a default argument: engine's `Exec ex = {}` needs an implicit
  // default constructor.)
  cuda() noexcept = default;
  explicit cuda(cudaStream_t stream) noexcept : stream_(stream) {}

  // A copy shares the stream and the cached device facts, never the scan workspace (which
  // each object frees on destruction).
  cuda(const cuda& o) noexcept : stream_(o.stream_), max_blocks_(o.max_blocks_), pools_(o.pools_) {}
  cuda& operator=(const cuda& o) noexcept {
    if (this != &o) {
      release_scan_workspace();
      stream_ = o.stream_;
      max_blocks_ = o.max_blocks_;
      pools_ = o.pools_;
    }
    return *this;
  }
  cuda(cuda&& o) noexcept
      : stream_(o.stream_), scan_tmp_(o.scan_tmp_), scan_tmp_bytes_(o.scan_tmp_bytes_), max_blocks_(o.max_blocks_),
        pools_(o.pools_) {
    o.scan_tmp_ = nullptr;
    o.scan_tmp_bytes_ = 0;
  }
  cuda& operator=(cuda&& o) noexcept {
    if (this != &o) {
      release_scan_workspace();
      stream_ = o.stream_;
      scan_tmp_ = o.scan_tmp_;
      scan_tmp_bytes_ = o.scan_tmp_bytes_;
      max_blocks_ = o.max_blocks_;
      pools_ = o.pools_;
      o.scan_tmp_ = nullptr;
      o.scan_tmp_bytes_ = 0;
    }
    return *this;
  }
  ~cuda() { release_scan_workspace(); }

  cudaStream_t stream() const noexcept { return stream_; }
  // Makes the stream's device the calling host thread's current device. CUDA keeps the
  // current device per thread, and launches, device queries and shared-memory opt-ins act on
  // it: another thread that uses this executor (a communication thread) calls this first.
  // The legacy default stream (null) is each thread's own device's: nothing to change.
  // Needs CUDA 12.8 (cudaStreamGetDevice); older toolkits refuse it clearly.
  void make_current() const {
    if (stream_ == nullptr) return;
#if CUDART_VERSION >= 12080
    HCOMM_CUDA_CHECK(cudaSetDevice(stream_device()));
#else
    fail(errc::unsupported, "exec::cuda::make_current needs CUDA 12.8 or newer (cudaStreamGetDevice)");
#endif
  }
  // The device the stream's work runs on: the stream's own (CUDA 12.8 on), else, and for the
  // legacy default stream, the calling thread's current device.
  int stream_device() const {
    int dev = 0;
#if CUDART_VERSION >= 12080
    if (stream_ != nullptr) {
      HCOMM_CUDA_CHECK(cudaStreamGetDevice(stream_, &dev));
      return dev;
    }
#endif
    HCOMM_CUDA_CHECK(cudaGetDevice(&dev));
    return dev;
  }

  // Bytes of scan workspace this object holds (grown on demand, never shrunk).
  std::size_t scan_workspace_bytes() const noexcept { return scan_tmp_bytes_; }

  template <class F>
  void for_each(std::size_t n, const F& f) const {
    detail::reject_team_kernel_in_for_each<F>();
    static_assert(std::is_trivially_copyable_v<F>,
                  "hcomm: a CUDA kernel functor is copied to the device by value; it must be trivially copyable "
                  "(hold raw pointers and sizes, not containers or references)");
    if (n == 0) return;
    const std::size_t want = (n + block_size - 1) / block_size;
    const std::size_t cap = static_cast<std::size_t>(max_blocks());
    const unsigned blocks = static_cast<unsigned>(want < cap ? want : cap);
    detail::cuda_for_each_kernel<F><<<blocks, block_size, 0, stream_>>>(n, f);
    HCOMM_CUDA_CHECK(cudaGetLastError());
  }

  // Team kernel (exec/team.hpp): a team per thread block, league-strided over a grid of at
  // most a few waves. Team size is checked against the kernel's maxThreadsPerBlock (its
  // register use), shared memory above 48 KiB (static and dynamic) is opted in.
  template <class K>
  void launch(std::size_t league, int team_size, const K& k) const {
    static_assert(std::is_trivially_copyable_v<K>,
                  "hcomm: a CUDA team kernel is copied to the device by value; it must be trivially copyable");
    detail::check_team_launch("cuda", k, team_size, max_team_scratch_bytes);
    if (league == 0) return;
    const auto fn = &detail::cuda_team_kernel<K>;
    const int max_threads = kernel_max_threads(fn);
    if (team_size > max_threads)
      fail(errc::invalid_argument, std::string("hcomm: cuda launch of ") + detail::kernel_name<K>() + ": team size " +
                                       std::to_string(team_size) + " exceeds the kernel's maxThreadsPerBlock " +
                                       std::to_string(max_threads) + " (its register use)");
    const std::size_t smem = k.scratch_bytes(team_size);
    // past 48 KiB of static (the collectives' area) and dynamic shared memory together
    if (smem + detail::cuda_collective_bytes > 48 * 1024)
      HCOMM_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    const std::size_t cap = static_cast<std::size_t>(max_blocks());
    const unsigned blocks = static_cast<unsigned>(league < cap ? league : cap);
    detail::cuda_team_kernel<K><<<blocks, static_cast<unsigned>(team_size), smem, stream_>>>(league, smem, k);
    HCOMM_CUDA_CHECK(cudaGetLastError());
  }

  // out[i] = sum of in[0..i), out[n] = total; in and out may be the same pointer (not
  // otherwise overlapping). The team scan of exec/scan_kernels.hpp (what host-check runs in
  // CI), no host synchronisation; its tile totals live in a workspace kept in this object.
  void exclusive_scan(const std::uint64_t* in, std::uint64_t* out, std::size_t n) const {
    void* tmp = scan_workspace((scan_partials(n, scan_team) + 1) * sizeof(std::uint64_t));
    run_exclusive_scan(*this, in, out, n, scan_team, static_cast<std::uint64_t*>(tmp));
  }

  // Streams and events: a point in this stream's work, and work enqueued after wait(e) runs
  // after that point (another stream's, typically), without the host waiting.
  cuda_event record() const { return cuda_event(stream_); }
  void wait(const cuda_event& e) const {
    if (e.get() != nullptr) HCOMM_CUDA_CHECK(cudaStreamWaitEvent(stream_, e.get(), 0));
  }

  // Device memory, stream-ordered (cudaMallocAsync) where the device supports memory pools,
  // else cudaMalloc. 0 bytes gives nullptr. At least 256-byte aligned.
  void* allocate(std::size_t bytes) const {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    if (memory_pools()) {
      HCOMM_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream_));
    } else {
      HCOMM_CUDA_CHECK(cudaMalloc(&p, bytes));
    }
    return p;
  }
  // Stream-ordered free: work already queued on the stream may still use p. Never throws
  // (it runs in destructors); a failure here leaves the error for the next checked call.
  void deallocate(void* p) const noexcept {
    if (p == nullptr) return;
    if (pools_ != 0) {
      if (cudaFreeAsync(p, stream_) == cudaSuccess) return;
      (void)cudaGetLastError();
    }
    (void)cudaFree(p);
  }

  // cudaMemcpyDefault: with unified addressing the runtime knows where each pointer lives.
  void copy(void* dst, const void* src, std::size_t bytes) const {
    if (bytes) HCOMM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  }
  // The only synchronising data member: the bytes are on the host when it returns.
  void to_host(void* host_dst, const void* src, std::size_t bytes) const {
    if (bytes) HCOMM_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDefault, stream_));
    HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  // Pageable host memory is staged before the call returns; pinned host memory must stay
  // valid until the stream reaches the copy.
  void from_host(void* dst, const void* host_src, std::size_t bytes) const {
    if (bytes) HCOMM_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyDefault, stream_));
  }
  void fill_zero(void* dst, std::size_t bytes) const {
    if (bytes) HCOMM_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_));
  }
  void synchronize() const { HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  // Host staging (exec/host_staging.hpp): page-locked host memory (cudaHostAlloc, portable to
  // every context), which copy() moves to and from device memory asynchronously on the
  // stream. Freeing waits for the stream first (work queued on it may still copy from or to
  // the block), so that a staging buffer regrown under a pending copy stays valid.
  void* allocate_host_pinned(std::size_t bytes) const {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    HCOMM_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
  }
  void deallocate_host_pinned(void* p) const noexcept {
    if (p == nullptr) return;
    if (cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
    if (cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
  }

  // The collectives' entry points call this on every buffer they are given: p must be memory
  // the device reaches as device memory (device or managed; a null pointer passes, for empty
  // buffers). Host memory, pageable or page-locked, is refused with an error naming the
  // argument: passing a host buffer to a device context is a mix-up, not a slow path. So is
  // device memory of another GPU than the stream's (one rank per GPU: another rank's device).
  void check_device_pointer(const void* p, const char* what) const {
    if (p == nullptr) return;
    cudaPointerAttributes a{};
    const cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      fail(errc::invalid_argument, std::string("hcomm: ") + what + " is not CUDA memory (cudaPointerGetAttributes: " +
                                       cudaGetErrorString(e) + "); a context on exec::cuda takes device buffers");
    }
    if (a.type == cudaMemoryTypeManaged) return;
    if (a.type == cudaMemoryTypeDevice) {
      const int mine = stream_device();
      if (a.device == mine) return;
      fail(errc::invalid_argument, std::string("hcomm: ") + what + " is memory of CUDA device " +
                                       std::to_string(a.device) + ", but this context's stream runs on device " +
                                       std::to_string(mine) + " (each rank's buffers belong on its own GPU)");
    }
    fail(errc::invalid_argument, std::string("hcomm: ") + what + " is " +
                                     (a.type == cudaMemoryTypeHost ? "page-locked host memory" : "host memory") +
                                     ", but this context runs on exec::cuda and takes device (or managed) memory "
                                     "(copy it to the device first, or use a host context)");
  }

 private:
  // A kernel's maxThreadsPerBlock on the current device, queried once per kernel and device
  // (launch is on the codecs' per-frame path).
  template <class Fn>
  static int kernel_max_threads(Fn fn) {
    constexpr int max_devices = 64;
    static std::atomic<int> cached[max_devices] = {};
    int dev = 0;
    HCOMM_CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= 0 && dev < max_devices) {
      if (const int v = cached[dev].load(std::memory_order_relaxed); v > 0) return v;
    }
    cudaFuncAttributes attr{};
    HCOMM_CUDA_CHECK(cudaFuncGetAttributes(&attr, fn));
    if (dev >= 0 && dev < max_devices) cached[dev].store(attr.maxThreadsPerBlock, std::memory_order_relaxed);
    return attr.maxThreadsPerBlock;
  }

  int max_blocks() const {
    if (max_blocks_ == 0) {
      int dev = 0, sms = 0;
      HCOMM_CUDA_CHECK(cudaGetDevice(&dev));
      HCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      // 8 blocks of 256 threads fill an SM (2048 threads); 4 waves smooth out uneven chunks.
      max_blocks_ = (sms > 0 ? sms : 1) * 32;
    }
    return max_blocks_;
  }
  bool memory_pools() const {
    if (pools_ < 0) {
      int dev = 0, v = 0;
      HCOMM_CUDA_CHECK(cudaGetDevice(&dev));
      HCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMemoryPoolsSupported, dev));
      pools_ = v != 0 ? 1 : 0;
    }
    return pools_ == 1;
  }
  void* scan_workspace(std::size_t bytes) const {
    if (bytes > scan_tmp_bytes_) {
      // Stream-ordered: scans already queued keep the old block until they are done.
      deallocate(scan_tmp_);
      scan_tmp_ = nullptr;
      scan_tmp_bytes_ = 0;
      const std::size_t grown = bytes + bytes / 2;  // fewer regrowths when n creeps up
      scan_tmp_ = allocate(grown);
      scan_tmp_bytes_ = grown;
    }
    return scan_tmp_;
  }
  void release_scan_workspace() noexcept {
    deallocate(scan_tmp_);
    scan_tmp_ = nullptr;
    scan_tmp_bytes_ = 0;
  }

  cudaStream_t stream_ = nullptr;
  mutable void* scan_tmp_ = nullptr;
  mutable std::size_t scan_tmp_bytes_ = 0;
  mutable int max_blocks_ = 0;  // 0: not queried yet
  mutable int pools_ = -1;      // -1: not queried yet
};

}  // namespace hcomm::exec

#endif  // __CUDACC__
