// expect: hcomm: ErrorFeedback over Lossy<Rate> needs Rate >= 6
#include "hcomm/comm/communicator.hpp"
using C = hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<4>>, hcomm::ErrorFeedback>;
C* make(MPI_Comm c) { return new C(c); }
