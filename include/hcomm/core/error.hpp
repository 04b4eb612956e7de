// hcomm/core/error.hpp: the one exception type hcomm throws, with a code and a message.
//
//   try { hcomm::codec::decompress(...); }
//   catch (const hcomm::error& e) { if (e.code() == hcomm::errc::corrupt_frame) ... }
//
// Messages name the failing file:line for MPI/CUDA/ZFP failures (HCOMM_CHECK_* macros).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hcomm {

enum class errc : std::uint8_t {
  invalid_argument = 1,  // a caller passed something that cannot work (bad size, bad config)
  truncated_frame,       // fewer bytes than the frame says it has
  corrupt_frame,         // checksum or structural check failed
  foreign_frame,         // not an hcomm frame (bad magic) or unknown version/codec
  mismatch,              // frame is valid but not what the receiver expected (dtype, count)
  non_finite,            // NaN/Inf where the operation cannot carry them
  mpi_failure,           // an MPI call returned an error
  cuda_failure,          // a CUDA call returned an error
  zfp_failure,           // libzfp (oracle path) failed
  io_failure,            // a file could not be read or written
  unsupported,           // a feature this build does not have (e.g. CUDA off)
  kernel_check,          // a team kernel broke the execution model's rules (host-check, launch)
  nccl_failure,          // an NCCL call returned an error, or NCCL reported one asynchronously
};

constexpr std::string_view to_string(errc c) noexcept {
  switch (c) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::truncated_frame: return "truncated_frame";
    case errc::corrupt_frame: return "corrupt_frame";
    case errc::foreign_frame: return "foreign_frame";
    case errc::mismatch: return "mismatch";
    case errc::non_finite: return "non_finite";
    case errc::mpi_failure: return "mpi_failure";
    case errc::cuda_failure: return "cuda_failure";
    case errc::zfp_failure: return "zfp_failure";
    case errc::io_failure: return "io_failure";
    case errc::unsupported: return "unsupported";
    case errc::kernel_check: return "kernel_check";
    case errc::nccl_failure: return "nccl_failure";
  }
  return "unknown";
}

class error : public std::runtime_error {
 public:
  error(errc code, const std::string& message)
      : std::runtime_error("hcomm: " + std::string(to_string(code)) + ": " + message), code_(code) {}
  errc code() const noexcept { return code_; }

 private:
  errc code_;
};

[[noreturn]] inline void fail(errc code, const std::string& message) { throw error(code, message); }

inline void require(bool ok, errc code, const std::string& message) {
  if (!ok) fail(code, message);
}

}  // namespace hcomm

#define HCOMM_WHERE_ (std::string(__FILE__) + ":" + HCOMM_STRINGIFY(__LINE__))

// Throws hcomm::error(invalid_argument) naming file:line when cond is false.
#define HCOMM_EXPECTS(cond, msg)                                                          \
  do {                                                                                    \
    if (!(cond))                                                                          \
      ::hcomm::fail(::hcomm::errc::invalid_argument,                                      \
                    std::string(msg) + " (" #cond ") at " + HCOMM_WHERE_);                \
  } while (0)

#include "hcomm/core/macros.hpp"
