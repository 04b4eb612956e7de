// hcomm/comm/mpi.hpp: the MPI wrapper, where headers written before the transport layer look
// for it; it lives in the transport layer (hcomm/transport/mpi.hpp).
#pragma once
#include "hcomm/transport/mpi.hpp"
