// MFU (examples/gpt/mfu.hpp): the device peak table matches CUDA's device names, and the
// utilisation is the step's FLOPs over the time and the peak of every rank's device.
#include <catch2/catch.hpp>

#include "mfu.hpp"

using gpt::peak_precision;

TEST_CASE("device peaks by CUDA device name", "[model][mfu]") {
  CHECK(gpt::peak_tflops("NVIDIA H200", peak_precision::bf16) == 989.4);
  CHECK(gpt::peak_tflops("NVIDIA H100 80GB HBM3", peak_precision::bf16) == 989.4);
  CHECK(gpt::peak_tflops("NVIDIA H100 PCIe", peak_precision::bf16) == 756.0);
  CHECK(gpt::peak_tflops("NVIDIA A100-SXM4-80GB", peak_precision::tf32) == 156.0);
  CHECK(gpt::peak_tflops("NVIDIA A100-PCIE-40GB", peak_precision::fp32) == 19.5);
  CHECK(gpt::peak_tflops("NVIDIA L4", peak_precision::bf16) == 121.0);
  CHECK(gpt::peak_tflops("NVIDIA GeForce RTX 4090", peak_precision::bf16) == 165.2);
  // a name that only contains a table entry's prefix is not that device
  CHECK(gpt::peak_tflops("NVIDIA L40", peak_precision::bf16) == 0.0);
  CHECK(gpt::peak_tflops("NVIDIA H1000", peak_precision::bf16) == 0.0);
  CHECK(gpt::peak_tflops("cpu", peak_precision::fp32) == 0.0);
}

TEST_CASE("MFU is FLOPs over time over every rank's peak; unknown without a peak", "[model][mfu]") {
  // 1e12 FLOPs in 0.5 s on 2 devices of 4 TFLOP/s: 2e12 FLOP/s of 8e12
  CHECK(gpt::mfu(1e12, 0.5, 4.0, 2) == Approx(0.25));
  CHECK(gpt::mfu(1e12, 0.5, 0.0, 2) < 0);
  CHECK(gpt::mfu(1e12, 0.0, 4.0, 2) < 0);
}
