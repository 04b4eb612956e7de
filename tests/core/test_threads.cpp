// The default thread count (hcomm/exec/threads.hpp, hcomm/transport/threads.hpp).
//
// Built twice:
//  - core_test_threads (Catch2): the rule on synthetic masks, explicit settings, the
//    launcher-only choice, concurrent first use;
//  - core_threads_mpi (HCOMM_THREADS_MPI_MAIN, run by mpiexec on one host): `default` checks,
//    in the default environment (no OMP_NUM_THREADS), that P ranks sharing one mask choose
//    max(1, CPUs / P) and that the host executor's loops run on that many threads; `bound`
//    binds each rank to CPUs of its own (sched_setaffinity; ranks share a CPU only where
//    there are fewer CPUs than ranks) and checks that each keeps them.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "hcomm/exec/host.hpp"
#include "hcomm/exec/threads.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace ex = hcomm::exec;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

int openmp_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1 << 20;
#endif
}

// Largest team a host for_each of n chunks runs with (1 without OpenMP).
int team_size_of_for_each(std::size_t n) {
  std::atomic<int> most{1};
  ex::host h;
  h.for_each(n, [&](std::size_t) {
#if defined(_OPENMP)
    int t = omp_get_num_threads(), m = most.load();
    while (t > m && !most.compare_exchange_weak(m, t)) {
    }
#endif
  });
  return most.load();
}

}  // namespace

#if !defined(HCOMM_THREADS_MPI_MAIN)
#include <catch2/catch.hpp>

TEST_CASE("threads: the rule on synthetic masks", "[threads]") {
  const ex::cpu_mask two = ex::cpu_mask::first(2), sixteen = ex::cpu_mask::first(16);

  SECTION("the whole 2-CPU machine shared by 4 ranks: 1 thread each") {
    const std::vector<ex::cpu_mask> others(3, two);
    const ex::thread_choice c = ex::fit_rule(two, others);
    CHECK(c.threads == 1);
    CHECK(c.source == "affinity 2 CPUs / 4 overlapping local ranks");
  }
  SECTION("16 CPUs shared by 4 ranks: 4 each") {
    const std::vector<ex::cpu_mask> others(3, sixteen);
    CHECK(ex::fit_rule(sixteen, others).threads == 4);
  }
  SECTION("a rank bound to 2 CPUs of its own keeps 2") {
    const std::vector<ex::cpu_mask> others = {ex::cpu_mask::of({0, 1}), ex::cpu_mask::of({4, 5}),
                                              ex::cpu_mask::of({6, 7})};
    const ex::thread_choice c = ex::fit_rule(ex::cpu_mask::of({2, 3}), others);
    CHECK(c.threads == 2);
    CHECK(c.source == "affinity 2 CPUs / 1 overlapping local rank");
  }
  SECTION("only the ranks whose masks intersect count") {
    const std::vector<ex::cpu_mask> others = {ex::cpu_mask::of({2, 3}), ex::cpu_mask::of({4, 5}),
                                              ex::cpu_mask::of({3, 70})};
    CHECK(ex::fit_rule(ex::cpu_mask::of({0, 1, 2, 3}), others).threads == 1);  // 4 CPUs / 3
    CHECK(ex::fit_rule(ex::cpu_mask::of({0, 1, 2, 3, 4, 5}), others).threads == 1);  // 6 / 4
    CHECK(ex::fit_rule(ex::cpu_mask::of({64, 65, 66, 67}), others).threads == 4);  // none: 4 / 1
  }
  SECTION("never below one, also for an empty mask") {
    const std::vector<ex::cpu_mask> others(7, ex::cpu_mask::of({0}));
    CHECK(ex::fit_rule(ex::cpu_mask::of({0}), others).threads == 1);
    CHECK(ex::fit_rule(ex::cpu_mask{}, {}).threads == 1);
  }
  SECTION("ranks known by count only: spread evenly over the launcher's CPUs") {
    // Unbound: this mask is the launcher's, so all of them overlap it.
    CHECK(ex::fit_rule(two, {}, 3, 2).threads == 1);
    CHECK(ex::fit_rule(two, {}, 3, 2).source == "affinity 2 CPUs / 4 overlapping local ranks");
    CHECK(ex::fit_rule(sixteen, {}, 3, 16).threads == 4);
    // Bound to 2 of 16 CPUs, 8 ranks: each has CPUs of its own.
    CHECK(ex::fit_rule(ex::cpu_mask::of({2, 3}), {}, 7, 16).threads == 2);
    // Bound to one of two 8-CPU sockets, 4 ranks: 2 per socket.
    CHECK(ex::fit_rule(ex::cpu_mask::first(8), {}, 3, 16).threads == 4);
    // Known masks and unknown ranks together.
    CHECK(ex::fit_rule(two, std::vector<ex::cpu_mask>{two}, 2, 2).threads == 1);
  }
  SECTION("SLURM_CPUS_PER_TASK caps the count") {
    const ex::thread_choice c = ex::cap_cpus_per_task(ex::fit_rule(sixteen, {}), 2);
    CHECK(c.threads == 2);
    CHECK(contains(c.source, "SLURM_CPUS_PER_TASK=2"));
    CHECK(ex::cap_cpus_per_task(ex::fit_rule(two, {}), 4).threads == 2);
    CHECK(ex::cap_cpus_per_task(ex::fit_rule(two, {}), 0).threads == 2);
  }
}

