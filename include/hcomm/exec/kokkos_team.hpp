// hcomm/exec/kokkos_team.hpp: the team handle of the Kokkos backend (exec/team.hpp). A team
// is one member of a Kokkos::TeamPolicy of team size 1; its T threads are the vector lanes of
// a ThreadVectorRange (Debian's Serial build has a team size of 1, so lanes carry the
// threads), a phase ends with team_barrier(), and scratch is the policy's level-0 team
// scratch (team_shmem). Per-thread state and collectives are host-fast's (exec/host_team.hpp):
// this mapping is for Kokkos' host execution spaces (Serial, OpenMP, Threads); a device space
// would map threads to its own lanes and is refused at compile time.
#pragma once
#include <Kokkos_Core.hpp>

#include <cstddef>

#include "hcomm/exec/host_team.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::exec::detail {

template <class Member>
class kokkos_team : public host_team<false> {
 public:
  kokkos_team(const Member& m, int size, std::size_t league, std::size_t scratch_bytes, host_arena& arena)
      : host_team<false>(size, league, static_cast<std::byte*>(m.team_shmem().get_shmem(scratch_bytes > 0 ? scratch_bytes : 1)),
                         scratch_bytes, arena),
        member_(m) {}

  template <class F>
  void for_threads(F&& f) {
    if (in_phase_) report("for_threads inside a phase (phases do not nest)");
    in_phase_ = true;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member_, size()), [&](const int t) { f(t); });
    member_.team_barrier();
    in_phase_ = false;
  }

 private:
  const Member& member_;
};

}  // namespace hcomm::exec::detail
