// examples/gpt/mfu.hpp: model FLOPs utilisation, the share of the devices' peak that a step's
// FLOPs reach.
//
//   double peak = gpt::peak_tflops("NVIDIA H200", gpt::peak_precision::bf16);  // 989 (0: unknown)
//   double u = gpt::mfu(step_flops, step_seconds, peak, ranks);                 // in [0, 1]; < 0: unknown
//
// The FLOPs are msparse::flop_counter's (2 per multiply-add over the linear layers, attention
// and BERT's MLM transform, forward and backward; the ones executed, so sparse runs count what
// they compute). The peaks are the vendors' dense tensor-core figures (without structured
// sparsity), as llm.c's mfu.h tabulates them; a name not in the table has no peak unless
// --peak-tflops gives one (CPUs always need it: their peak depends on cores, clocks and vector
// units that the process cannot read reliably).
#pragma once
#include <cstddef>
#include <string_view>

namespace gpt {

enum class peak_precision { fp32, tf32, bf16 };

struct device_peak {
  std::string_view name;  // a substring of the CUDA device name
  double fp32, tf32, bf16;  // TFLOP/s: CUDA cores, TF32 tensor cores, BF16 tensor cores (fp32 accumulate)
};

// A name matches where it is followed by the end, a space or '-' ("L4" is not "L40"); longer
// names first where one starts another ("H100 PCIe" before "H100").
inline constexpr device_peak device_peaks[] = {
    {"H200", 67.0, 494.7, 989.4},       // H200 SXM
    {"H100 PCIe", 51.2, 378.0, 756.0},
    {"H100", 67.0, 494.7, 989.4},       // H100 SXM ("NVIDIA H100 80GB HBM3")
    {"A100", 19.5, 156.0, 312.0},       // SXM and PCIe
    {"L4", 30.3, 60.0, 121.0},
    {"RTX 4090", 82.6, 82.6, 165.2},
};

inline bool device_name_matches(std::string_view device, std::string_view name) {
  for (std::size_t at = device.find(name); at != std::string_view::npos; at = device.find(name, at + 1)) {
    const std::size_t end = at + name.size();
    if (end == device.size() || device[end] == ' ' || device[end] == '-') return true;
  }
  return false;
}

// The peak of one device named `device` at `p`, in TFLOP/s; 0 when the name is not in the table.
inline double peak_tflops(std::string_view device, peak_precision p) {
  for (const device_peak& d : device_peaks)
    if (device_name_matches(device, d.name))
      return p == peak_precision::fp32 ? d.fp32 : p == peak_precision::tf32 ? d.tf32 : d.bf16;
  return 0.0;
}

// FLOPs of one step over `ranks` devices of `peak_tflops_each` (one device per rank), taking
// `seconds`: the utilisation in [0, 1] (more is a wrong peak), or -1 when the peak is unknown.
inline double mfu(double step_flops, double seconds, double peak_tflops_each, int ranks) {
  if (peak_tflops_each <= 0 || seconds <= 0 || ranks < 1) return -1.0;
  return step_flops / seconds / (peak_tflops_each * 1e12 * ranks);
}

}  // namespace gpt
