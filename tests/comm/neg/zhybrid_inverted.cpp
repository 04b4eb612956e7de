// expect: hcomm: zhybrid<MpRate, DpRate>: PP/TP carry
#include "hcomm/comm/scheme.hpp"
hcomm::scheme::zhybrid<4, 16> s;
