// expect: hcomm: with_error_feedback<S>: S's DP rate is below 6 bits per value
#include "hcomm/comm/scheme.hpp"
hcomm::scheme::with_error_feedback<hcomm::scheme::zhybrid<16, 4>> s;
