// Must not compile: more bits per value than raw doubles.
// expect: hcomm: Lossy<Rate>: rates above 64 bits per value
#include "hcomm/policy/compressor.hpp"
hcomm::Lossy<65> tag;
