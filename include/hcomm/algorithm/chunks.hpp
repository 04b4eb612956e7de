// hcomm/algorithm/chunks.hpp: the split of a buffer over ranks, and the first error of an
// operation kept until its message pattern is complete.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>

#include "hcomm/core/error.hpp"

namespace hcomm::algorithm {

// Balanced split of n elements into p chunks (the first n % p chunks one longer).
struct chunks {
  std::size_t n = 0, p = 1;
  std::size_t len(std::size_t c) const noexcept { return n / p + (c < n % p ? 1 : 0); }
  std::size_t off(std::size_t c) const noexcept { return c * (n / p) + std::min(c, n % p); }
  std::size_t max_len() const noexcept { return n / p + (n % p ? 1 : 0); }
};

// Records the first error of an operation and lets it finish its message pattern, so the
// peers are not left waiting; the error is thrown when the pattern is complete.
struct deferred_error {
  std::string message;
  errc code = errc::corrupt_frame;
  bool set = false;
  void record(const error& e, const std::string& where) {
    if (set) return;
    set = true;
    code = e.code();
    message = where + ": " + e.what();
  }
  void raise() const {
    if (set) fail(code, message);
  }
};

}  // namespace hcomm::algorithm
