// examples/gpt/gpu_placement.hpp: which GPU a rank of --device cuda trains on: its index
// among the ranks of its node, modulo the node's GPUs; more ranks than GPUs only when asked
// (--share-gpu: tests on one GPU, over staged MPI; NCCL refuses two ranks on one GPU).
//
//   const gpt::node_place node = gpt::node_place_of(MPI_COMM_WORLD);   // collective
//   std::string no = gpt::gpu_sharing_refusal(node, devices, share);   // "" or why not
//   cudaSetDevice(gpt::gpu_of(node, devices));
#pragma once
#include <mpi.h>

#include <string>

namespace gpt {

// This rank among the ranks of its node (MPI_COMM_TYPE_SHARED).
struct node_place {
  int local_rank = 0, local_size = 1;
};
// Collective over `world`.
inline node_place node_place_of(MPI_Comm world) {
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  node_place p;
  MPI_Comm_rank(node, &p.local_rank);
  MPI_Comm_size(node, &p.local_size);
  MPI_Comm_free(&node);
  return p;
}

// Why the node's ranks cannot have the node's `devices` GPUs ("" when they can).
inline std::string gpu_sharing_refusal(const node_place& node, int devices, bool share) {
  if (devices <= 0) return "no CUDA device";
  if (node.local_size > devices && !share)
    return std::to_string(node.local_size) + " ranks on this node and " + std::to_string(devices) +
           " GPU" + (devices == 1 ? "" : "s") + ": one rank per GPU, or --share-gpu to share them round robin (tests)";
  return "";
}
inline int gpu_of(const node_place& node, int devices) { return devices > 0 ? node.local_rank % devices : 0; }

}  // namespace gpt
