// Must not compile: MPC's delta dimension is at most 32.
// expect: hcomm: Lossless MPC dimension must be 0 .auto. or 1..32
#include "hcomm/policy/compressor.hpp"
hcomm::LosslessDim<33> tag;
