// tests/core/kokkos_session.hpp: Kokkos must be initialised before the first executor call
// and finalised after the last; the test main is shared with other tests, so a static object
// in each test binary that uses Kokkos does it.
#pragma once
#include <Kokkos_Core.hpp>

namespace hcomm_test {

struct kokkos_session {
  kokkos_session() {
    if (!Kokkos::is_initialized()) Kokkos::initialize();
  }
  ~kokkos_session() {
    if (Kokkos::is_initialized()) Kokkos::finalize();
  }
};

}  // namespace hcomm_test
