// expect: hcomm: communicator<\.\.\.>: unknown policy
#include "hcomm/comm/communicator.hpp"
using C = hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>, int>;
C* make(MPI_Comm c) { return new C(c); }
