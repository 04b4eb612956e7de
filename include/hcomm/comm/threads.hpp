// hcomm/comm/threads.hpp: the thread fit over a communicator, where the facade's users look
// for it; it lives in the transport layer (hcomm/transport/threads.hpp).
#pragma once
#include "hcomm/transport/threads.hpp"
