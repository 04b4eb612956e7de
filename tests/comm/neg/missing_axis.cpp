// expect: hcomm: communicator<\.\.\.>: missing ParallelAxis policy
#include "hcomm/comm/communicator.hpp"
using C = hcomm::communicator<hcomm::Compressor<hcomm::Lossless>>;
C* make(MPI_Comm c) { return new C(c); }
