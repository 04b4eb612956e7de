// expect: hcomm: ErrorFeedback is for lossy DP gradients
#include "hcomm/comm/communicator.hpp"
using C = hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossless>, hcomm::ErrorFeedback>;
C* make(MPI_Comm c) { return new C(c); }
