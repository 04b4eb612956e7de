// hcomm/transport/threads.hpp: fits the default thread count (hcomm/exec/threads.hpp) to the
// ranks of a communicator that share this node, from their actual affinity masks.
//
//   hcomm::mpi::fit_threads(MPI_COMM_WORLD);    // collective; every hcomm communicator calls it
//   int t = hcomm::exec::default_threads();     // max(1, my CPUs / local ranks overlapping them)
//
// The ranks that share memory with this one (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED)
// exchange their masks; each counts those that intersect its own. Ranks on this host that
// the communicator does not contain, or that MPI places on another node (network
// namespaces), are known only by number (mpi::ranks_sharing_this_host) and counted as the
// launcher-only rule counts them. The result replaces the automatic default unless an
// earlier fit saw more masks, and never an explicit setting (set_default_threads,
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
  MPI_Comm node = MPI_COMM_NULL;
  HCOMM_MPI_CHECK(MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, rank(c), MPI_INFO_NULL, &node));
  const owned_comm node_owner(node);
  const int me = rank(node), p = size(node);

  const exec::cpu_mask mine = exec::process_affinity();
  int words = static_cast<int>(mine.words.size());
  HCOMM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &words, 1, MPI_INT, MPI_MAX, node));
  std::vector<std::uint64_t> all(static_cast<std::size_t>(words) * static_cast<std::size_t>(p), 0);
  std::vector<std::uint64_t> own(static_cast<std::size_t>(words), 0);
  std::copy(mine.words.begin(), mine.words.end(), own.begin());
  HCOMM_MPI_CHECK(MPI_Allgather(own.data(), words, MPI_UINT64_T, all.data(), words, MPI_UINT64_T, node));

  std::vector<exec::cpu_mask> others;
  for (int q = 0; q < p; ++q) {
    if (q == me) continue;
    exec::cpu_mask m;
    m.words.assign(all.begin() + static_cast<std::ptrdiff_t>(q) * words,
                   all.begin() + static_cast<std::ptrdiff_t>(q + 1) * words);
    others.push_back(std::move(m));
  }
  const int unknown = std::max(0, ranks_sharing - p);
  exec::thread_choice choice = exec::fit_rule(mine, others, unknown, unknown > 0 ? exec::launcher_cpu_count() : 0);
  choice.source += unknown > 0 ? " (MPI, " + std::to_string(unknown) + " by count only)" : std::string(" (MPI)");
  choice = exec::cap_cpus_per_task(std::move(choice), exec::slurm_cpus_per_task());
  return exec::offer_default_threads(choice, p);
}

}  // namespace hcomm::mpi
