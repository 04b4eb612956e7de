// hcomm-codec: compress, decompress and measure raw little-endian float arrays with any codec
// registered in hcomm/codec/registry.hpp, so users can try hcomm on their own tensors.
//
//   hcomm-codec compress   --codec zfp:8 --dtype f32 grads.f32            # -> grads.f32.hcf
//   hcomm-codec decompress grads.f32.hcf out.f32                          # codec/dtype from the frame
//   hcomm-codec stats      --codec mpc --dtype f64 --threads 2 acts.f64   # one JSON object on stdout
//
// Exit status: 0 success; 1 bad data, bad frame or I/O failure; 2 bad command line. Every
// failure prints exactly one line, starting "hcomm-codec: ", on stderr. Output files are
// written to a temporary file next to OUT and renamed into place, so a failed run never
// leaves a partial OUT nor destroys an existing one.
//
// stats JSON fields (errors compare the decoded array with the input):
//   codec, param, dtype, checksum, threads, threads_source (--threads, or why the default is
//   what it is: hcomm::exec::threads_source()), reps, count, raw_bytes, frame_bytes,
//   ratio (raw_bytes / frame_bytes), compress_gbps, decompress_gbps (raw bytes / best of
//   `reps` wall-clock runs / 1e9; null for an empty input), bit_exact (decoded bit patterns
//   equal the input), max_abs_error, rmse, nrmse (rmse / value range),
//   psnr_db = 20 log10(value range / rmse) with value range = max - min over the finite
//   input values -- null when rmse is 0 (an exact round trip) or the range is 0 or empty,
//   nonfinite (NaN/Inf values in the input), nonfinite_mismatch (positions where input or
//   output is non-finite and they differ in kind: NaN vs NaN, +Inf, -Inf). The error
//   statistics use only the positions where both input and output are finite.
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hcomm/codec/codec.hpp"

static_assert(std::endian::native == std::endian::little,
              "hcomm-codec reads and writes little-endian arrays: add byte swapping for this machine");

namespace {

using hcomm::dtype;
using hcomm::errc;
namespace hc = hcomm::codec;

constexpr const char* usage_text =
    "usage: hcomm-codec compress|decompress|stats [options] IN [OUT]\n"
    "  compress    IN (raw little-endian values) -> OUT (default IN.hcf), an hcomm frame\n"
    "  decompress  IN (an hcomm frame) -> OUT (default IN without .hcf, else IN.raw)\n"
    "  stats       compress + decompress IN in memory, print one JSON object\n"
    "options:\n"
    "  --codec none|mpc[:DIM]|zfp:RATE   required for compress and stats; a check for decompress\n"
    "  --dtype f32|f64                   required for compress and stats; a check for decompress\n"
    "  --no-checksum                     no payload checksum in the frame\n"
    "  --threads N                       host threads (default: OMP_NUM_THREADS, else this process's\n"
    "                                    CPUs / the ranks on this host sharing them)\n"
    "  --reps N                          stats: timed repetitions, best is reported (default 3)\n"
    "exit status: 0 ok, 1 bad data/frame/I-O, 2 bad command line\n";

struct usage_error {
  std::string what;
};

[[noreturn]] void usage_fail(const std::string& m) { throw usage_error{m}; }
[[noreturn]] void io_fail(const std::string& m) { hcomm::fail(errc::io_failure, m); }

struct options {
  std::string command;
  std::optional<std::string> codec;
  std::optional<dtype> type;
  bool checksum = true;
  int threads = 0;
  int reps = 3;
  std::vector<std::string> files;
};

int parse_int(std::string_view opt, std::string_view v, int lo, int hi) {
  if (v.empty() || v.size() > 9) usage_fail(std::string(opt) + " needs an integer in " + std::to_string(lo) + ".." +
                                            std::to_string(hi));
  int x = 0;
  for (char c : v) {
    if (c < '0' || c > '9')
      usage_fail(std::string(opt) + " needs an integer, got '" + std::string(v) + "'");
    x = x * 10 + (c - '0');
  }
  if (x < lo || x > hi)
    usage_fail(std::string(opt) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}

dtype parse_dtype(std::string_view v) {
  if (v == "f32") return dtype::f32;
  if (v == "f64") return dtype::f64;
  usage_fail("--dtype must be f32 or f64, got '" + std::string(v) + "'");
}

options parse_args(int argc, char** argv) {
  options o;
  std::vector<std::string_view> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage_text, stdout);
      std::exit(0);
    }
    if (a.size() > 2 && a.substr(0, 2) == "--") {
      std::string_view name = a, value;
      bool has_value = false;
      if (const auto eq = a.find('='); eq != std::string_view::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        has_value = true;
      }
      auto take = [&]() -> std::string_view {
        if (has_value) return value;
        if (i + 1 >= args.size()) usage_fail(std::string(name) + " needs a value");
        return args[++i];
      };
      if (name == "--codec") o.codec = std::string(take());
      else if (name == "--dtype") o.type = parse_dtype(take());
      else if (name == "--threads") o.threads = parse_int(name, take(), 1, 4096);
      else if (name == "--reps") o.reps = parse_int(name, take(), 1, 1000);
      else if (name == "--no-checksum" && !has_value) o.checksum = false;
      else usage_fail("unknown option " + std::string(a));
      continue;
    }
    if (o.command.empty()) o.command = std::string(a);
    else o.files.emplace_back(a);
  }
  if (o.command.empty()) usage_fail("missing command: compress, decompress or stats (see --help)");
  if (o.command != "compress" && o.command != "decompress" && o.command != "stats")
    usage_fail("unknown command '" + o.command + "' (use compress, decompress or stats)");
  const std::size_t max_files = o.command == "stats" ? 1 : 2;
  if (o.files.empty()) usage_fail(o.command + " needs an input file");
  if (o.files.size() > max_files) usage_fail("too many file arguments for " + o.command);
  if (o.command != "decompress") {
    if (!o.codec) usage_fail(o.command + " needs --codec none|mpc[:DIM]|zfp:RATE");
    if (!o.type) usage_fail(o.command + " needs --dtype f32|f64");
  }
  return o;
}