TEST_CASE("threads: an explicit setting wins", "[threads]") {
  ex::set_default_threads(3);
  CHECK(ex::default_threads() == 3);
  CHECK(ex::threads_source() == "explicit");
  // A fit from MPI, however many masks it saw, does not replace it.
  CHECK(ex::offer_default_threads(ex::thread_choice{1, "affinity 2 CPUs / 4 overlapping local ranks (MPI)"}, 64) == 3);
  CHECK(ex::threads_source() == "explicit");
  // The executor's own field wins over the default.
  ex::host h;
#if defined(_OPENMP)
  CHECK(h.effective_threads() == 3);
#endif
  h.threads = 5;
  CHECK(h.effective_threads() == 5);

  ex::set_default_threads(0);  // automatic again
  CHECK(ex::default_threads() >= 1);
  CHECK(ex::threads_source() != "explicit");
}

TEST_CASE("threads: fits replace the automatic choice only when they saw as many masks", "[threads]") {
  if (std::getenv("OMP_NUM_THREADS")) {
    ex::set_default_threads(0);
    CHECK(ex::threads_source() == "OMP_NUM_THREADS");
    CHECK(ex::default_threads() == std::max(1, openmp_threads()));
    return;
  }
  ex::set_default_threads(0);
  CHECK(ex::offer_default_threads(ex::thread_choice{1, "world"}, 4) == 1);
  CHECK(ex::threads_source() == "world");
  ex::offer_default_threads(ex::thread_choice{2, "sub-communicator"}, 2);  // fewer masks: ignored
  CHECK(ex::threads_source() == "world");
  ex::offer_default_threads(ex::thread_choice{1, "another world"}, 4);
  CHECK(ex::threads_source() == "another world");
  ex::set_default_threads(0);
}

TEST_CASE("threads: the launcher-only choice", "[threads]") {
  if (std::getenv("OMP_NUM_THREADS")) return;  // explicit: covered above
  const char* vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "SLURM_CPUS_PER_TASK"};
  std::vector<std::string> saved;
  std::vector<bool> had;
  for (const char* v : vars) {
    const char* s = std::getenv(v);
    had.push_back(s != nullptr);
    saved.push_back(s ? s : "");
    unsetenv(v);
  }
  const int cpus = ex::process_affinity().count();

  ex::set_default_threads(0);
  CHECK(ex::default_threads() == std::max(1, std::min(cpus, openmp_threads())));
  CHECK(ex::threads_source() == "affinity " + std::to_string(cpus) + (cpus == 1 ? " CPU" : " CPUs") +
                                    " / 1 overlapping local rank");

  if (ex::launcher_cpu_count() == cpus) {  // this mask is the parent's: 4 ranks would all share it
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
    ex::set_default_threads(0);
    CHECK(ex::default_threads() == std::max(1, std::min(cpus / 4, openmp_threads())));
    CHECK(contains(ex::threads_source(), "/ 4 overlapping local ranks (launcher: OMPI_COMM_WORLD_LOCAL_SIZE=4)"));
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  }
  if (cpus >= 2) {
    setenv("SLURM_CPUS_PER_TASK", "1", 1);
    ex::set_default_threads(0);
    CHECK(ex::default_threads() == 1);
    CHECK(contains(ex::threads_source(), "SLURM_CPUS_PER_TASK=1"));
    unsetenv("SLURM_CPUS_PER_TASK");
  }

  for (std::size_t i = 0; i < std::size(vars); ++i)
    if (had[i]) setenv(vars[i], saved[i].c_str(), 1);
  ex::set_default_threads(0);
}

