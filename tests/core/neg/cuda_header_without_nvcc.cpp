// Must not compile: the CUDA executor is CUDA code and says how to include it otherwise.
// expect: hcomm/exec/cuda.hpp is CUDA code: compile this file with nvcc
#include "hcomm/exec/cuda.hpp"