// ---- files ---------------------------------------------------------------------------------

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads a whole file into storage of elements of type T (which must divide its size).
template <class T>
std::vector<T> read_file_as(const std::string& path, std::string_view what_t = "byte") {
  fd_guard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) io_fail("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) io_fail("cannot stat " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) io_fail(path + " is a directory");
  std::vector<unsigned char> bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<std::size_t>(st.st_size));
  // Read until EOF (not just st_size bytes) so pipes and growing files work too.
  std::size_t used = 0;
  for (;;) {
    if (bytes.size() - used < (1u << 16)) bytes.resize(std::max<std::size_t>(used + (1u << 16), bytes.capacity()));
    const ssize_t r = ::read(f.fd, bytes.data() + used, bytes.size() - used);
    if (r < 0) {
      if (errno == EINTR) continue;
      io_fail("cannot read " + path + ": " + std::strerror(errno));
    }
    if (r == 0) break;
    used += static_cast<std::size_t>(r);
  }
  if (used % sizeof(T) != 0)
    hcomm::fail(errc::invalid_argument, path + " has " + std::to_string(used) + " bytes, not a multiple of " +
                                            std::to_string(sizeof(T)) + " (" + std::string(what_t) + ")");
  std::vector<T> out(used / sizeof(T));
  if (used) std::memcpy(out.data(), bytes.data(), used);
  return out;
}

// Writes to a temporary file beside `path`, flushes it to disk and renames it over `path`.
void write_file_atomic(const std::string& path, const void* data, std::size_t n) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) io_fail("cannot create a temporary file for " + path + ": " + std::strerror(errno));
  bool ok = false;
  std::string err;
  {
    fd_guard g{fd};
    const mode_t mask = ::umask(0);  // mkstemp creates 0600; give OUT the usual 0666 & ~umask
    ::umask(mask);
    (void)::fchmod(fd, 0666 & ~mask);
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(fd, p + done, n - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        err = std::strerror(errno);
        break;
      }
      done += static_cast<std::size_t>(w);
    }
    if (done == n) {
      if (::fsync(fd) != 0) err = std::strerror(errno);
      else ok = true;
    }
    g.fd = -1;
    if (::close(fd) != 0 && ok) {
      ok = false;
      err = std::strerror(errno);
    }
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = std::strerror(errno);
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    io_fail("cannot write " + path + ": " + err);
  }
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// ---- commands ------------------------------------------------------------------------------

