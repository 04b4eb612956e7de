// hcomm-codec: compress, decompress and measure raw little-endian float arrays with any codec
// registered in hcomm/codec/registry.hpp, so users can try hcomm on their own tensors.
//
//   hcomm-codec compress   --codec zfp:8 --dtype f32 grads.f32            # -> grads.f32.hcf
//   hcomm-codec decompress grads.f32.hcf out.f32                          # codec/dtype from the frame
//   hcomm-codec stats      --codec mpc --dtype f64 --threads 2 acts.f64   # one JSON object on stdout
//
// The command line is parsed by CLI11 (typed, range-checked options; `--help` and
// `COMMAND --help` generated from them). decompress sizes its output by the frame's element
// count only after hcomm::codec::validate_frame has bounded that count by the payload (the
// codec's largest possible ratio) and by --max-output (default 1T bytes).
//
// Exit status: 0 success; 1 bad data, bad frame or I/O failure; 2 bad command line (an
// unknown command or option, a missing or out-of-range value, a codec this build cannot
// code, an IN that does not exist, is a directory or cannot be opened). Every failure prints
// exactly one line, starting "hcomm-codec: ", on stderr. Output files are written to a
// temporary file next to OUT and renamed into place, so a failed run never leaves a partial
// OUT nor destroys an existing one.
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
//   output is non-finite and they differ in kind: NaN vs NaN, +Inf, -Inf),
//   finite_to_nonfinite (finite inputs decoded as NaN/Inf: ZFP's fixed rate can round values
//   near the type's maximum to Inf, as libzfp does). The error statistics use only the
//   positions where both input and output are finite.
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

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/cli.hpp"
#include "hcomm/codec/codec.hpp"

static_assert(std::endian::native == std::endian::little,
              "hcomm-codec reads and writes little-endian arrays: add byte swapping for this machine");

namespace {

using hcomm::dtype;
using hcomm::errc;
namespace hc = hcomm::codec;

struct usage_error {
  std::string what;
};

[[noreturn]] void io_fail(const std::string& m) { hcomm::fail(errc::io_failure, m); }

struct options {
  std::string command;
  std::optional<std::string> codec;
  std::optional<dtype> type;
  bool checksum = true;
  int threads = 0;
  int reps = 3;
  std::uint64_t max_output = hc::default_max_output_bytes;
  std::vector<std::string> files;
};

// --codec: one this build can code (hcomm::codec::parse_config's message otherwise).
CLI::Validator codec_spec() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          (void)hc::parse_config(s, dtype::f32);
          return {};
        } catch (const hcomm::error& e) {
          return tools::bare_message(e);
        }
      },
      hc::list_usages<hc::registered_codecs>([](auto) { return true; }, "|", "|"));
}

// Why IN cannot be read (it does not exist, is a directory, cannot be opened), or "".
std::string unreadable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "cannot open " + path + ": " + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return path + " is a directory, not a file";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "cannot open " + path + ": " + std::strerror(errno);
  ::close(fd);
  return {};
}

// The command line, through CLI11 (typed options, ranges, generated --help). Throws
// usage_error with one line; prints the help and exits 0 for -h/--help.
options parse_args(int argc, char** argv) {
  options o;
  std::string codec, type, in, out;
  bool no_checksum = false;
  CLI::App app{"Compress, decompress and measure raw little-endian float arrays with hcomm's codecs.",
               "hcomm-codec"};
  app.footer(
      "Run 'hcomm-codec COMMAND --help' for a command's options.\n"
      "exit status: 0 ok, 1 bad data/frame/I-O, 2 bad command line (one line on stderr)");
  app.require_subcommand(1);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one counts
  CLI::App* compress =
      app.add_subcommand("compress", "IN (raw little-endian values) -> OUT (default IN.hcf), an hcomm frame");
  CLI::App* decompress =
      app.add_subcommand("decompress", "IN (an hcomm frame) -> OUT (default IN without .hcf, else IN.raw)");
  CLI::App* stats = app.add_subcommand("stats", "compress + decompress IN in memory, print one JSON object");
  for (CLI::App* sub : {compress, decompress, stats}) {
    sub->footer("exit status: 0 ok, 1 bad data/frame/I-O, 2 bad command line (one line on stderr)");
    const bool check_only = sub == decompress;
    auto* c = sub->add_option("--codec", codec, check_only ? "a check: the frame's codec (and parameter, if given)"
                                                           : "the codec and its parameter")
                  ->transform(codec_spec());
    auto* t = sub->add_option("--dtype", type, check_only ? "a check: the frame's element type" : "element type")
                  ->check(CLI::IsMember({"f32", "f64", "bf16", "f16"}));
    if (!check_only) {
      c->required();
      t->required();
      sub->add_flag("--no-checksum", no_checksum, "no payload checksum in the frame");
    }
    sub->add_option("--threads", o.threads,
                    "host threads (default: OMP_NUM_THREADS, else this process's CPUs / the ranks on this "
                    "host sharing them)")
        ->transform(tools::whole_number(1, 4096));
    sub->add_option("IN", in, check_only ? "an hcomm frame" : "raw little-endian values")->required();
  }
  compress->add_option("OUT", out, "the frame (default IN.hcf)");
  decompress->add_option("OUT", out, "the values (default IN without .hcf, else IN.raw)");
  decompress
      ->add_option("--max-output", o.max_output,
                   "refuse a frame that announces more bytes of values than this, before allocating (default 1T)")
      ->transform(tools::size_bytes(1, 1024 * tools::TiB));
  stats->add_option("--reps", o.reps, "timed repetitions, the best is reported (default 3)")
      ->transform(tools::whole_number(1, 1000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty()) {  // no command, or an unknown one
      if (argc > 1 && argv[1][0] != '-')
        throw usage_error{"unknown command '" + std::string(argv[1]) + "' (use compress, decompress or stats)"};
      if (e.get_name() == "RequiredError" || argc <= 1)
        throw usage_error{"missing command: compress, decompress or stats (see --help)"};
    }
    throw usage_error{e.what()};
  }
  // After the parse, so that an unknown option is reported as such, not as a file it swallowed.
  if (const std::string why = unreadable(in); !why.empty()) throw usage_error{"IN: " + why};
  o.command = app.get_subcommands().front()->get_name();
  if (!codec.empty()) o.codec = codec;
  if (!type.empty())
    o.type = type == "f64" ? dtype::f64 : type == "bf16" ? dtype::bf16 : type == "f16" ? dtype::f16 : dtype::f32;
  o.checksum = !no_checksum;
  o.files.push_back(in);
  if (!out.empty()) o.files.push_back(out);
  return o;
}

