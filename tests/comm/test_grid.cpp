// Grid coordinates, sub-communicators and pipeline neighbours for every factorisation of
// the world size (8 ranks: all 10 ordered triples), and the error for sizes that do not fit.
#include <mpi.h>

#include <string>
#include <vector>

#include "hcomm/topology/grid.hpp"
#include "mpi_check.hpp"

static void check_grid(int dp, int pp, int tp) {
  const std::string tag = "grid " + std::to_string(dp) + "x" + std::to_string(pp) + "x" + std::to_string(tp);
  hcomm::grid g(dp, pp, tp);
  const int w = t::world_rank();
  CHECK(g.world_rank() == w && g.world_size() == dp * pp * tp, tag);
  CHECK(g.dp_size() == dp && g.pp_size() == pp && g.tp_size() == tp, tag);
  // Megatron order: world = tp + TP*(dp + DP*pp)
  CHECK(g.tp_rank() + tp * (g.dp_rank() + dp * g.pp_rank()) == w, tag + " rank order");
  CHECK(g.tp_rank() == w % tp && g.dp_rank() == (w / tp) % dp && g.pp_rank() == w / (tp * dp), tag + " coords");
  CHECK(g.world_rank_of(g.dp_rank(), g.pp_rank(), g.tp_rank()) == w, tag);
  // Each axis communicator: rank == coordinate, members vary only that coordinate.
  for (hcomm::axis_id a : {hcomm::axis_id::dp, hcomm::axis_id::pp, hcomm::axis_id::tp}) {
    MPI_Comm c = g.comm(a);
    int r = -1, s = -1;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &s);
    CHECK(r == g.rank(a) && s == g.size(a), tag + " axis " + std::string(hcomm::to_string(a)));
    std::vector<int> members(s);
    MPI_Allgather(&w, 1, MPI_INT, members.data(), 1, MPI_INT, c);
    for (int k = 0; k < s; ++k) {
      int d = g.dp_rank(), p = g.pp_rank(), q = g.tp_rank();
      (a == hcomm::axis_id::dp ? d : a == hcomm::axis_id::pp ? p : q) = k;
      CHECK(members[k] == g.world_rank_of(d, p, q),
            tag + " member " + std::to_string(k) + " of " + std::string(hcomm::to_string(a)));
    }
  }
  const int prev = g.pp_rank() > 0 ? w - tp * dp : -1;
  const int next = g.pp_rank() + 1 < pp ? w + tp * dp : -1;
  CHECK(g.prev_stage() == prev && g.next_stage() == next, tag + " stages");
  int wr = -1;
  MPI_Comm_rank(g.world(), &wr);
  CHECK(wr == w, tag + " world dup");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int n = t::world_size();
  int combos = 0;
  for (int dp = 1; dp <= n; ++dp)
    for (int pp = 1; pp <= n; ++pp)
      if (n % (dp * pp) == 0) {
        check_grid(dp, pp, n / (dp * pp));
        ++combos;
      }
  if (n == 8) CHECK(combos == 10, "all 10 factorisations of 8 visited");
  // Moving a grid keeps its communicators.
  {
    hcomm::grid a(1, 1, n);
    hcomm::grid b(std::move(a));
    int s = 0;
    MPI_Comm_size(b.comm(hcomm::axis_id::tp), &s);
    CHECK(s == n, "moved grid");
  }
  EXPECT_ERROR(hcomm::grid(n + 1, 1, 1), hcomm::errc::invalid_argument,
               "= " + std::to_string(n + 1) + " ranks, but the communicator has " + std::to_string(n), "too many");
  EXPECT_ERROR(hcomm::grid(0, n, 1), hcomm::errc::invalid_argument, "dp=0", "zero size");
  EXPECT_ERROR(hcomm::grid(2, 3, 5), hcomm::errc::invalid_argument, "30 ranks", "product");
  return t::finish("test_grid");
}
