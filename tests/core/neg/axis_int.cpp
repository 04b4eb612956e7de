// Must not compile: ParallelAxis takes an axis tag, not an arbitrary type.
// expect: hcomm: ParallelAxis<A> takes DP, PP or TP
#include "hcomm/policy/axis.hpp"
hcomm::ParallelAxis<int> axis;
