// Must not compile: a team kernel is run by launch, never by for_each (one GPU thread would
// run the whole team's phases alone).
// expect: hcomm: this functor is a team kernel
#include "hcomm/exec/host.hpp"
struct k {
  static constexpr int max_team = 64;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team&) const {}
  void operator()(std::size_t) const {}
};
void run() { hcomm::exec::host{}.for_each(4, k{}); }
