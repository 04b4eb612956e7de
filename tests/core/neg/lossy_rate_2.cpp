// Must not compile: 2 bits per value cannot hold a 1-D ZFP block's header.
// expect: hcomm: Lossy<Rate>: ZFP needs at least 3 bits per value
#include "hcomm/policy/compressor.hpp"
hcomm::Lossy<2> tag;
