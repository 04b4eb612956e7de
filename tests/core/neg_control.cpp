// Must compile: the valid neighbours of every case in neg/, through the same harness
// (check_compile_fails.cmake in MODE=pass), so that a neg/ case fails for its own reason.
#include "hcomm/codec/codec.hpp"
#include "hcomm/exec/exec.hpp"
#include "hcomm/policy/axis.hpp"
#include "hcomm/policy/compressor.hpp"
hcomm::Compressor<hcomm::Lossy<3>> lossy_min;
hcomm::Compressor<hcomm::Lossy<64>> lossy_max;
hcomm::Compressor<hcomm::LosslessDim<32>> lossless_max;
hcomm::Compressor<hcomm::Uncompressed> raw;
hcomm::ParallelAxis<hcomm::TP> axis;
hcomm::codec::engine<hcomm::exec::host>* engine = nullptr;
