// Must not compile: a lossy rate of 0 bits per value.
// expect: hcomm: Lossy<Rate> needs Rate > 0 bits per value
#include "hcomm/policy/compressor.hpp"
hcomm::Lossy<0> tag;
