// The umbrella header compiles on its own and exposes every layer of msparse.
#include "msparse/msparse.hpp"

#include <catch2/catch.hpp>

TEST_CASE("msparse.hpp exposes policies - schedule - topology - attention - flops", "[umbrella]") {
  static_assert(msparse::growth_policy<msparse::Growth<msparse::Mixed<>>>);
  static_assert(msparse::sparsity_phase_policy<msparse::SparsityPhase<msparse::Restore>>);
  msparse::gpt_shape g;
  g.layers = 1;
  g.C = 16;
  g.heads = 2;
  g.T = 32;
  g.vocab = 20;
  msparse::mst_options o;
  o.total_steps = 100;
  o.update_interval = 10;
  msparse::sparse_topology topo(msparse::gpt_linear_layers(g), msparse::schedule::mst(o),
                                msparse::growth_rule_from_name("mst"), msparse::distribution_kind::erk, 1);
  topo.init();
  CHECK(topo.density() == 1.0);
  msparse::flop_counter fc(g, 1);
  const msparse::attention::hybrid h({msparse::attention::pattern::local, 8}, 32, 8);
  CHECK(fc.step(topo, 0, h.work_fraction(topo.sched(), 0)).reduction() > 1.0);
#if __has_include("msparse/layer/sparse_linear.hpp")
  // The sparse linear layer (developed alongside) comes with the umbrella too.
  CHECK(sizeof(msparse::layer::sparse_linear<>) > 0);
#endif
}