// ---- files ---------------------------------------------------------------------------------

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

// Calls f(T{}) for the element type of t.
template <class F>
int with_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f64: return f(double{});
    case dtype::bf16: return f(hcomm::bf16{});
    case dtype::f16: return f(hcomm::f16{});
    default: return f(float{});
  }
}

// A value as double (16-bit types widen exactly).
template <class T>
double as_double(T v) {
  if constexpr (hcomm::half_element<T>) return static_cast<float>(v);
  else return v;
}

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
  // The count is trusted only once validate_frame has bounded it by the payload and by
  // --max-output, so a forged count is a corrupt frame, not an allocation.
  try {
    hc::validate_frame(info, o.max_output);
  } catch (const hcomm::error& e) {
    if (e.code() != errc::invalid_argument) throw;
    hcomm::fail(errc::invalid_argument, tools::bare_message(e) + " (--max-output)");
  }
  const auto n = static_cast<std::size_t>(info.count);
  // Uninitialised storage: no page is touched before the engine has validated the payload.
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
  return with_type(info.type, [&](auto t) { return decode_and_write<decltype(t)>(o, frame, info, out); });
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

  std::size_t nonfinite = 0, mismatch = 0, became_nonfinite = 0, finite_pairs = 0;
  double max_err = 0, sum_sq = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = as_double(x[i]), b = as_double(y[i]);
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
      if (fa) ++became_nonfinite;  // e.g. ZFP's fixed rate rounding a value near the maximum to Inf
    }
  }
  const bool bit_exact = n == 0 || std::memcmp(x.data(), y.data(), n * sizeof(T)) == 0;
  const double rmse = finite_pairs ? std::sqrt(sum_sq / static_cast<double>(finite_pairs)) : 0.0;
  const double range = hi > lo ? hi - lo : 0.0;
  const double nrmse = range > 0 ? rmse / range : std::numeric_limits<double>::quiet_NaN();
  const double psnr = (rmse > 0 && range > 0) ? 20.0 * std::log10(range / rmse) : std::numeric_limits<double>::quiet_NaN();
  const double nan = std::numeric_limits<double>::quiet_NaN();

  using tools::rounded;
  nlohmann::ordered_json j;
  j["codec"] = hc::to_string(cfg);
  j["param"] = cfg.param;
  j["dtype"] = std::string(hcomm::to_string(cfg.type));
  j["checksum"] = cfg.checksum;
  j["threads"] = threads_used(o);
  j["threads_source"] = o.threads > 0 ? std::string("--threads") : hcomm::exec::threads_source();
  j["reps"] = o.reps;
  j["count"] = n;
  j["raw_bytes"] = n * sizeof(T);
  j["frame_bytes"] = frame_bytes;
  j["ratio"] = rounded(raw_bytes / static_cast<double>(frame_bytes), 6);
  j["compress_gbps"] = rounded(n ? raw_bytes / best_c / 1e9 : nan, 4);
  j["decompress_gbps"] = rounded(n ? raw_bytes / best_d / 1e9 : nan, 4);
  j["bit_exact"] = bit_exact;
  j["max_abs_error"] = rounded(max_err, 9);
  j["rmse"] = rounded(rmse, 9);
  j["nrmse"] = rounded(nrmse, 9);
  j["psnr_db"] = rounded(psnr, 6);
  j["nonfinite"] = nonfinite;
  j["nonfinite_mismatch"] = mismatch;
  j["finite_to_nonfinite"] = became_nonfinite;
  const std::string line = j.dump() + "\n";
  std::fputs(line.c_str(), stdout);
  if (std::fflush(stdout) != 0) io_fail(std::string("cannot write to stdout: ") + std::strerror(errno));
  return 0;
}

int run(const options& o) {
  if (o.command == "decompress") return do_decompress(o);
  const hc::config cfg = hc::parse_config(*o.codec, *o.type, o.checksum);
  if (o.command == "compress") return with_type(cfg.type, [&](auto t) { return do_compress<decltype(t)>(o, cfg); });
  return with_type(cfg.type, [&](auto t) { return do_stats<decltype(t)>(o, cfg); });
}

void say(const std::string& m) { std::fprintf(stderr, "hcomm-codec: %s\n", tools::one_line(m).c_str()); }

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    o = parse_args(argc, argv);
  } catch (const usage_error& e) {
    say(e.what);
    return 2;
  }
  try {
    return run(o);
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