TEST_CASE("threads: first use from many threads at once agrees", "[threads]") {
  ex::set_default_threads(0);
  std::vector<int> got(8, 0);
  std::vector<std::thread> pool;
  for (std::size_t i = 0; i < got.size(); ++i) pool.emplace_back([&got, i] { got[i] = ex::default_threads(); });
  for (auto& t : pool) t.join();
  for (int g : got) CHECK(g == got[0]);
  CHECK(got[0] >= 1);
}

TEST_CASE("threads: the host executor's loops run on the default count", "[threads]") {
  ex::set_default_threads(1);
  CHECK(team_size_of_for_each(64) == 1);
#if defined(_OPENMP)
  ex::set_default_threads(2);
  CHECK(team_size_of_for_each(64) == 2);
#endif
  ex::set_default_threads(0);
}

#else  // HCOMM_THREADS_MPI_MAIN: run by mpiexec

#include <mpi.h>
#include <sched.h>

#include "hcomm/algorithm/context.hpp"
#include "hcomm/transport/threads.hpp"

namespace {

int failures = 0;
int world_rank = 0;

std::vector<int> cpus_of(const ex::cpu_mask& m) {
  std::vector<int> out;
  for (std::size_t w = 0; w < m.words.size(); ++w)
    for (int b = 0; b < 64; ++b)
      if (m.words[w] >> b & 1) out.push_back(static_cast<int>(w * 64) + b);
  return out;
}

void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "core_threads_mpi (rank %d): FAILED: %s\n", world_rank, what.c_str());
}

std::string state() {
  return std::to_string(ex::default_threads()) + " threads (" + ex::threads_source() + ")";
}

std::string cpus_text(int n) { return std::to_string(n) + (n == 1 ? " CPU / " : " CPUs / "); }
std::string ranks_text(int n) { return std::to_string(n) + (n == 1 ? " overlapping local rank" : " overlapping local ranks"); }

