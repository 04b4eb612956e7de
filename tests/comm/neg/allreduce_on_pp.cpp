// expect: offers_reduce
#include <span>
#include "hcomm/comm/communicator.hpp"
void f(hcomm::communicator<hcomm::ParallelAxis<hcomm::PP>>& c, std::span<float> x) { c.allreduce(x); }
