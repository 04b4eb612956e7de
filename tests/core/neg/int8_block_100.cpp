// Must not compile: int8 blocks are a power of two from 8 to 512 values.
// expect: hcomm: Int8<Block>: the block is a power of two from 8 to 512 values
#include "hcomm/policy/compressor.hpp"
hcomm::Compressor<hcomm::Int8<100>> policy;
