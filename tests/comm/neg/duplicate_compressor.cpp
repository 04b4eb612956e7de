// expect: hcomm: communicator<\.\.\.>: duplicate Compressor policy
#include "hcomm/comm/communicator.hpp"
using C = hcomm::communicator<hcomm::Compressor<hcomm::Lossless>, hcomm::ParallelAxis<hcomm::PP>,
                              hcomm::Compressor<hcomm::Lossy<8>>>;
C* make(MPI_Comm c) { return new C(c); }
