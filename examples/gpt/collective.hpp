// examples/gpt/collective.hpp: outcomes agreed by every rank, and a watchdog, so that no rank
// is left waiting in a collective that another rank will never reach.
//
//   auto v = gpt::agree(ok, why);              // collective: same verdict on every rank
//   if (!v.ok) throw gpt::stopped{2, v.what};  // every rank throws; main prints once, exits 2
//
// The rule of train_gpt: an operation that can fail on some ranks only (opening a file,
// writing a checkpoint, reading one) is followed by agree() before any rank communicates
// again; an error that was not agreed is a bug or a fault of this rank alone, and main ends
// the whole job with MPI_Abort after printing it (instead of leaving the others waiting).
#pragma once
#include <mpi.h>

#include <exception>
#include <limits>
#include <string>

namespace gpt {

// Thrown on every rank at the same point of the run, after they agreed that it cannot go on.
// main prints `what` once (rank 0; empty: already printed) and exits with `code`.
struct stopped : std::exception {
  int code = 2;
  std::string message;
  stopped(int c, std::string m) : code(c), message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
};

// An exception's message without hcomm's "hcomm: <code>: " prefix (the reason a user reads).
inline std::string reason_of(const std::exception& e) {
  std::string w = e.what();
  if (w.rfind("hcomm: ", 0) == 0) {
    const auto colon = w.find(": ", 7);
    if (colon != std::string::npos) w = w.substr(colon + 2);
  }
  return w;
}

struct verdict {
  bool ok = true;
  int first_bad = -1;  // lowest rank that failed
  std::string what;    // its reason, on every rank
};

// Collective over `comm`: every rank says whether its part succeeded; every rank returns the
// same verdict, carrying the reason of the lowest failing rank.
inline verdict agree(bool ok, const std::string& why, MPI_Comm comm = MPI_COMM_WORLD) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int first = ok ? std::numeric_limits<int>::max() : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
  verdict v;
  if (first == std::numeric_limits<int>::max()) return v;
  v.ok = false;
  v.first_bad = first;
  int len = rank == first ? static_cast<int>(why.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  v.what.resize(static_cast<std::size_t>(len));
  if (rank == first) v.what = why;
  MPI_Bcast(v.what.data(), len, MPI_CHAR, first, comm);
  return v;
}

// Runs `f` (local work that may throw) and agrees on the outcome: every rank gets the same
// verdict.
template <class F>
verdict agree_on(F&& f, MPI_Comm comm = MPI_COMM_WORLD) {
  std::string why;
  bool ok = true;
  try {
    f();
  } catch (const std::exception& e) {
    ok = false;
    why = reason_of(e);
  }
  return agree(ok, why, comm);
}

// agree_on(), then returns normally on every rank, or every rank throws
// gpt::stopped(code, "<prefix>rank R: <reason>").
template <class F>
void agreed(F&& f, int code, const std::string& prefix, MPI_Comm comm = MPI_COMM_WORLD) {
  const verdict v = agree_on(static_cast<F&&>(f), comm);
  if (!v.ok) throw stopped{code, prefix + "rank " + std::to_string(v.first_bad) + ": " + v.what};
}

}  // namespace gpt