hc::engine<> make_engine(const options& o) {
  hcomm::exec::host ex;
  ex.threads = o.threads;
  return hc::engine<>(ex);
}

int threads_used(const options& o) {
  hcomm::exec::host ex;
  ex.threads = o.threads;
  return ex.effective_threads();
}

template <class T>
int do_compress(const options& o, const hc::config& cfg) {
  const std::string& in = o.files[0];
  const std::string out = o.files.size() > 1 ? o.files[1] : in + ".hcf";
  const std::vector<T> x = read_file_as<T>(in, hcomm::to_string(cfg.type));
  auto eng = make_engine(o);
  const std::vector<std::byte> frame = eng.compress(cfg, std::span<const T>(x));
  write_file_atomic(out, frame.data(), frame.size());
  return 0;
}

template <class T>
int decode_and_write(const options& o, const std::vector<unsigned char>& frame, const hc::frame_info& info,
                     const std::string& out) {
  if (info.count > std::numeric_limits<std::size_t>::max() / sizeof(T))
    hcomm::fail(errc::corrupt_frame, "frame announces " + std::to_string(info.count) + " values, more than fit in memory");
  const auto n = static_cast<std::size_t>(info.count);
  // Uninitialised storage: no page is touched before the engine has validated the frame.
  std::unique_ptr<T[]> y;
  try {
    y.reset(new T[n == 0 ? 1 : n]);
  } catch (const std::bad_alloc&) {
    hcomm::fail(errc::invalid_argument,
                "cannot allocate " + std::to_string(info.count * sizeof(T)) + " bytes for the decoded values");
  }
  auto eng = make_engine(o);
  eng.decompress(frame.data(), frame.size(), y.get(), n, hcomm::dtype_of<T>);
  write_file_atomic(out, y.get(), n * sizeof(T));
  return 0;
}

int do_decompress(const options& o) {
  const std::string& in = o.files[0];
  std::string out;
  if (o.files.size() > 1) out = o.files[1];
  else if (ends_with(in, ".hcf") && in.size() > 4) out = in.substr(0, in.size() - 4);
  else out = in + ".raw";
  const std::vector<unsigned char> frame = read_file_as<unsigned char>(in);
  const hc::frame_info info = hc::read_header(frame.data(), frame.size());
  if (o.type && *o.type != info.type)
    hcomm::fail(errc::mismatch, in + " holds " + std::string(hcomm::to_string(info.type)) + ", --dtype says " +
                                    std::string(hcomm::to_string(*o.type)));
  if (o.codec) {
    const hc::config want = hc::parse_config(*o.codec, info.type);
    const bool param_given = o.codec->find(':') != std::string::npos;
    if (want.codec != info.codec || (param_given && want.param != info.param))
      hcomm::fail(errc::mismatch, in + " was compressed with " +
                                      hc::to_string(hc::config{info.codec, info.type, info.param, true}) +
                                      ", --codec says " + *o.codec);
  }
  if (info.type == dtype::f32) return decode_and_write<float>(o, frame, info, out);
  return decode_and_write<double>(o, frame, info, out);
}

std::string num(double v, int digits = 9) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

