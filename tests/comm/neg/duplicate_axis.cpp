// expect: hcomm: communicator<\.\.\.>: duplicate ParallelAxis policy
#include "hcomm/comm/communicator.hpp"
using C = hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>, hcomm::ParallelAxis<hcomm::TP>>;
C* make(MPI_Comm c) { return new C(c); }
