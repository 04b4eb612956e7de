// Streams and events on the host backends (exec/host_stream.hpp): work on two streams runs
// concurrently, an event orders one stream's work after the other's, errors come back at the
// next synchronisation, and every executor offers the concept.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "hcomm/exec/executor.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_check.hpp"
#include "hcomm/exec/host_stream.hpp"
#include "hcomm/exec/scan_kernels.hpp"
#include "hcomm/core/config.hpp"
#if HCOMM_HAS_KOKKOS
#include "hcomm/exec/kokkos.hpp"
#endif

namespace {

namespace exec = hcomm::exec;
using namespace std::chrono_literals;

static_assert(exec::stream_executor<exec::host>);
static_assert(exec::stream_executor<exec::host_check>);
static_assert(exec::stream_executor<exec::host_async>);
static_assert(exec::team_executor<exec::host>);
static_assert(exec::team_executor<exec::host_check>);
static_assert(exec::team_executor<exec::host_async>);
#if HCOMM_HAS_KOKKOS
static_assert(exec::stream_executor<exec::kokkos<>>);
static_assert(exec::team_executor<exec::kokkos<>>);
#endif

// Waits (bounded) until *flag is set: only possible if another stream runs meanwhile.
struct wait_for_flag_kernel {
  std::atomic<int>* flag;
  int* seen;
  void operator()(std::size_t) const {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (flag->load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    *seen = flag->load();
  }
};
struct set_flag_kernel {
  std::atomic<int>* flag;
  void operator()(std::size_t) const { flag->store(1); }
};
// Slow writer: sleeps, then writes i + 1 to every element.
struct slow_fill_kernel {
  std::uint64_t* a;
  void operator()(std::size_t i) const {
    if (i == 0) std::this_thread::sleep_for(50ms);
    a[i] = i + 1;
  }
};
struct copy_kernel {
  const std::uint64_t* a;
  std::uint64_t* b;
  void operator()(std::size_t i) const { b[i] = a[i] * 2; }
};

TEST_CASE("host streams run concurrently, and an event orders work across them", "[stream]") {
  exec::host_stream qa, qb;
  exec::host one;
  one.threads = 1;
  const exec::host_async a{&qa, one}, b{&qb, one};

  // Overlap: a's kernel finishes only if b's kernel runs while it waits.
  std::atomic<int> flag{0};
  int seen = 0;
  a.for_each(1, wait_for_flag_kernel{&flag, &seen});
  b.for_each(1, set_flag_kernel{&flag});
  a.synchronize();
  b.synchronize();
  CHECK(seen == 1);

  // Order: b waits for a's event, so it reads what a's slow kernel wrote.
  constexpr std::size_t n = 1000;
  std::vector<std::uint64_t> x(n, 0), y(n, 0);
  a.for_each(n, slow_fill_kernel{x.data()});
  const exec::host_event done = a.record();
  CHECK_FALSE(done.ready());  // a is still sleeping in its kernel
  b.wait(done);
  b.for_each(n, copy_kernel{x.data(), y.data()});
  b.synchronize();
  CHECK(done.ready());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += y[i] != 2 * (i + 1);
  CHECK(wrong == 0);
}

// Calls a collective inside a phase.
struct bad_kernel {
  static constexpr int max_team = 32;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  void operator()(Team& team) const {
    auto v = team.template per_thread<int>();
    team.for_threads([&](int t) {
      v[t] = 1;
      if (t == 0) (void)team.reduce(v, exec::sum{});
    });
  }
};

TEST_CASE("a host stream runs team kernels and scans in order and returns errors at synchronize", "[stream]") {
  exec::host_stream q;
  const exec::host_async s{&q, exec::host{}};
  constexpr std::size_t n = 5000;
  std::vector<std::uint64_t> in(n), out(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) in[i] = i % 17;
  s.exclusive_scan(in.data(), out.data(), n);
  s.synchronize();
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(out[i] == acc);
    acc += in[i];
  }
  CHECK(out[n] == acc);

  // A team kernel that breaks a rule throws on the stream; synchronize rethrows it, once.
  s.launch(1, 32, bad_kernel{});
  CHECK_THROWS_WITH(s.synchronize(), Catch::Matchers::Contains("inside a phase"));
  CHECK_NOTHROW(s.synchronize());
  CHECK_THROWS_WITH(s.launch(1, 40, bad_kernel{}), Catch::Matchers::Contains("not a multiple of 32"));
}

TEST_CASE("in-order executors return completed events", "[stream]") {
  CHECK(exec::host{}.record().ready());
  CHECK(exec::host_check{}.record().ready());
  exec::host{}.wait(exec::host_event::pending().completed());
}

}  // namespace
