// GPU placement of --device cuda (examples/gpt/gpu_placement.hpp): one rank per GPU unless
// sharing is asked for, round robin over the node's GPUs, and a message that says both counts.
#include <catch2/catch.hpp>

#include "gpu_placement.hpp"

TEST_CASE("more ranks on a node than GPUs need --share-gpu", "[model][cuda]") {
  CHECK(gpt::gpu_sharing_refusal({0, 1}, 1, false).empty());
  CHECK(gpt::gpu_sharing_refusal({3, 8}, 8, false).empty());
  CHECK(gpt::gpu_sharing_refusal({0, 2}, 1, false) ==
        "2 ranks on this node and 1 GPU: one rank per GPU, or --share-gpu to share them round robin (tests)");
  CHECK(gpt::gpu_sharing_refusal({0, 9}, 8, false).rfind("9 ranks on this node and 8 GPUs:", 0) == 0);
  CHECK(gpt::gpu_sharing_refusal({1, 4}, 1, true).empty());
  CHECK(gpt::gpu_sharing_refusal({0, 1}, 0, true) == "no CUDA device");
}

TEST_CASE("ranks take the node's GPUs round robin", "[model][cuda]") {
  CHECK(gpt::gpu_of({0, 4}, 2) == 0);
  CHECK(gpt::gpu_of({1, 4}, 2) == 1);
  CHECK(gpt::gpu_of({2, 4}, 2) == 0);
  CHECK(gpt::gpu_of({3, 4}, 1) == 0);
  CHECK(gpt::gpu_of({5, 8}, 8) == 5);
}
