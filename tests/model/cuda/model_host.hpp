// The host's results of model_pass.hpp's pass, from a C++ translation unit (model_host.cpp),
// for the CUDA model test to compare with.
#pragma once
#include <vector>

#include "config.hpp"

namespace gpt_test {

struct pass;
pass reference_pass(const gpt::config& c, const std::vector<int>& tokens, const std::vector<int>& targets, int micro);
std::vector<double> reference_losses(const gpt::config& c, const std::vector<int>& tokens,
                                     const std::vector<int>& targets, int micro);

}  // namespace gpt_test
