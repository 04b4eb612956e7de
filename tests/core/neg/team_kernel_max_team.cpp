// Must not compile: a team kernel's compile-time team bound must be a multiple of 32 in 32..1024.
// expect: hcomm: a team kernel's max_team must be a multiple of 32
#include "hcomm/exec/host.hpp"
struct k {
  static constexpr int max_team = 2048;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team&) const {}
};
void run() { hcomm::exec::host{}.launch(4, 64, k{}); }
