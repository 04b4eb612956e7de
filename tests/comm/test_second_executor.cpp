// The collectives on a second executor: every operation (ring allreduce, reduce-scatter,
// allgather, with and without error feedback; broadcast; point-to-point) runs on an
// algorithm::basic_context<exec::host_check> (device code paths, shuffled work items,
// poisoned allocations, in host memory so that MPI reaches it) and on the host context, and
// the results, residuals and byte counts must be bitwise the same. Raw (below the threshold),
// the identity codec through the ring, mpc, zfp, bf16 and int8; float and double; several
// segments.
//
// Built twice: as is (host_check over transport::mpi_host, which reads its memory directly),
// and with HCOMM_TEST_STAGED (host_check over transport::mpi_staged: every frame and every
// uncompressed message copied through host staging, which host_check poisons, so a frame not
// staged arrives as 0xA5 bytes and fails the comparison); the second also checks the run-time
// transport choice and that mpi_device refuses an MPI without CUDA support. Built a third
// time with HCOMM_TEST_LOCKSTEP: host_check over transport::mpi_exact (NCCL's rules: exact
// sizes, no tags, queued groups; the ring in rounds, algorithm/ring_lockstep.hpp), which must
// give the message ring's bytes; that build also checks the lockstep rules' errors.
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/exec/host_check.hpp"
#include "hcomm/transport/device_transport.hpp"
#include "mpi_check.hpp"

#if defined(HCOMM_TEST_LOCKSTEP)
#include "hcomm/transport/mpi_exact.hpp"
#endif

