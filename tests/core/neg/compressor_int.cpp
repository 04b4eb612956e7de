// Must not compile: Compressor takes a compression tag.
// expect: hcomm: Compressor<P> takes Lossless, LosslessDim<D>, Lossy<Rate> or Uncompressed
#include "hcomm/policy/compressor.hpp"
hcomm::Compressor<int> policy;
