// expect: offers_p2p
#include <span>
#include "hcomm/comm/communicator.hpp"
void f(hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>>& c, std::span<const float> x) { c.send(x, 1, 0); }
