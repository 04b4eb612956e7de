// Must compile: the valid neighbours of every case in neg/, through the same harness
// (check_compile_fails.cmake in MODE=pass), so that a neg/ case fails for its own reason.
#include "hcomm/codec/codec.hpp"
#include "hcomm/exec/exec.hpp"
#include "hcomm/policy/axis.hpp"
#include "hcomm/policy/compressor.hpp"
hcomm::Compressor<hcomm::Lossy<3>> lossy_min;
hcomm::Compressor<hcomm::Lossy<64>> lossy_max;
hcomm::Compressor<hcomm::LosslessDim<32>> lossless_max;
hcomm::Compressor<hcomm::Uncompressed> raw;
hcomm::ParallelAxis<hcomm::TP> axis;
hcomm::codec::engine<hcomm::exec::host>* engine = nullptr;
// team_kernel_in_for_each / team_kernel_max_team: the same kernel launched, with a valid bound.
struct team_k {
  static constexpr int max_team = 1024;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team&) const {}
};
void run_team() { hcomm::exec::host{}.launch(4, 64, team_k{}); }
