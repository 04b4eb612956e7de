// Communicators on CUDA device memory through hcomm::cuda_staging (MPI program, 2+ ranks):
// for none, mpc and zfp:8, allreduce / reduce_scatter / allgather / broadcast / send+recv on
// device buffers must give exactly the bytes that the same communicator gives on host
// buffers. Without a usable device every rank prints "SKIPPED: ..." and exits 77 (ctest:
// skipped).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "hcomm/comm/communicator.hpp"
#include "hcomm/comm/cuda_staging.hpp"

namespace {

int failures = 0;
void check(bool ok, const std::string& what, int rank) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  }
}

std::vector<float> field(std::size_t n, int rank, int salt) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(std::sin(1e-4 * static_cast<double>(i) * (rank + 1) + salt) + 0.01 * rank);
  return x;
}

struct device_buffer {
  float* p = nullptr;
  explicit device_buffer(std::size_t n) { HCOMM_CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(float))); }
  ~device_buffer() { cudaFree(p); }
  void put(const std::vector<float>& x) {
    HCOMM_CUDA_CHECK(cudaMemcpy(p, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  std::vector<float> get(std::size_t n) const {
    std::vector<float> x(n);
    HCOMM_CUDA_CHECK(cudaMemcpy(x.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return x;
  }
};

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  int usable = probe == cudaSuccess && devices > 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!usable) {
    std::printf("SKIPPED: no CUDA device on every rank (%s)\n",
                probe == cudaSuccess ? "device count 0" : cudaGetErrorString(probe));
    MPI_Finalize();
    return 77;
  }
  HCOMM_CUDA_CHECK(cudaSetDevice(rank % devices));
  cudaStream_t stream;
  HCOMM_CUDA_CHECK(cudaStreamCreate(&stream));
  {
    hcomm::cuda_staging stage(stream);
    const std::size_t m = (std::size_t{1} << 19) + 3, n = m * static_cast<std::size_t>(size);  // above 1 MiB
    for (const char* codec : {"none", "mpc", "zfp:8"}) {
      hcomm::runtime_communicator dev(MPI_COMM_WORLD, codec), ref(MPI_COMM_WORLD, codec);
      const std::string c = codec;
      {  // allreduce
        auto x = field(n, rank, 1);
        device_buffer d(n);
        d.put(x);
        stage.allreduce(dev, d.p, n);
        HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
        ref.allreduce(std::span<float>(x));
        check(same_bytes(d.get(n), x), c + " allreduce equals the host result", rank);
      }
      {  // reduce_scatter and allgather
        const auto in = field(n, rank, 2);
        device_buffer din(n), dout(m), dall(n);
        din.put(in);
        stage.reduce_scatter(dev, din.p, m, dout.p);
        stage.allgather(dev, dout.p, m, dall.p);
        HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
        std::vector<float> out(m), all(n);
        ref.reduce_scatter(std::span<const float>(in), std::span<float>(out));
        ref.allgather(std::span<const float>(out), std::span<float>(all));
        check(same_bytes(dout.get(m), out), c + " reduce_scatter equals the host result", rank);
        check(same_bytes(dall.get(n), all), c + " allgather equals the host result", rank);
      }
      {  // broadcast from the last rank
        auto x = field(n, rank, 3);
        device_buffer d(n);
        d.put(x);
        stage.broadcast(dev, d.p, n, size - 1);
        HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
        ref.broadcast(std::span<float>(x), size - 1);
        check(same_bytes(d.get(n), x), c + " broadcast equals the host result", rank);
      }
      if (size >= 2 && rank < 2) {  // rank 0 sends to rank 1, through device memory on both ends
        MPI_Comm pair;
        MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &pair);
        hcomm::runtime_communicator p2p(pair, codec), p2p_ref(pair, codec);
        const auto x = field(m, 0, 4);
        device_buffer d(m);
        if (rank == 0) {
          d.put(x);
          stage.send(p2p, d.p, m, 1, 5);
          p2p_ref.send(std::span<const float>(x), 1, 6);
        } else {
          stage.recv(p2p, d.p, m, 0, 5);
          HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
          std::vector<float> want(m);
          p2p_ref.recv(std::span<float>(want), 0, 6);
          check(same_bytes(d.get(m), want), c + " send/recv equals the host result", rank);
        }
        MPI_Comm_free(&pair);
      } else if (size >= 2) {
        MPI_Comm pair;
        MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, rank, &pair);
      }
    }
  }
  HCOMM_CUDA_CHECK(cudaStreamDestroy(stream));
  int bad = failures;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d failure(s)\n", bad ? "FAILED" : "passed", bad);
  MPI_Finalize();
  return bad ? 1 : 0;
}
