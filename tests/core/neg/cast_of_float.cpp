// Must not compile: Cast takes a format tag (BF16), not a C++ type.
// expect: hcomm: Cast<Format> takes BF16
#include "hcomm/policy/compressor.hpp"
hcomm::Compressor<hcomm::Cast<float>> policy;
