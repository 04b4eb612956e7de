// hcomm/comm/scheme.hpp: compression schemes = compile-time maps from axis to compressor.
//
//   using S = hcomm::scheme::zhybrid<16, 8>;        // ZFP rate 16 on PP/TP, rate 8 on DP
//   static_assert(std::is_same_v<S::compressor<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<8>>>);
//   std::string n = S::name();                      // "zhybrid:16,8"
//   hcomm::bundle<S> b(grid);                       // comm/bundle.hpp
//
// The paper's schemes (Xu et al., arXiv 2409.02423): naive = one ZFP rate everywhere;
// MZHybrid = lossless MPC on PP/TP traffic, ZFP on DP gradients; ZHybrid = ZFP everywhere,
// more bits on PP/TP than on DP. with_error_feedback<S> adds error feedback to S's DP axis
// (not in the paper; what lets low DP rates converge). It needs a DP rate of 6 or more: below
// that ZFP's error on some blocks exceeds the blocks and the residual grows every step.
// The baselines a user would pick instead: bf16 = the bfloat16 cast on every axis (PyTorch
// DDP's bf16 hook casts DP gradients; here PP activations and TP partial sums too, as a
// bf16 mixed-precision run sends them); int8<B> = blockwise int8 on DP gradients (ZeRO++'s
// quantised collectives) with PP/TP in bf16, the training dtype ZeRO++ leaves unquantised
// ("int8:256", with error feedback "int8:256+ef").
#pragma once
#include <concepts>
#include <string>
#include <type_traits>

#include "hcomm/policy/axis.hpp"
#include "hcomm/policy/compressor.hpp"

namespace hcomm::scheme {

namespace detail {
template <class Dp, class Pp, class Tp>
struct by_axis {
  template <class A>
  using compressor = std::conditional_t<std::is_same_v<A, DP>, Dp, std::conditional_t<std::is_same_v<A, PP>, Pp, Tp>>;
  static constexpr bool error_feedback = false;
};
}  // namespace detail

struct none : detail::by_axis<Compressor<Uncompressed>, Compressor<Uncompressed>, Compressor<Uncompressed>> {
  static std::string name() { return "none"; }
};

template <unsigned Rate>
struct naive : detail::by_axis<Compressor<Lossy<Rate>>, Compressor<Lossy<Rate>>, Compressor<Lossy<Rate>>> {
  static std::string name() { return "naive:" + std::to_string(Rate); }
};

template <unsigned DpRate>
struct mzhybrid : detail::by_axis<Compressor<Lossy<DpRate>>, Compressor<Lossless>, Compressor<Lossless>> {
  static std::string name() { return "mzhybrid:" + std::to_string(DpRate); }
};

template <unsigned MpRate, unsigned DpRate>
struct zhybrid : detail::by_axis<Compressor<Lossy<DpRate>>, Compressor<Lossy<MpRate>>, Compressor<Lossy<MpRate>>> {
  static_assert(MpRate >= DpRate,
                "hcomm: zhybrid<MpRate, DpRate>: PP/TP carry activations and partial sums and get at least as "
                "many bits as DP gradients (MpRate >= DpRate)");
  static std::string name() { return "zhybrid:" + std::to_string(MpRate) + "," + std::to_string(DpRate); }
};

struct bf16 : detail::by_axis<Compressor<Cast<BF16>>, Compressor<Cast<BF16>>, Compressor<Cast<BF16>>> {
  static std::string name() { return "bf16"; }
};

template <unsigned Block>
struct int8 : detail::by_axis<Compressor<Int8<Block>>, Compressor<Cast<BF16>>, Compressor<Cast<BF16>>> {
  static std::string name() { return "int8:" + std::to_string(Block); }
};

template <class S>
concept scheme_policy = requires {
  { S::name() } -> std::convertible_to<std::string>;
  { S::error_feedback } -> std::convertible_to<bool>;
  requires compressor_policy<typename S::template compressor<DP>>;
  requires compressor_policy<typename S::template compressor<PP>>;
  requires compressor_policy<typename S::template compressor<TP>>;
};

template <scheme_policy S>
struct with_error_feedback : S {
  static_assert(!S::template compressor<DP>::is_lossless,
                "hcomm: with_error_feedback<S>: S's DP compressor is lossless; error feedback needs a lossy one");
  static_assert(S::template compressor<DP>::codec != codec_id::zfp || S::template compressor<DP>::param >= 6,
                "hcomm: with_error_feedback<S>: S's DP rate is below 6 bits per value, where ZFP's error on some "
                "blocks is larger than the blocks and the residual grows every step (codec/zfp.hpp, "
                "feedback_stable)");
  static constexpr bool error_feedback = true;
  static std::string name() { return S::name() + "+ef"; }
};

}  // namespace hcomm::scheme
