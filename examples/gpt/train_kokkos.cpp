// examples/gpt/train_kokkos.cpp: train_gpt's --device kokkos (train_kokkos.hpp). The model's
// portable kernels (examples/gpt/portable/) run through hcomm::exec::kokkos<> on Kokkos's
// default execution space, its buffers in that space's memory; the GEMMs are the host BLAS,
// so the space is a host one, and the collectives go through hcomm::bundle; the trainer is
// trainer.hpp's.
#include "train_kokkos.hpp"

#include <Kokkos_Core.hpp>

#include "hcomm/comm/bundle.hpp"
#include "hcomm/exec/kokkos.hpp"
#include "ops_portable.hpp"
#include "trainer.hpp"

namespace gpt {

run_result train_on_kokkos(const config& c, const run_options& o, const hcomm::grid& g,
                           const hcomm::axis_options& opt) {
  using exec = hcomm::exec::kokkos<>;
  static_assert(!exec::is_device, "--device kokkos: the GEMMs are the host BLAS, so a host execution space");
  using ops = portable_ops<exec>;
  const Kokkos::ScopeGuard guard;  // the model's arrays are freed before Kokkos is finalised
  auto on = [&]<class Scheme>() {
    hcomm::bundle<Scheme> comm(g, opt);
    return trainer<hcomm::bundle<Scheme>, ops>::make(c, o, g, comm)->run();
  };
  if (o.scheme == "none") return on.template operator()<hcomm::scheme::none>();
  return on.template operator()<hcomm::scheme::zhybrid<16, 8>>();
}

}  // namespace gpt