// P ranks, one mask: max(1, CPUs / P), from the launcher's count first, then from MPI.
void run_default(int p) {
  check(std::getenv("OMP_NUM_THREADS") == nullptr, "OMP_NUM_THREADS is set: this test is of the default environment");
  const int cpus = ex::process_affinity().count();
  const int expect = std::max(1, cpus / p);

  // Before any communicator: the launcher's count of ranks on this node.
  if (std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE") && ex::launcher_cpu_count() == cpus) {
    check(ex::default_threads() == std::max(1, std::min(expect, openmp_threads())), "launcher-only choice: " + state());
    check(contains(ex::threads_source(), "(launcher: OMPI_COMM_WORLD_LOCAL_SIZE="), "launcher-only source: " + state());
  }

  // Creating an hcomm context fits the count to the masks of the local ranks.
  ex::set_default_threads(0);
  {
    hcomm::algorithm::context cx(MPI_COMM_WORLD);
  }
  check(ex::default_threads() == expect, "after a context on the world: " + state() + ", expected " + std::to_string(expect));
  check(ex::threads_source() == "affinity " + cpus_text(cpus) + ranks_text(p) + " (MPI)", "source: " + state());
  check(team_size_of_for_each(64) == expect, "host for_each ran " + std::to_string(team_size_of_for_each(64)) +
                                                 " threads, expected " + std::to_string(expect));

  // A sub-communicator sees fewer masks: the world's fit stands.
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  const std::string before = ex::threads_source();
  hcomm::mpi::fit_threads(half);
  check(ex::threads_source() == before, "a sub-communicator's fit replaced the world's: " + state());
  // ... and counts as many ranks on this machine as the world did, though it holds half of
  // them and the launcher's count is gone (an emulated node of scripts/netns-mpirun.sh):
  // what decides whether a context's waits yield the core.
  const std::string local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE") ? std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE") : "";
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  check(hcomm::mpi::ranks_on_this_host(half) == (p + 1 - world_rank % 2) / 2, "ranks of the half on this machine");
  check(hcomm::mpi::ranks_sharing_this_host(half) == p,
        "ranks sharing this machine, seen from the half: " + std::to_string(hcomm::mpi::ranks_sharing_this_host(half)));
  if (!local.empty()) setenv("OMPI_COMM_WORLD_LOCAL_SIZE", local.c_str(), 1);
  MPI_Comm_free(&half);
  // One machine, one id, on every rank.
  const std::uint64_t id = hcomm::mpi::machine_id();
  std::uint64_t lo = id, hi = id;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  check(lo == id && hi == id, "machine_id differs between the ranks of one machine");

  // An explicit setting wins over the fit.
  ex::set_default_threads(2);
  hcomm::mpi::fit_threads(MPI_COMM_WORLD);
  check(ex::default_threads() == 2 && ex::threads_source() == "explicit", "explicit setting: " + state());
  ex::set_default_threads(0);
}

// Each rank bound to CPUs of its own (or, with fewer CPUs than ranks, one CPU shared by as
// few ranks as possible): it keeps them.
void run_bound(int p) {
  const std::vector<int> all = cpus_of(ex::process_affinity());
  const int c = static_cast<int>(all.size());
  std::vector<int> mine;
  int sharing = 1;
  if (c >= p) {
    const int k = c / p;
    for (int i = 0; i < k; ++i) mine.push_back(all[static_cast<std::size_t>(world_rank * k + i)]);
  } else {
    mine.push_back(all[static_cast<std::size_t>(world_rank % c)]);
    sharing = 0;
    for (int q = 0; q < p; ++q) sharing += q % c == world_rank % c;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : mine) CPU_SET(cpu, &set);
  check(sched_setaffinity(0, sizeof set, &set) == 0, "sched_setaffinity");
  const int k = static_cast<int>(mine.size());
  const int expect = std::max(1, k / sharing);
  const std::string source = "affinity " + cpus_text(k) + ranks_text(sharing);

  // The launcher's count alone, when the launcher holds the CPUs the ranks were bound within
  // and the binding tiles them evenly (what that rule assumes).
  ex::set_default_threads(0);
  if (std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE") && ex::launcher_cpu_count() == c && (c >= p || p % c == 0) &&
      !std::getenv("OMP_NUM_THREADS"))
    check(ex::default_threads() == std::max(1, std::min(expect, openmp_threads())) &&
              contains(ex::threads_source(), source + " (launcher:"),
          "bound, launcher-only: " + state() + ", expected " + std::to_string(expect) + " (" + source + ")");

  // From the masks themselves.
  if (!std::getenv("OMP_NUM_THREADS")) {
    hcomm::mpi::fit_threads(MPI_COMM_WORLD);
    check(ex::default_threads() == expect && ex::threads_source() == source + " (MPI)",
          "bound: " + state() + ", expected " + std::to_string(expect) + " (" + source + " (MPI))");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (hcomm::mpi::ranks_on_this_host(MPI_COMM_WORLD) != p) {
      if (world_rank == 0) std::printf("core_threads_mpi: ranks on several hosts; this test needs one\n");
    } else if (mode == "default") {
      run_default(p);
    } else if (mode == "bound") {
      run_bound(p);
    } else {
      check(false, "usage: core_threads_mpi default|bound");
    }
  } catch (const std::exception& e) {
    check(false, e.what());
  }
  if (failures == 0) std::printf("core_threads_mpi (rank %d): %s: %s\n", world_rank, mode.c_str(), state().c_str());
  int any = failures;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}

#endif