namespace {

namespace alg = hcomm::algorithm;
#if defined(HCOMM_TEST_LOCKSTEP)
using check_transport = hcomm::transport::mpi_exact;
static_assert(hcomm::transport::mpi_exact::stages<hcomm::exec::host_check>);
static_assert(!hcomm::transport::mpi_exact::stages<hcomm::exec::host>);
#elif defined(HCOMM_TEST_STAGED)
using check_transport = hcomm::transport::mpi_staged;
static_assert(hcomm::transport::mpi_staged::stages<hcomm::exec::host_check>);
static_assert(!hcomm::transport::mpi_staged::stages<hcomm::exec::host>);
#else
using check_transport = hcomm::transport::mpi_host;
#endif
using check_context = alg::basic_context<hcomm::exec::host_check, check_transport>;
static_assert(std::is_same_v<alg::context, alg::basic_context<hcomm::exec::host, hcomm::transport::mpi_host>>);
static_assert(hcomm::transport::mpi_host::reaches<hcomm::exec::host_check>);

template <class T>
std::vector<T> data_of(int rank, std::size_t n, int salt) {
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = static_cast<T>(std::sin(0.003 * double(i) + rank + salt) * (1.0 + 0.5 * rank) + 1e-3 * double(i % 17));
  return x;
}

template <class T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

struct setting {
  const char* codec;
  std::size_t threshold;
  bool native;
};

template <class T>
void run(const setting& s, std::size_t m) {
  const int p = t::world_size(), r = t::world_rank();
  alg::options opt;
  opt.threshold_bytes = s.threshold;
  opt.segment_bytes = 1024;
  opt.native_uncompressed = s.native;
  alg::context hx(MPI_COMM_WORLD, opt, "host");
  check_context dx(MPI_COMM_WORLD, opt, check_transport::name);
  const auto cfg = hcomm::codec::parse_config(s.codec);
  const bool lossy = hcomm::codec::is_lossy(cfg);
  const std::string tag = std::string(s.codec) + (s.native ? "" : "/ring") + " threshold=" +
                          std::to_string(s.threshold) + " m=" + std::to_string(m) +
                          (sizeof(T) == 4 ? " f32" : " f64");
  const std::size_t n = m * static_cast<std::size_t>(p);

  // allreduce, twice with error feedback when lossy (the residual carries over)
  {
    std::vector<T> a = data_of<T>(r, n, 1), b = a;
    std::vector<T> ra(lossy ? n : 0), rb(lossy ? n : 0);
    for (int step = 0; step < (lossy ? 2 : 1); ++step) {
      alg::allreduce(hx, cfg, std::span<T>(a), lossy ? ra.data() : nullptr);
      alg::allreduce(dx, cfg, std::span<T>(b), lossy ? rb.data() : nullptr);
      CHECK(same(a, b), tag + " allreduce step " + std::to_string(step));
      CHECK(same(ra, rb), tag + " allreduce residual step " + std::to_string(step));
    }
    CHECK(t::identical(a.data(), a.size() * sizeof(T), MPI_COMM_WORLD), tag + " allreduce on all ranks");
  }
  // reduce_scatter (with error feedback when lossy)
  {
    const std::vector<T> in = data_of<T>(r, n, 2);
    std::vector<T> a(m), b(m), ra(lossy ? n : 0), rb(lossy ? n : 0);
    alg::reduce_scatter(hx, cfg, std::span<const T>(in), std::span<T>(a), lossy ? ra.data() : nullptr);
    alg::reduce_scatter(dx, cfg, std::span<const T>(in), std::span<T>(b), lossy ? rb.data() : nullptr);
    CHECK(same(a, b), tag + " reduce_scatter");
    CHECK(same(ra, rb), tag + " reduce_scatter residual");
  }
  // allgather
  {
    const std::vector<T> in = data_of<T>(r, m, 3);
    std::vector<T> a(n), b(n);
    alg::allgather(hx, cfg, std::span<const T>(in), std::span<T>(a));
    alg::allgather(dx, cfg, std::span<const T>(in), std::span<T>(b));
    CHECK(same(a, b), tag + " allgather");
  }
  // broadcast from the last rank
  {
    std::vector<T> a = data_of<T>(r, n, 4), b = a;
    alg::broadcast(hx, cfg, std::span<T>(a), p - 1);
    alg::broadcast(dx, cfg, std::span<T>(b), p - 1);
    CHECK(same(a, b), tag + " broadcast");
    CHECK(t::identical(b.data(), b.size() * sizeof(T), MPI_COMM_WORLD), tag + " broadcast on all ranks");
  }
  // point-to-point around the ring: send right, receive from the left
  {
    const std::vector<T> out = data_of<T>(r, n, 5);
    std::vector<T> a(n), b(n);
    const int right = (r + 1) % p, left = (r + p - 1) % p;
    auto sa = alg::isend(hx, cfg, std::span<const T>(out), right, 11);
    auto sb = alg::isend(dx, cfg, std::span<const T>(out), right, 11);
    alg::recv(hx, cfg, std::span<T>(a), left, 11);
    alg::recv(dx, cfg, std::span<T>(b), left, 11);
    sa.wait();
    sb.wait();
    CHECK(same(a, b), tag + " send/recv");
    if (!lossy && !a.empty()) {
      const std::vector<T> expect = data_of<T>(left, n, 5);
      CHECK(same(a, expect), tag + " send/recv lossless");
    }
  }
  CHECK(hx.counters().raw_bytes == dx.counters().raw_bytes, tag + " raw bytes");
  CHECK(hx.counters().wire_bytes == dx.counters().wire_bytes, tag + " wire bytes");
}

#if defined(HCOMM_TEST_LOCKSTEP)
// What NCCL's rules refuse, said clearly; and the lockstep transport on a host executor
// (nothing staged) giving the host's bytes.
void lockstep_rules() {
  const int p = t::world_size(), r = t::world_rank();
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  alg::options opt;
  opt.threshold_bytes = 0;
  opt.segment_bytes = 1024;
  const auto cfg = hcomm::codec::parse_config("mpc");
  try {
    alg::context hx(MPI_COMM_WORLD, opt, "host");
    alg::basic_context<hcomm::exec::host, hcomm::transport::mpi_exact> lx(MPI_COMM_WORLD, opt, "mpi_exact/host");
    for (std::size_t m : {std::size_t{1}, std::size_t{513}, std::size_t{3000}}) {
      const std::size_t n = m * static_cast<std::size_t>(p);
      std::vector<float> a = data_of<float>(r, n, 6), b = a;
      alg::allreduce(hx, cfg, std::span<float>(a));
      alg::allreduce(lx, cfg, std::span<float>(b));
      CHECK(same(a, b), "mpi_exact on the host executor: allreduce m=" + std::to_string(m));
    }
  } catch (const hcomm::error& e) {
    CHECK(false, std::string("mpi_exact on the host executor: ") + e.what());
  }
  {  // the first exchange of a fresh context, both ranks of a pair sending before they receive:
     // each send's connection is set up in the background (mpi_exact models NCCL's set-up; a
     // blocking one would leave both ranks waiting in it, and this test to its timeout)
    check_context dx(MPI_COMM_WORLD, opt, "exchange");
    const int peer = (r % 2 == 0) ? r + 1 : r - 1;
    if (peer < p) {
      const std::vector<float> x = data_of<float>(r, 3000, 10);
      std::vector<float> y(3000);
      auto s = alg::isend(dx, cfg, std::span<const float>(x), peer, 6);
      auto q = alg::irecv(dx, cfg, std::span<float>(y), peer, 6);
      q.wait();
      s.wait();
      CHECK(same(y, data_of<float>(peer, 3000, 10)), "a first exchange in which both ranks send first");
    }
  }
  // two sends queued on one lane, then a collective, before the peer receives them: the
  // second send waits on the host behind the first, and the collective must move it on (the
  // peer receives both before it joins the collective). With validation, the validation's
  // small MPI collective moves it; without, the backend's collective. The collective on
  // another context too: a wait there moves this one's queues (progress_registry).
  for (const bool validate : {true, false})
    for (const bool other : {false, true}) {
      alg::options raw = opt;
      raw.threshold_bytes = std::size_t{1} << 30;  // the collective: the backend's own, uncompressed
      raw.validate = validate;
      check_context ax(MPI_COMM_WORLD, raw, "held");
      check_context bx(MPI_COMM_WORLD, raw, "collective");
      check_context& cx = other ? bx : ax;
      const int peer = (r % 2 == 0) ? r + 1 : r - 1;
      const std::vector<float> x = data_of<float>(r, 500, 11);
      std::vector<float> y1(500), y2(500), v(64, float(r + 1));
      if (peer < p && r % 2 == 0) {
        auto s1 = alg::isend(ax, cfg, std::span<const float>(x), peer, 7);
        auto s2 = alg::isend(ax, cfg, std::span<const float>(x), peer, 8);
        alg::allreduce(cx, cfg, std::span<float>(v));
        s1.wait();
        s2.wait();
      } else if (peer < p) {
        alg::recv(ax, cfg, std::span<float>(y1), peer, 7);
        alg::recv(ax, cfg, std::span<float>(y2), peer, 8);
        alg::allreduce(cx, cfg, std::span<float>(v));
        CHECK(same(y1, data_of<float>(peer, 500, 11)) && same(y2, y1),
              std::string("two sends held behind each other, then a collective; validate=") + (validate ? "on" : "off") +
                  (other ? ", on another context" : ""));
      } else {
        alg::allreduce(cx, cfg, std::span<float>(v));
      }
      CHECK(v[0] == float(p * (p + 1) / 2), "the collective after the held sends");
    }
  {  // a message to oneself would deadlock on a lane: refused before anything is queued
    check_context dx(MPI_COMM_WORLD, opt, "self");
    std::vector<float> x(100, 1.0f);
    bool refused = false;
    try {
      alg::send(dx, cfg, std::span<const float>(x), r, 3);
    } catch (const hcomm::error& e) {
      refused = e.code() == hcomm::errc::unsupported && std::string(e.what()).find("itself") != std::string::npos;
    }
    CHECK(refused, "point-to-point to oneself over mpi_exact: errc::unsupported");
  }
  {  // no tags: receives posted in another order than the sends meet a tag mismatch
    check_context dx(MPI_COMM_WORLD, opt, "order");
    dx.keep_comm_alive();
    const std::vector<float> x = data_of<float>(r, 2000, 7);
    std::vector<float> y(2000), z(2000);
    auto s1 = alg::isend(dx, cfg, std::span<const float>(x), right, 1);
    auto s2 = alg::isend(dx, cfg, std::span<const float>(x), right, 2);
    bool mismatch = false;
    try {
      auto q2 = alg::irecv(dx, cfg, std::span<float>(z), left, 2);
      auto q1 = alg::irecv(dx, cfg, std::span<float>(y), left, 1);
      q2.wait();  // meets the message with tag 1 first
    } catch (const hcomm::error& e) {
      mismatch = e.code() == hcomm::errc::mismatch && std::string(e.what()).find("order") != std::string::npos;
      if (r == 0) std::printf("out-of-order receive: %s\n", e.what());
    }
    CHECK(mismatch, "receives posted out of the senders' order: errc::mismatch naming the order");
    s1.wait();
    s2.wait();
  }
  {  // a message larger than the receive (the two ranks disagree on its size): mismatch, the lane kept
    check_context dx(MPI_COMM_WORLD, opt, "size");
    dx.keep_comm_alive();
    alg::options raw = opt;
    raw.threshold_bytes = std::size_t{1} << 30;  // uncompressed: [header][values]
    check_context ux(MPI_COMM_WORLD, raw, "raw size");
    ux.keep_comm_alive();
    const std::vector<float> x = data_of<float>(r, 600, 8);
    std::vector<float> y(500);
    auto s = alg::isend(ux, cfg, std::span<const float>(x), right, 4);
    bool mismatch = false;
    try {
      alg::recv(ux, cfg, std::span<float>(y), left, 4);
    } catch (const hcomm::error& e) {
      mismatch = e.code() == hcomm::errc::mismatch;
      if (r == 0) std::printf("larger raw message: %s\n", e.what());
    }
    CHECK(mismatch, "a raw message of another size: errc::mismatch");
    s.wait();
    // the same lanes still carry the next message in order
    std::vector<float> w(600);
    auto s2 = alg::isend(ux, cfg, std::span<const float>(x), right, 5);
    alg::recv(ux, cfg, std::span<float>(w), left, 5);
    s2.wait();
    CHECK(same(w, data_of<float>(left, 600, 8)), "the lane after a refused message");
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
#if defined(HCOMM_TEST_STAGED)
  // This MPI has no CUDA support (the test unsets any override): the default is staging, and
  // a context forced onto mpi_device says why it cannot start.
  unsetenv("HCOMM_MPI_CUDA_AWARE");
  unsetenv("HCOMM_DEVICE_TRANSPORT");
  if (hcomm::transport::mpi_library_cuda_support() != 1) {
    CHECK(hcomm::transport::default_device_transport() == hcomm::transport::device_transport::mpi_staged,
          "default device transport without CUDA-aware MPI");
    bool refused = false;
    try {
      alg::basic_context<hcomm::exec::host, hcomm::transport::mpi_device> bad(MPI_COMM_WORLD);
    } catch (const hcomm::error& e) {
      refused = e.code() == hcomm::errc::unsupported && std::string(e.what()).find("mpi_device") != std::string::npos &&
                std::string(e.what()).find("mpi_staged") != std::string::npos;
      if (t::world_rank() == 0) std::printf("mpi_device refused: %s\n", e.what());
    }
    CHECK(refused, "mpi_device without a CUDA-aware MPI: errc::unsupported naming the alternative");
  }
  setenv("HCOMM_DEVICE_TRANSPORT", "device", 1);
  CHECK(hcomm::transport::default_device_transport() == hcomm::transport::device_transport::mpi_device,
        "HCOMM_DEVICE_TRANSPORT=device");
  const char* picked = hcomm::transport::with_device_transport([](auto tr) { return decltype(tr)::name; },
                                                               hcomm::transport::device_transport::mpi_staged);
  CHECK(std::string(picked) == "mpi_staged", "with_device_transport(mpi_staged)");
  unsetenv("HCOMM_DEVICE_TRANSPORT");
  {  // HCOMM_MPI_CUDA_AWARE=1 says yes whatever MPI answers: mpi_device then starts (here on host memory)
    setenv("HCOMM_MPI_CUDA_AWARE", "1", 1);
    CHECK(hcomm::transport::default_device_transport() == hcomm::transport::device_transport::mpi_device,
          "HCOMM_MPI_CUDA_AWARE=1");
    alg::options opt;
    opt.threshold_bytes = 0;
    opt.segment_bytes = 1024;
    alg::basic_context<hcomm::exec::host_check, hcomm::transport::mpi_device> gx(MPI_COMM_WORLD, opt, "mpi_device");
    alg::context hx(MPI_COMM_WORLD, opt, "host");
    const auto cfg = hcomm::codec::parse_config("zfp:8");
    std::vector<float> a = data_of<float>(t::world_rank(), 5000, 9), b = a;
    alg::allreduce(hx, cfg, std::span<float>(a));
    alg::allreduce(gx, cfg, std::span<float>(b));
    CHECK(same(a, b), "mpi_device (forced) allreduce equals the host's");
    unsetenv("HCOMM_MPI_CUDA_AWARE");
  }
#endif
#if defined(HCOMM_TEST_STAGED) || defined(HCOMM_TEST_LOCKSTEP)
  try {  // frames larger than their ring slot (ZFP with many NaN): second parts through staging too
    alg::options opt;
    opt.threshold_bytes = 0;
    opt.segment_bytes = 1024;
    alg::context hx(MPI_COMM_WORLD, opt, "host");
    check_context dx(MPI_COMM_WORLD, opt, "staged");
    const auto cfg = hcomm::codec::parse_config("zfp:8");
    const std::size_t n = 4000 * static_cast<std::size_t>(t::world_size());
    std::vector<float> a = data_of<float>(t::world_rank(), n, 8);
    for (std::size_t i = 0; i < n; i += 2) a[i] = std::nanf("");
    std::vector<float> b = a, ga(n), gb(n);
    alg::allreduce(hx, cfg, std::span<float>(a));
    alg::allreduce(dx, cfg, std::span<float>(b));
    CHECK(same(a, b), "NaN-heavy allreduce (second parts)");
    std::vector<float> in(b.begin(), b.begin() + 4000);
    alg::allgather(hx, cfg, std::span<const float>(in), std::span<float>(ga));
    alg::allgather(dx, cfg, std::span<const float>(in), std::span<float>(gb));
    CHECK(same(ga, gb), "NaN-heavy allgather (second parts)");
    CHECK(hx.counters().wire_bytes == dx.counters().wire_bytes, "NaN-heavy wire bytes");
    CHECK(hx.counters().wire_bytes > 2 * n, "NaN-heavy frames are large");
  } catch (const hcomm::error& e) {
    CHECK(false, std::string("NaN-heavy collectives: ") + e.what());
  }
#endif
#if defined(HCOMM_TEST_LOCKSTEP)
  lockstep_rules();
#endif
  try {
    const setting settings[] = {
        {"none", std::size_t{1} << 30, true},  // everything raw: the transport's own collectives
        {"none", 0, false},                    // the identity codec through the ring
        {"mpc", 0, true},
        {"zfp:8", 0, true},
        {"zfp:16", 0, true},
        {"bf16", 0, true},                     // the baselines
        {"int8:64", 0, true},
    };
    for (const auto& s : settings)
      for (std::size_t m : {std::size_t{1}, std::size_t{7}, std::size_t{300}, std::size_t{1025}}) {
        run<float>(s, m);
        run<double>(s, m);
      }
  } catch (const hcomm::error& e) {
    CHECK(false, std::string("unexpected hcomm::error: ") + e.what());
  }
#if defined(HCOMM_TEST_LOCKSTEP)
  return t::finish("lockstep transport");
#elif defined(HCOMM_TEST_STAGED)
  return t::finish("staged transport");
#else
  return t::finish("second executor");
#endif
}
