// bench_codecs: compress and decompress throughput and ratio of every registered hcomm codec,
// side by side with memcpy (the ceiling of any one-pass codec) and libzfp's fixed-rate 1-D
// mode (serial and OpenMP compression; libzfp 1.0 decompresses serially only).
//
//   bench_codecs --benchmark_format=json --benchmark_out=codecs.json   # or scripts/bench-codecs.sh
//   bench_codecs --hcomm_sizes=1,16,64,256 --hcomm_codecs=mpc,zfp:8 --hcomm_threads=1,2
//
// Benchmark names are key=value fields: codec=<impl>/op=<compress|decompress|copy>/
// data=<smooth|noise>/mib=<size>/threads=<t>, where impl is hcomm:<codec>, libzfp:<rate>,
// libzfp-omp:<rate> or memcpy. Throughput (bytes_per_second) always counts the raw input
// bytes, so compress and decompress figures compare directly with memcpy. Counters: ratio
// (raw bytes / compressed bytes, the hcomm frame header included) and nrmse (RMS error of
// the decoded values over the input's value range; 0 for bit-exact).
//
// Data (float32 by default, --hcomm_dtype=f64 for doubles): "smooth" is a sum of slow sines
// plus 1e-4 relative noise (a field ZFP is made for); "noise" is i.i.d. Gaussian with
// sigma 1e-3, like a gradient shard (hard for any compressor).
//
// Options (taken out before Google Benchmark sees the command line):
//   --hcomm_sizes=LIST    MiB per array (default 1,16,64; 256 is big: ~1 GiB resident)
//   --hcomm_codecs=LIST   hcomm configs (default none,mpc,zfp:4,zfp:8,zfp:16); ones not
//                         registered in this build are skipped with a message
//   --hcomm_rates=LIST    libzfp rates (default: the zfp rates of --hcomm_codecs)
//   --hcomm_data=LIST     smooth,noise (default both)
//   --hcomm_threads=LIST  host executor threads for hcomm and OpenMP threads for libzfp-omp
//                         and memcpy (default 1,2)
//   --hcomm_dtype=f32|f64 element type (default f32)
//   --hcomm_checksum=0|1  hcomm payload checksum (default 1, the library default)
//   --hcomm_no_libzfp     leave libzfp out
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(HCOMM_BENCH_LIBZFP)
#include <zfp.h>
#endif

#include "hcomm/codec/codec.hpp"

namespace {

namespace hc = hcomm::codec;
using hcomm::dtype;

struct settings {
  std::vector<std::size_t> sizes_mib{1, 16, 64};
  std::vector<std::string> codecs{"none", "mpc", "zfp:4", "zfp:8", "zfp:16"};
  std::vector<unsigned> rates;  // empty: from the zfp codecs
  std::vector<std::string> data{"smooth", "noise"};
  std::vector<int> threads{1, 2};
  dtype type = dtype::f32;
  bool checksum = true;
  bool libzfp = true;
};
settings opts;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void bad_flag(const std::string& a) {
  std::fprintf(stderr, "bench_codecs: bad option %s (see the comment at the top of bench_codecs.cpp)\n", a.c_str());
  std::exit(2);
}

unsigned long to_num(const std::string& s, const std::string& flag) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') bad_flag(flag);
  return v;
}

// Removes our --hcomm_* flags from argv.
void parse_flags(int& argc, char** argv) {
  int w = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* key) -> const char* {
      const std::size_t k = std::strlen(key);
      return a.compare(0, k, key) == 0 && a.size() > k && a[k] == '=' ? argv[i] + k + 1 : nullptr;
    };
    if (const char* v = val("--hcomm_sizes")) {
      opts.sizes_mib.clear();
      for (const auto& s : split(v)) opts.sizes_mib.push_back(to_num(s, a));
    } else if (const char* v = val("--hcomm_codecs")) {
      opts.codecs = split(v);
    } else if (const char* v = val("--hcomm_rates")) {
      opts.rates.clear();
      for (const auto& s : split(v)) opts.rates.push_back(static_cast<unsigned>(to_num(s, a)));
    } else if (const char* v = val("--hcomm_data")) {
      opts.data = split(v);
      for (const auto& d : opts.data)
        if (d != "smooth" && d != "noise") bad_flag(a);
    } else if (const char* v = val("--hcomm_threads")) {
      opts.threads.clear();
      for (const auto& s : split(v)) opts.threads.push_back(static_cast<int>(to_num(s, a)));
    } else if (const char* v = val("--hcomm_dtype")) {
      if (std::string(v) == "f32") opts.type = dtype::f32;
      else if (std::string(v) == "f64") opts.type = dtype::f64;
      else bad_flag(a);
    } else if (const char* v = val("--hcomm_checksum")) {
      opts.checksum = to_num(v, a) != 0;
    } else if (a == "--hcomm_no_libzfp") {
      opts.libzfp = false;
    } else if (a.rfind("--hcomm_", 0) == 0) {
      bad_flag(a);
    } else {
      argv[w++] = argv[i];
    }
  }
  argc = w;
  argv[argc] = nullptr;
  if (opts.rates.empty())
    for (const auto& c : opts.codecs)
      if (c.rfind("zfp:", 0) == 0) opts.rates.push_back(static_cast<unsigned>(to_num(c.substr(4), c)));
}

