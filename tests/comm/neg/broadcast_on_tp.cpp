// expect: offers_broadcast
#include <span>
#include "hcomm/comm/communicator.hpp"
void f(hcomm::communicator<hcomm::ParallelAxis<hcomm::TP>>& c, std::span<float> x) { c.broadcast(x, 0); }
