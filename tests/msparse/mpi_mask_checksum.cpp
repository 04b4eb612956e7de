// Run on 4 ranks (tests/msparse/CMakeLists.txt): each rank is a DP replica. Local gradients
// differ per rank and are averaged with MPI_Allreduce, as data parallelism does; the
// topology (Mixed Growing, random part included) then evolves on every rank independently.
// At every update the mask checksums are all-gathered and must agree. Negative control: a
// rank-dependent seed must make them disagree (so the comparison can fail).
#include <mpi.h>

#include <cstdio>
#include <random>
#include <vector>

#include "msparse/topology.hpp"

using namespace msparse;

namespace {
int failures = 0;
void check(bool ok, const char* what, int rank) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
  }
}

std::vector<std::uint64_t> gather(std::uint64_t h, int size) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
  MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  return all;
}
bool all_equal(const std::vector<std::uint64_t>& v) {
  for (auto x : v)
    if (x != v[0]) return false;
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  gpt_shape g;
  g.layers = 2;
  g.C = 48;
  g.vocab = 113;
  const auto layers = gpt_linear_layers(g);
  mst_options o;
  o.total_steps = 240;
  o.update_interval = 10;
  o.warmup_sparsity = 0.7;
  o.ultra_sparsity = 0.9;
  o.final_sparsity = 0.6;
  const auto sched = schedule::mst(o);

  for (const char* method : {"mst", "set", "rigl", "static"}) {
    const auto rule = growth_rule_from_name(method);
    const auto s = rule.varies_sparsity ? sched : schedule::constant(0.85, 240, 10);
    sparse_topology same(layers, s, rule, distribution_kind::erk, 2024);
    sparse_topology diff(layers, s, rule, distribution_kind::erk, 2024 + std::uint64_t(rank));
    // Weights start identical on every replica (broadcast init); gradients are local.
    std::vector<std::vector<float>> w, grad, m, v, w2, grad2;
    std::mt19937 init(1);
    std::normal_distribution<float> n(0.f, 1.f);
    for (const auto& l : layers) {
      w.emplace_back(l.size());
      for (auto& x : w.back()) x = n(init);
      grad.emplace_back(l.size());
      m.emplace_back(l.size(), 0.f);
      v.emplace_back(l.size(), 0.f);
    }
    w2 = w;
    grad2 = grad;
    std::vector<layer_tensors> t, t2;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      t.push_back({w[i].data(), grad[i].data(), m[i].data(), v[i].data()});
      t2.push_back({w2[i].data(), grad2[i].data(), nullptr, nullptr});
    }
    same.init(t);
    diff.init(t2);
    std::mt19937 local(1000u + unsigned(rank));
    int updates = 0;
    for (std::int64_t step = 1; step < 240; ++step) {
      // Fresh averaged gradients every 5th step (and on update steps); one allreduce per
      // layer keeps the test quick on an oversubscribed 2-core machine.
      const bool fresh = step % 5 == 0 || same.is_update_step(step);
      for (std::size_t i = 0; i < layers.size(); ++i) {
        if (fresh) {
          for (auto& x : grad[i]) x = n(local);
          MPI_Allreduce(MPI_IN_PLACE, grad[i].data(), int(grad[i].size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
        for (std::size_t j = 0; j < w[i].size(); ++j)
          if (same.mask_of(i)[j]) w[i][j] -= 0.01f * grad[i][j] / float(size);
        grad2[i] = grad[i];
        w2[i] = w[i];
      }
      if (same.is_update_step(step)) {
        ++updates;
        same.update(step, t);
        diff.update(step, t2);
        check(all_equal(gather(same.checksum(), size)), "identical seeds: mask checksums differ across DP ranks", rank);
        for (std::size_t i = 0; i < layers.size(); ++i)
          check(all_equal(gather(same.mask_of(i).checksum(), size)), "per-layer checksum differs across ranks", rank);
      }
    }
    const auto final_same = gather(same.checksum(), size);
    const auto final_diff = gather(diff.checksum(), size);
    check(all_equal(final_same), "final checksums differ", rank);
    if (size > 1) check(!all_equal(final_diff), "negative control: rank-dependent seeds gave equal masks", rank);
    if (rank == 0)
      std::printf("%-6s updates=%d density=%.4f checksum=%016llx (all %d ranks agree: %s)\n", method, updates,
                  same.density(), static_cast<unsigned long long>(final_same[0]), size,
                  all_equal(final_same) ? "yes" : "NO");
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("mpi_mask_checksum: %s (%d failures)\n", total == 0 ? "PASS" : "FAIL", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
