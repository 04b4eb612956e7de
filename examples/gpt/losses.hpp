// examples/gpt/losses.hpp: loss curves as files, and the comparison the tests rely on.
//
//   gpt::loss_curve c = trainer.run().losses;           // step (0-based) -> mean train loss
//   gpt::write_losses("run.txt", c);                    // --losses-out: "step loss" lines, 17 digits
//   int rc = gpt::expect_losses("ref.txt", c, 1e-5);    // --expect-losses: 0, or 1 on a mismatch
//
// The ctest suite runs one grid with --losses-out and another with --expect-losses: equal
// curves (to a relative tolerance, or bitwise with 0) are what "this grid reproduces that one"
// and "a resumed run continues the interrupted one" mean.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

namespace gpt {

using loss_curve = std::map<std::int64_t, double>;

// Written as PATH.tmp and renamed, so a reader never sees half a curve.
inline void write_losses(const std::string& path, const loss_curve& c) {
  std::ofstream f(path + ".tmp");
  char line[64];
  for (const auto& [s, l] : c) {
    std::snprintf(line, sizeof line, "%lld %.17g\n", static_cast<long long>(s), l);
    f << line;
  }
  f.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}

// Compares the steps of `c` that the file at `path` lists: relative difference <= rtol
// (rtol 0: bitwise). Prints each mismatch and a verdict; returns 0 when all match, else 1
// (also when the file is unreadable or shares no step with `c`).
inline int expect_losses(const std::string& path, const loss_curve& c, double rtol) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "train_gpt: cannot read --expect-losses %s\n", path.c_str());
    return 1;
  }
  loss_curve want;
  long long s;
  double l;
  while (f >> s >> l) want[s] = l;
  int checked = 0, bad = 0;
  double worst = 0;
  for (const auto& [st, got] : c) {
    auto it = want.find(st);
    if (it == want.end()) continue;
    ++checked;
    const double rel = std::fabs(got - it->second) / std::max(1e-30, std::fabs(it->second));
    worst = std::max(worst, rel);
    const bool ok = rtol == 0 ? got == it->second : rel <= rtol;
    if (!ok) {
      ++bad;
      std::fprintf(stderr, "step %lld: loss %.17g, expected %.17g (rel %.3e)\n", static_cast<long long>(st), got, it->second, rel);
    }
  }
  if (checked == 0) {
    std::fprintf(stderr, "train_gpt: --expect-losses %s has none of this run's steps\n", path.c_str());
    return 1;
  }
  std::printf("expect-losses: %d steps compared, worst relative difference %.3e (tolerance %s)\n", checked, worst,
              rtol == 0 ? "bitwise" : std::to_string(rtol).c_str());
  if (bad) std::fprintf(stderr, "expect-losses: %d of %d steps differ\n", bad, checked);
  return bad ? 1 : 0;
}

}  // namespace gpt
