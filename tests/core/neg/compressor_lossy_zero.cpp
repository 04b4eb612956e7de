// Must not compile: the wrapper validates what it wraps, so naming the policy the way users
// write it (Compressor<Lossy<0>>) already fails with the tag's message.
// expect: hcomm: Lossy<Rate> needs Rate > 0 bits per value
#include "hcomm/policy/compressor.hpp"
hcomm::Compressor<hcomm::Lossy<0>> policy;
