// The valid neighbours of neg/*.cpp: must compile through the same harness.
#include <span>
#include "hcomm/comm/bundle.hpp"
#include "hcomm/comm/registry.hpp"
using A = hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<8>>, hcomm::ErrorFeedback>;
using B = hcomm::communicator<hcomm::Compressor<hcomm::Lossless>, hcomm::ParallelAxis<hcomm::PP>>;
void f(A& a, B& b, hcomm::communicator<hcomm::ParallelAxis<hcomm::TP>>& t, std::span<float> x) {
  a.allreduce(x);
  a.broadcast(x, 0);
  b.send(std::span<const float>(x), 1, 0);
  t.allreduce(x);
  t.allgather(std::span<const float>(x), x);
}
hcomm::scheme::zhybrid<16, 4> s;
