// hcomm/exec/threads.hpp: how many threads the host executor, and every OpenMP loop of hcomm,
// msparse and the examples, runs with by default: the CPUs of this process's affinity mask
// divided by the ranks on this host whose masks overlap it.
//
//   int t = hcomm::exec::default_threads();          // process-wide, cached, thread-safe; >= 1
//   std::string why = hcomm::exec::threads_source(); // "affinity 2 CPUs / 4 overlapping local ranks (MPI)"
//   hcomm::exec::set_default_threads(4);              // an explicit setting wins (0: automatic again)
//
// Why: ranks that share cores and each start one OpenMP thread per CPU oversubscribe them,
// and OpenMP threads spin while they wait, so every fork/join waits for descheduled threads.
// Ranks bound to CPUs of their own (Slurm's --cpus-per-task, mpirun --map-by ...:PE=n) share
// nothing and keep all of theirs.
//
// What wins, first to last: an executor's own `threads` field (exec::host::threads);
// set_default_threads(n); OMP_NUM_THREADS in the environment (a user who set it meant it; the
// count is OpenMP's reading of it); the rule (fit_rule). The rule's inputs come from:
//  - the launcher, until MPI says more: the ranks on this node (OMPI_COMM_WORLD_LOCAL_SIZE,
//    MPI_LOCALNRANKS, SLURM_NTASKS_PER_NODE), whose masks are unknown: when this process's
//    mask is the launcher's (nobody bound the ranks) they all overlap it;
//  - hcomm::mpi::fit_threads(comm) (hcomm/transport/threads.hpp, called when an hcomm
//    communicator is created): the masks of the ranks that share this node's memory. The
//    fit that saw the most masks stands (a sub-communicator sees fewer ranks than the world).
// SLURM_CPUS_PER_TASK caps the rule's count (Slurm's share per task), and OpenMP's own
// count for the calling thread (omp_get_max_threads(): omp_set_num_threads) caps it too, so
// an application that lowered OpenMP's count keeps it.
//
// The project's OpenMP loops pass num_threads(default_threads()); the library does not call
// omp_set_num_threads: that sets the count only for regions the calling thread starts, so it
// would miss loops run from other threads, and it would overwrite a count the application
// chose. An application that wants its own loops on this count calls
// omp_set_num_threads(hcomm::exec::default_threads()) itself, as examples/gpt/train_gpt does.
#pragma once
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif
#include <unistd.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace hcomm::exec {

// A set of CPU numbers (an affinity mask), 64 to a word.
struct cpu_mask {
  std::vector<std::uint64_t> words;

  static cpu_mask of(std::initializer_list<int> cpus) {
    cpu_mask m;
    for (int c : cpus) m.add(c);
    return m;
  }
  // The first n CPUs.
  static cpu_mask first(int n) {
    cpu_mask m;
    for (int c = 0; c < n; ++c) m.add(c);
    return m;
  }
  void add(int cpu) {
    if (cpu < 0) return;
    const std::size_t w = static_cast<std::size_t>(cpu) / 64;
    if (words.size() <= w) words.resize(w + 1, 0);
    words[w] |= std::uint64_t{1} << (cpu % 64);
  }
  int count() const noexcept {
    int n = 0;
    for (std::uint64_t w : words) n += __builtin_popcountll(w);
    return n;
  }
  bool intersects(const cpu_mask& o) const noexcept {
    const std::size_t n = std::min(words.size(), o.words.size());
    for (std::size_t i = 0; i < n; ++i)
      if (words[i] & o.words[i]) return true;
    return false;
  }
};