// ---- data ----------------------------------------------------------------------------------

template <class T>
const std::vector<T>& dataset(const std::string& kind, std::size_t mib) {
  static std::map<std::pair<std::string, std::size_t>, std::vector<T>> cache;
  auto& v = cache[{kind, mib}];
  if (!v.empty()) return v;
  const std::size_t n = mib * (1u << 20) / sizeof(T);
  v.resize(n);
  const int parts = 64;  // independent RNG streams, so generation can run in parallel
#pragma omp parallel for schedule(static) num_threads(hcomm::exec::default_threads())
  for (int p = 0; p < parts; ++p) {
    std::mt19937_64 g(1234 + static_cast<unsigned>(p) + (kind == "noise" ? 1000u : 0u));
    std::normal_distribution<double> nd(0.0, 1.0);
    const std::size_t b = n * static_cast<std::size_t>(p) / parts, e = n * static_cast<std::size_t>(p + 1) / parts;
    for (std::size_t i = b; i < e; ++i) {
      const double x = static_cast<double>(i);
      v[i] = kind == "smooth"
                 ? static_cast<T>(std::sin(x * 1e-4) + 0.5 * std::sin(x * 3.7e-3 + 1.0) + 0.25 * std::cos(x * 2.1e-2) +
                                  1e-4 * nd(g))
                 : static_cast<T>(1e-3 * nd(g));
    }
  }
  return v;
}

template <class T>
double nrmse(const std::vector<T>& x, const T* y) {
  double lo = INFINITY, hi = -INFINITY, sq = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    lo = std::min<double>(lo, x[i]);
    hi = std::max<double>(hi, x[i]);
    const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    sq += d * d;
  }
  if (x.empty() || hi <= lo) return 0;
  return std::sqrt(sq / static_cast<double>(x.size())) / (hi - lo);
}

// Touches every page once, so the first timed iteration does not pay for page faults.
template <class V>
void touch(V& v) {
  std::memset(static_cast<void*>(v.data()), 0, v.size() * sizeof(v[0]));
}

void finish(benchmark::State& st, std::size_t raw_bytes) {
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(raw_bytes));
}

// ---- hcomm ---------------------------------------------------------------------------------

