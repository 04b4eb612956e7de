// msparse/msparse.hpp: everything msparse offers, in one include (it only includes).
//
//   #include "msparse/msparse.hpp"
//   msparse::sparse_topology topo(msparse::gpt_linear_layers(shape), msparse::schedule::mst(opts),
//                                 msparse::growth_rule_from_name("mst"), msparse::distribution_kind::erk, seed);
//
// Layers: policy (phases, growth), schedule, distribution, mask, topology, attention,
// flops; the sparse storage format, kernels and sparse linear layer when present in this
// tree (they are developed alongside; __has_include keeps the umbrella usable meanwhile).
#pragma once

#include "msparse/policy/phase.hpp"
#include "msparse/policy/growth.hpp"
#include "msparse/mask.hpp"
#include "msparse/schedule.hpp"
#include "msparse/distribution.hpp"
#include "msparse/topology.hpp"
#include "msparse/attention/pattern.hpp"
#include "msparse/attention/block_sparse.hpp"
#include "msparse/attention/hybrid.hpp"
#include "msparse/flops.hpp"

#if __has_include("msparse/format/csr.hpp")
#include "msparse/format/csr.hpp"
#endif
#if __has_include("msparse/kernels/simd.hpp")
#include "msparse/kernels/simd.hpp"
#endif
#if __has_include("msparse/kernels/tiles.hpp")
#include "msparse/kernels/tiles.hpp"
#endif
#if __has_include("msparse/kernels/launch.hpp")
#include "msparse/kernels/launch.hpp"
#endif
#if __has_include("msparse/kernels/spmm.hpp")
#include "msparse/kernels/spmm.hpp"
#endif
#if __has_include("msparse/kernels/sddmm.hpp")
#include "msparse/kernels/sddmm.hpp"
#endif
#if __has_include("msparse/layer/sparse_linear.hpp")
#include "msparse/layer/sparse_linear.hpp"
#endif
