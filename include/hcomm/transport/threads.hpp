// hcomm/transport/threads.hpp: fits the default thread count (hcomm/exec/threads.hpp) to the
// ranks of a communicator that share this node, from their actual affinity masks.
//
//   hcomm::mpi::fit_threads(MPI_COMM_WORLD);    // collective; every hcomm communicator calls it
//   int t = hcomm::exec::default_threads();     // max(1, my CPUs / local ranks overlapping them)
//
// The ranks of the communicator on this machine (mpi::machine_id: the kernel's, so the ranks
// of other network namespaces on it count, which MPI places on other nodes) exchange their
// masks; each counts those that intersect its own. Ranks on this machine that the
// communicator does not contain are known only by number (mpi::ranks_sharing_this_host) and
// counted as the launcher-only rule counts them. The result replaces the automatic default
// unless an earlier fit saw more masks, and never an explicit setting (set_default_threads,
// OMP_NUM_THREADS).
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "hcomm/transport/mpi.hpp"
#include "hcomm/exec/threads.hpp"

namespace hcomm::mpi {

// Collective over c. ranks_sharing: mpi::ranks_sharing_this_host(c) where the caller has it
// already (-1: computed here). Returns the default thread count after the fit.
inline int fit_threads(MPI_Comm c, int ranks_sharing = -1) {
  if (ranks_sharing < 0) ranks_sharing = ranks_sharing_this_host(c);
  // The ranks of c on this machine (machine_id: also those in other network or UTS
  // namespaces of it, which MPI counts as other nodes), split by a 31-bit colour of the id;
  // the whole 64-bit id travels with each mask, so a colour shared by two machines merges
  // nothing.
  const std::uint64_t id = machine_id();
  MPI_Comm node = MPI_COMM_NULL;
  HCOMM_MPI_CHECK(MPI_Comm_split(c, static_cast<int>(id & 0x7fffffffu), rank(c), &node));
  const owned_comm node_owner(node);
  const int me = rank(node), p_all = size(node);

  const exec::cpu_mask mine = exec::process_affinity();
  int words = static_cast<int>(mine.words.size());
  HCOMM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &words, 1, MPI_INT, MPI_MAX, node));
  const std::size_t row = static_cast<std::size_t>(words) + 1;  // [id, mask words...]
  std::vector<std::uint64_t> all(row * static_cast<std::size_t>(p_all), 0);
  std::vector<std::uint64_t> own(row, 0);
  own[0] = id;
  std::copy(mine.words.begin(), mine.words.end(), own.begin() + 1);
  HCOMM_MPI_CHECK(MPI_Allgather(own.data(), static_cast<int>(row), MPI_UINT64_T, all.data(), static_cast<int>(row),
                                MPI_UINT64_T, node));

  std::vector<exec::cpu_mask> others;
  int p = 1;  // ranks of c on this machine, this one included
  for (int q = 0; q < p_all; ++q) {
    const auto* r = all.data() + static_cast<std::size_t>(q) * row;
    if (q == me || r[0] != id) continue;
    ++p;
    exec::cpu_mask m;
    m.words.assign(r + 1, r + row);
    others.push_back(std::move(m));
  }
  const int unknown = std::max(0, ranks_sharing - p);
  exec::thread_choice choice = exec::fit_rule(mine, others, unknown, unknown > 0 ? exec::launcher_cpu_count() : 0);
  choice.source += unknown > 0 ? " (MPI, " + std::to_string(unknown) + " by count only)" : std::string(" (MPI)");
  choice = exec::cap_cpus_per_task(std::move(choice), exec::slurm_cpus_per_task());
  return exec::offer_default_threads(choice, p);
}

}  // namespace hcomm::mpi