// Online CPUs of this host.
inline int online_cpu_count() noexcept {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// The affinity mask of process pid (0: this one); empty if it cannot be read.
inline cpu_mask affinity_of(int pid = 0) {
  cpu_mask m;
#if defined(__linux__)
  for (int bits = 1024; bits <= (1 << 20); bits *= 2) {  // grown while the kernel's mask is larger
    cpu_set_t* set = CPU_ALLOC(bits);
    if (!set) break;
    const std::size_t bytes = CPU_ALLOC_SIZE(bits);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(pid, bytes, set) == 0) {
      for (int c = 0; c < bits; ++c)
        if (CPU_ISSET_S(c, bytes, set)) m.add(c);
      CPU_FREE(set);
      return m;
    }
    CPU_FREE(set);
    if (errno != EINVAL) break;
  }
#else
  (void)pid;
#endif
  return m;
}

// This process's mask (all online CPUs where the mask cannot be read).
inline cpu_mask process_affinity() {
  cpu_mask m = affinity_of(0);
  return m.count() > 0 ? m : cpu_mask::first(online_cpu_count());
}

// CPUs the launcher of this process may use (its parent's mask, which a launcher that binds
// ranks does not narrow for itself), or the online CPUs where it cannot be read.
inline int launcher_cpu_count() {
  const int n = affinity_of(static_cast<int>(getppid())).count();
  return n > 0 ? n : online_cpu_count();
}

struct thread_choice {
  int threads = 1;
  std::string source;
};

// The rule: threads = max(1, CPUs in `mine` / ranks on this host whose masks overlap it,
// this one included). `others`: the masks of the other ranks on this host; `unknown`: further
// ranks on this host whose masks are not known, assumed spread evenly over the launcher's
// `launcher_cpus` CPUs, so that floor(unknown * |mine| / launcher_cpus) of them overlap
// (all of them when `mine` spans the launcher's CPUs, none when each rank has CPUs of its own).
inline thread_choice fit_rule(const cpu_mask& mine, std::span<const cpu_mask> others, int unknown = 0,
                              int launcher_cpus = 0) {
  const int cpus = std::max(1, mine.count());
  int overlapping = 1;
  for (const cpu_mask& o : others) overlapping += mine.intersects(o) ? 1 : 0;
  if (unknown > 0) {
    const long long pool = std::max(cpus, launcher_cpus);
    overlapping += static_cast<int>(std::min<long long>(unknown, static_cast<long long>(unknown) * cpus / pool));
  }
  thread_choice c;
  c.threads = std::max(1, cpus / overlapping);
  c.source = "affinity " + std::to_string(cpus) + (cpus == 1 ? " CPU / " : " CPUs / ") + std::to_string(overlapping) +
             (overlapping == 1 ? " overlapping local rank" : " overlapping local ranks");
  return c;
}

// Slurm's CPUs per task (SLURM_CPUS_PER_TASK), 0 when not given.
inline int slurm_cpus_per_task() {
  const char* v = std::getenv("SLURM_CPUS_PER_TASK");
  const long n = v ? std::strtol(v, nullptr, 10) : 0;
  return n > 0 && n < (1 << 20) ? static_cast<int>(n) : 0;
}

// Caps a choice at Slurm's CPUs per task (0: none given).
inline thread_choice cap_cpus_per_task(thread_choice c, int cpus_per_task) {
  if (cpus_per_task > 0 && c.threads > cpus_per_task) {
    c.threads = cpus_per_task;
    c.source += ", SLURM_CPUS_PER_TASK=" + std::to_string(cpus_per_task);
  }
  return c;
}

namespace detail {

inline int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return n > 0 && n < (1 << 20) ? static_cast<int>(n) : 0;
}

// OMP_NUM_THREADS as OpenMP reads it (the first level of a list), 0 when unset or invalid.
inline int omp_num_threads_env() {
  if (env_int("OMP_NUM_THREADS") <= 0) return 0;
#if defined(_OPENMP)
  return std::max(1, omp_get_max_threads());
#else
  return env_int("OMP_NUM_THREADS");
#endif
}

// The launcher's count of ranks on this node (1 when no launcher says), and which variable.
inline int launcher_local_ranks(std::string* var) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const int n = env_int(name); n > 0) {
      if (var) *var = name;
      return n;
    }
  return 1;
}

