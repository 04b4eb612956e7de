// Must not compile: Compressor takes a compression tag.
// expect: hcomm: Compressor<P> takes Lossless, LosslessDim<D>, Lossy<Rate>, Cast<BF16>, Int8<Block> or Uncompressed
#include "hcomm/policy/compressor.hpp"
hcomm::Compressor<int> policy;
