// Must not compile: policies in the wrong slot (an axis where a compression tag belongs).
// expect: hcomm: Compressor<P> takes Lossless
#include "hcomm/policy/axis.hpp"
#include "hcomm/policy/compressor.hpp"
hcomm::Compressor<hcomm::ParallelAxis<hcomm::DP>> policy;