template <class T>
int do_stats(const options& o, const hc::config& cfg) {
  using clock = std::chrono::steady_clock;
  const std::vector<T> x = read_file_as<T>(o.files[0], hcomm::to_string(cfg.type));
  const std::size_t n = x.size();
  const double raw_bytes = static_cast<double>(n * sizeof(T));
  auto eng = make_engine(o);
  eng.reserve(cfg, n);
  std::vector<std::byte> frame(hc::max_frame_bytes(cfg, n));
  std::size_t frame_bytes = 0;
  double best_c = std::numeric_limits<double>::infinity();
  for (int r = 0; r < o.reps; ++r) {
    const auto t0 = clock::now();
    frame_bytes = eng.compress(cfg, x.data(), n, frame.data(), frame.size());
    const std::chrono::duration<double> dt = clock::now() - t0;
    best_c = std::min(best_c, dt.count());
  }
  std::vector<T> y(n);
  double best_d = std::numeric_limits<double>::infinity();
  for (int r = 0; r < o.reps; ++r) {
    const auto t0 = clock::now();
    eng.decompress(frame.data(), frame_bytes, y.data(), n, cfg.type);
    const std::chrono::duration<double> dt = clock::now() - t0;
    best_d = std::min(best_d, dt.count());
  }

  std::size_t nonfinite = 0, mismatch = 0, finite_pairs = 0;
  double max_err = 0, sum_sq = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = x[i], b = y[i];
    const bool fa = std::isfinite(a), fb = std::isfinite(b);
    if (!fa) ++nonfinite;
    if (fa) {
      lo = std::min(lo, a);
      hi = std::max(hi, a);
    }
    if (fa && fb) {
      const double e = std::fabs(a - b);
      max_err = std::max(max_err, e);
      sum_sq += e * e;
      ++finite_pairs;
    } else {
      const bool same = (std::isnan(a) && std::isnan(b)) || (std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0));
      if (!same) ++mismatch;
    }
  }
  const bool bit_exact = n == 0 || std::memcmp(x.data(), y.data(), n * sizeof(T)) == 0;
  const double rmse = finite_pairs ? std::sqrt(sum_sq / static_cast<double>(finite_pairs)) : 0.0;
  const double range = hi > lo ? hi - lo : 0.0;
  const double nrmse = range > 0 ? rmse / range : std::numeric_limits<double>::quiet_NaN();
  const double psnr = (rmse > 0 && range > 0) ? 20.0 * std::log10(range / rmse) : std::numeric_limits<double>::quiet_NaN();
  const double nan = std::numeric_limits<double>::quiet_NaN();

  std::string j = "{";
  auto field = [&](const char* k, const std::string& v) {
    if (j.size() > 1) j += ", ";
    j += "\"";
    j += k;
    j += "\": ";
    j += v;
  };
  field("codec", "\"" + hc::to_string(cfg) + "\"");
  field("param", std::to_string(cfg.param));
  field("dtype", "\"" + std::string(hcomm::to_string(cfg.type)) + "\"");
  field("checksum", cfg.checksum ? "true" : "false");
  field("threads", std::to_string(threads_used(o)));
  field("threads_source", "\"" + (o.threads > 0 ? std::string("--threads") : hcomm::exec::threads_source()) + "\"");
  field("reps", std::to_string(o.reps));
  field("count", std::to_string(n));
  field("raw_bytes", std::to_string(n * sizeof(T)));
  field("frame_bytes", std::to_string(frame_bytes));
  field("ratio", num(raw_bytes / static_cast<double>(frame_bytes), 6));
  field("compress_gbps", num(n ? raw_bytes / best_c / 1e9 : nan, 4));
  field("decompress_gbps", num(n ? raw_bytes / best_d / 1e9 : nan, 4));
  field("bit_exact", bit_exact ? "true" : "false");
  field("max_abs_error", num(max_err));
  field("rmse", num(rmse));
  field("nrmse", num(nrmse));
  field("psnr_db", num(psnr, 6));
  field("nonfinite", std::to_string(nonfinite));
  field("nonfinite_mismatch", std::to_string(mismatch));
  j += "}\n";
  std::fputs(j.c_str(), stdout);
  if (std::fflush(stdout) != 0) io_fail(std::string("cannot write to stdout: ") + std::strerror(errno));
  return 0;
}

int run(const options& o) {
  if (o.command == "decompress") return do_decompress(o);
  const hc::config cfg = hc::parse_config(*o.codec, *o.type, o.checksum);
  if (o.command == "compress")
    return cfg.type == dtype::f32 ? do_compress<float>(o, cfg) : do_compress<double>(o, cfg);
  return cfg.type == dtype::f32 ? do_stats<float>(o, cfg) : do_stats<double>(o, cfg);
}

// One line, whatever the message holds.
void say(std::string m) {
  for (char& c : m)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "hcomm-codec: %s\n", m.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const usage_error& e) {
    say(e.what);
    return 2;
  } catch (const hcomm::error& e) {
    std::string m = e.what();
    if (m.rfind("hcomm: ", 0) == 0) m.erase(0, 7);  // "hcomm-codec: corrupt_frame: ..."
    say(m);
    return 1;
  } catch (const std::bad_alloc&) {
    say("out of memory");
    return 1;
  } catch (const std::exception& e) {
    say(e.what());
    return 1;
  }
}