template <class T>
void bm_hcomm(benchmark::State& st, hc::config cfg, bool compress, std::string kind, std::size_t mib, int threads) {
  const std::vector<T>& x = dataset<T>(kind, mib);
  const std::size_t n = x.size(), raw = n * sizeof(T);
  hc::engine<> eng(hcomm::exec::host{threads});
  eng.reserve(cfg, n);
  std::vector<std::byte> frame(hc::max_frame_bytes(cfg, n));
  touch(frame);
  std::size_t fb = eng.compress(cfg, x.data(), n, frame.data(), frame.size());
  if (compress) {
    for (auto _ : st) {
      fb = eng.compress(cfg, x.data(), n, frame.data(), frame.size());
      benchmark::DoNotOptimize(fb);
      benchmark::ClobberMemory();
    }
    st.counters["nrmse"] = 0;
  } else {
    std::vector<T> y(n);
    touch(y);
    for (auto _ : st) {
      eng.decompress(frame.data(), fb, y.data(), n, cfg.type);
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    st.counters["nrmse"] = nrmse(x, y.data());
  }
  st.counters["ratio"] = static_cast<double>(raw) / static_cast<double>(fb);
  finish(st, raw);
}

// ---- memcpy ----------------------------------------------------------------------------------

template <class T>
void bm_memcpy(benchmark::State& st, std::size_t mib, int threads) {
  const std::vector<T>& x = dataset<T>("smooth", mib);
  const std::size_t bytes = x.size() * sizeof(T);
  std::vector<T> y(x.size());
  touch(y);
  for (auto _ : st) {
    if (threads <= 1) {
      std::memcpy(y.data(), x.data(), bytes);
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int t = 0; t < threads; ++t) {
        const std::size_t b = bytes * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
        const std::size_t e = bytes * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads);
        std::memcpy(reinterpret_cast<char*>(y.data()) + b, reinterpret_cast<const char*>(x.data()) + b, e - b);
      }
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.counters["ratio"] = 1;
  st.counters["nrmse"] = 0;
  finish(st, bytes);
}

// ---- libzfp ----------------------------------------------------------------------------------

#if defined(HCOMM_BENCH_LIBZFP)
template <class T>
void bm_libzfp(benchmark::State& st, unsigned rate, bool compress, int omp_threads, std::string kind,
               std::size_t mib) {
  const std::vector<T>& x = dataset<T>(kind, mib);
  const std::size_t n = x.size(), raw = n * sizeof(T);
  const zfp_type zt = sizeof(T) == 4 ? zfp_type_float : zfp_type_double;
  zfp_field* in = zfp_field_1d(const_cast<T*>(x.data()), zt, n);
  std::vector<T> y(n);
  touch(y);
  zfp_field* out = zfp_field_1d(y.data(), zt, n);
  zfp_stream* zs = zfp_stream_open(nullptr);
  zfp_stream_set_rate(zs, rate, zt, 1, zfp_false);
  if (omp_threads > 0) {
    if (!zfp_stream_set_execution(zs, zfp_exec_omp)) {
      st.SkipWithError("libzfp was built without OpenMP");
      return;
    }
    zfp_stream_set_omp_threads(zs, static_cast<unsigned>(omp_threads));
  }
  std::vector<unsigned char> buf(zfp_stream_maximum_size(zs, in));
  touch(buf);
  bitstream* bs = stream_open(buf.data(), buf.size());
  zfp_stream_set_bit_stream(zs, bs);
  zfp_stream_rewind(zs);
  std::size_t size = zfp_compress(zs, in);
  if (size == 0) st.SkipWithError("zfp_compress failed");
  if (compress) {
    for (auto _ : st) {
      zfp_stream_rewind(zs);
      size = zfp_compress(zs, in);
      benchmark::DoNotOptimize(size);
      benchmark::ClobberMemory();
    }
    st.counters["nrmse"] = 0;
  } else {
    for (auto _ : st) {
      zfp_stream_rewind(zs);
      benchmark::DoNotOptimize(zfp_decompress(zs, out));
      benchmark::ClobberMemory();
    }
    st.counters["nrmse"] = nrmse(x, y.data());
  }
  st.counters["ratio"] = static_cast<double>(raw) / static_cast<double>(size);
  finish(st, raw);
  zfp_field_free(in);
  zfp_field_free(out);
  zfp_stream_close(zs);
  stream_close(bs);
}
#endif

// ---- registration ----------------------------------------------------------------------------

std::string bm_name(const std::string& impl, const char* op, const std::string& data, std::size_t mib, int threads) {
  return "codec=" + impl + "/op=" + op + "/data=" + data + "/mib=" + std::to_string(mib) +
         "/threads=" + std::to_string(threads);
}

void tune(benchmark::internal::Benchmark* b) { b->UseRealTime()->Unit(benchmark::kMillisecond); }

template <class T>
void register_all() {
  std::string available;
  for (std::size_t mib : opts.sizes_mib)
    for (int t : opts.threads) tune(benchmark::RegisterBenchmark(bm_name("memcpy", "copy", "any", mib, t).c_str(),
                                                                 bm_memcpy<T>, mib, t));
  for (const auto& name : opts.codecs) {
    hc::config cfg;
    try {
      cfg = hc::parse_config(name, opts.type, opts.checksum);
    } catch (const hcomm::error& e) {
      std::fprintf(stderr, "bench_codecs: skipping %s: %s\n", name.c_str(), e.what());
      continue;
    }
    available += (available.empty() ? "" : ",") + name;
    for (const auto& data : opts.data)
      for (std::size_t mib : opts.sizes_mib)
        for (int t : opts.threads)
          for (bool c : {true, false})
            tune(benchmark::RegisterBenchmark(
                bm_name("hcomm:" + name, c ? "compress" : "decompress", data, mib, t).c_str(), bm_hcomm<T>, cfg, c,
                data, mib, t));
  }
  benchmark::AddCustomContext("hcomm_codecs", available);
  benchmark::AddCustomContext("hcomm_dtype", std::string(hcomm::to_string(opts.type)));
  benchmark::AddCustomContext("hcomm_checksum", opts.checksum ? "on" : "off");
#if defined(HCOMM_BENCH_LIBZFP)
  if (opts.libzfp) {
    benchmark::AddCustomContext("libzfp", ZFP_VERSION_STRING);
    for (unsigned rate : opts.rates)
      for (const auto& data : opts.data)
        for (std::size_t mib : opts.sizes_mib) {
          const std::string r = std::to_string(rate);
          tune(benchmark::RegisterBenchmark(bm_name("libzfp:" + r, "compress", data, mib, 1).c_str(), bm_libzfp<T>,
                                            rate, true, 0, data, mib));
          tune(benchmark::RegisterBenchmark(bm_name("libzfp:" + r, "decompress", data, mib, 1).c_str(), bm_libzfp<T>,
                                            rate, false, 0, data, mib));
          for (int t : opts.threads)
            tune(benchmark::RegisterBenchmark(bm_name("libzfp-omp:" + r, "compress", data, mib, t).c_str(),
                                              bm_libzfp<T>, rate, true, t, data, mib));
        }
  }
#else
  if (opts.libzfp) std::fprintf(stderr, "bench_codecs: built without libzfp, its rows are skipped\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  parse_flags(argc, argv);
  if (opts.type == dtype::f32) register_all<float>();
  else register_all<double>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
