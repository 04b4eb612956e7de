// tests/comm/mpi_check.hpp: a tiny harness for MPI test programs (plain mains).
// CHECK records a failure with rank, file:line and a message; finish() agrees on the
// result across ranks and returns the process exit code.
#pragma once
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hcomm/core/checksum.hpp"
#include "hcomm/core/error.hpp"

namespace t {

inline int failures = 0;
inline int checks = 0;
inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int r = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &r);
  return r;
}

inline void check(bool ok, const std::string& what, const char* file, int line) {
  ++checks;
  if (ok) return;
  ++failures;
  if (failures <= 20) std::fprintf(stderr, "[rank %d] FAIL %s:%d: %s\n", world_rank(), file, line, what.c_str());
}

// Expects `f()` to throw hcomm::error with code `code` and a message containing `needle`.
template <class F>
void expect_error(F&& f, hcomm::errc code, const std::string& needle, const std::string& what, const char* file,
                  int line) {
  try {
    f();
    check(false, what + ": no hcomm::error thrown", file, line);
  } catch (const hcomm::error& e) {
    const bool ok = e.code() == code && std::string(e.what()).find(needle) != std::string::npos;
    check(ok, what + ": got '" + e.what() + "'", file, line);
    if (ok && world_rank() == 0) std::printf("  ok, error says: %s\n", e.what());
  }
}

// Same bytes on every rank of comm (64-bit hash, min == max).
inline bool identical(const void* p, std::size_t bytes, MPI_Comm comm) {
  const std::uint64_t h = hcomm::hash64(static_cast<const unsigned char*>(p), bytes, 7);
  std::uint64_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  return lo == hi;
}

inline bool all_true(bool ok, MPI_Comm comm = MPI_COMM_WORLD) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, comm);
  return v == 1;
}

inline int finish(const char* name) {
  int f = failures, c = checks;
  MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &c, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank() == 0)
    std::printf("%s: %d checks on %d ranks, %d failed -> %s\n", name, c, world_size(), f, f ? "FAIL" : "PASS");
  MPI_Finalize();
  return f ? 1 : 0;
}

}  // namespace t

#define CHECK(cond, msg) ::t::check((cond), std::string(#cond) + " | " + (msg), __FILE__, __LINE__)
#define EXPECT_ERROR(expr, code, needle, what) ::t::expect_error([&] { expr; }, code, needle, what, __FILE__, __LINE__)