struct threads_state {
  std::mutex m;
  std::atomic<int> threads{0};  // 0: not chosen yet
  std::string source;
  std::atomic<bool> fixed{false};  // set_default_threads or OMP_NUM_THREADS: no fit replaces it
  int masks_seen = 0;  // ranks whose masks the current automatic choice knew (1: only this one)
};

inline threads_state& state() {
  static threads_state s;
  return s;
}

// The choice before any MPI fit (s.m held).
inline void choose_from_environment(threads_state& s) {
  if (const int n = omp_num_threads_env(); n > 0) {
    s.source = "OMP_NUM_THREADS";
    s.fixed.store(true);
    s.masks_seen = 0;
    s.threads.store(n, std::memory_order_release);
    return;
  }
  std::string var;
  const int local = launcher_local_ranks(&var);
  const cpu_mask mine = process_affinity();
  thread_choice c = fit_rule(mine, {}, local - 1, local > 1 ? launcher_cpu_count() : 0);
  if (local > 1) c.source += " (launcher: " + var + "=" + std::to_string(local) + ")";
  c = cap_cpus_per_task(std::move(c), slurm_cpus_per_task());
  s.source = std::move(c.source);
  s.fixed.store(false);
  s.masks_seen = 1;
  s.threads.store(c.threads, std::memory_order_release);
}

inline void ensure_chosen(threads_state& s) {
  if (s.threads.load(std::memory_order_relaxed) == 0) choose_from_environment(s);
}

// OpenMP's count for the calling thread, when it is below an automatic choice.
inline int openmp_cap() {
#if defined(_OPENMP)
  return std::max(1, omp_get_max_threads());
#else
  return 1 << 20;
#endif
}

}  // namespace detail

// The default thread count (>= 1). Thread-safe; chosen on first use, refined by
// hcomm::mpi::fit_threads.
inline int default_threads() {
  detail::threads_state& s = detail::state();
  int t = s.threads.load(std::memory_order_acquire);
  if (t == 0) {
    std::lock_guard<std::mutex> lock(s.m);
    detail::ensure_chosen(s);
    t = s.threads.load(std::memory_order_relaxed);
  }
  if (s.fixed) return t;
  return std::max(1, std::min(t, detail::openmp_cap()));
}

// Why default_threads() is what it is: "explicit", "OMP_NUM_THREADS", "omp_set_num_threads",
// or the rule's inputs ("affinity 2 CPUs / 4 overlapping local ranks (MPI)").
inline std::string threads_source() {
  detail::threads_state& s = detail::state();
  std::lock_guard<std::mutex> lock(s.m);
  detail::ensure_chosen(s);
  if (!s.fixed && detail::openmp_cap() < s.threads.load(std::memory_order_relaxed)) return "omp_set_num_threads";
  return s.source;
}

// An explicit default (n >= 1) that nothing else replaces; n <= 0 returns to the automatic
// choice, from the environment again (until the next fit_threads).
inline void set_default_threads(int n) {
  detail::threads_state& s = detail::state();
  std::lock_guard<std::mutex> lock(s.m);
  if (n > 0) {
    s.source = "explicit";
    s.fixed.store(true);
    s.masks_seen = 0;
    s.threads.store(n, std::memory_order_release);
  } else {
    choose_from_environment(s);
  }
}

// Offers a choice made from the masks of `masks_seen` ranks on this host (this one
// included): it replaces an automatic choice made from no more masks, never an explicit one.
// Returns the default after.
inline int offer_default_threads(const thread_choice& c, int masks_seen) {
  detail::threads_state& s = detail::state();
  {
    std::lock_guard<std::mutex> lock(s.m);
    detail::ensure_chosen(s);
    if (!s.fixed && masks_seen >= s.masks_seen) {
      s.source = c.source;
      s.masks_seen = masks_seen;
      s.threads.store(std::max(1, c.threads), std::memory_order_release);
    }
  }
  return default_threads();
}

}  // namespace hcomm::exec
