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
// --device cuda runs the codec on the CUDA executor with device buffers (device_cuda.cu; the
// frames are the bytes the host writes); stats then times the kernels with CUDA events.
//
// Exit status: 0 success; 1 bad data, bad frame or I/O failure; 2 bad command line (an
// unknown command or option, a missing or out-of-range value, a codec this build cannot
// code, an IN that does not exist, is a directory or cannot be opened); 3 --device cuda in a
// build without CUDA ("built without CUDA ...") or without a usable device ("no CUDA device:
// <the CUDA runtime's reason>"). Every failure prints exactly one line, starting
// "hcomm-codec: ", on stderr. Output files are written to a temporary file next to OUT and
// renamed into place, so a failed run never leaves a partial OUT nor destroys an existing
// one; --fsync flushes OUT to disk before the rename.
//
// Files and buffers (io.hpp): IN is mapped, not copied; the output is built in place in one
// uninitialised buffer and written from there, so a run costs its kernel plus about what
// `cat IN > OUT` costs.
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
//   positions where both input and output are finite. device: cpu or cuda.
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
#include "device.hpp"
#include "hcomm/codec/codec.hpp"
#include "io.hpp"

static_assert(std::endian::native == std::endian::little,
              "hcomm-codec reads and writes little-endian arrays: add byte swapping for this machine");

namespace {

using hcomm::dtype;
using hcomm::errc;
namespace hc = hcomm::codec;

struct usage_error {
  std::string what;
};

using codec_tool::host_buffer;
using codec_tool::input_file;
using codec_tool::io_fail;

// --device names a device this run cannot use (exit codec_tool::exit_no_device).
struct device_error {
  std::string what;
};

struct options {
  std::string command;
  std::optional<std::string> codec;
  std::optional<dtype> type;
  bool checksum = true;
  int threads = 0;
  int reps = 3;
  std::uint64_t max_output = hc::default_max_output_bytes;
  bool cuda = false;   // --device cuda
  bool fsync = false;  // --fsync
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
  std::string codec, type, in, out, device = "cpu";
  bool no_checksum = false;
  CLI::App app{"Compress, decompress and measure raw little-endian float arrays with hcomm's codecs.",
               "hcomm-codec"};
  app.footer(
      "Run 'hcomm-codec COMMAND --help' for a command's options.\n"
      "exit status: 0 ok, 1 bad data/frame/I-O, 2 bad command line, 3 --device cuda without a usable CUDA\n"
      "device or in a build without CUDA (one line on stderr)");
  app.require_subcommand(1);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one counts
  CLI::App* compress =
      app.add_subcommand("compress", "IN (raw little-endian values) -> OUT (default IN.hcf), an hcomm frame");
  CLI::App* decompress =
      app.add_subcommand("decompress", "IN (an hcomm frame) -> OUT (default IN without .hcf, else IN.raw)");
  CLI::App* stats = app.add_subcommand("stats", "compress + decompress IN in memory, print one JSON object");
  for (CLI::App* sub : {compress, decompress, stats}) {
    sub->footer(
        "exit status: 0 ok, 1 bad data/frame/I-O, 2 bad command line, 3 --device cuda without a usable CUDA\n"
        "device or in a build without CUDA (one line on stderr)");
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
    sub->add_option("--device", device,
                    "where the codec runs: cpu (default) or cuda (the CUDA executor, device buffers; stats times "
                    "the kernels with CUDA events)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    if (sub != stats)
      sub->add_flag("--fsync", o.fsync, "flush OUT to disk before renaming it into place (default: as cat does, not)");
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
  o.cuda = device == "cuda";
  o.files.push_back(in);
  if (!out.empty()) o.files.push_back(out);
  return o;
}

// ---- files: io.hpp ------------------------------------------------------------------------

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

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// ---- commands ------------------------------------------------------------------------------

hc::engine<codec_tool::host_executor> make_engine(const options& o) {
  codec_tool::host_executor ex;
  ex.threads = o.threads;
  return hc::engine<codec_tool::host_executor>(ex);
}

int threads_used(const options& o) {
  hcomm::exec::host ex;
  ex.threads = o.threads;
  return ex.effective_threads();
}

// The input's values: IN's bytes, which must be whole values of T.
template <class T>
std::size_t count_of(const input_file& f, const std::string& path, dtype t) {
  if (f.size() % sizeof(T) != 0)
    hcomm::fail(errc::invalid_argument, path + " has " + std::to_string(f.size()) + " bytes, not a multiple of " +
                                            std::to_string(sizeof(T)) + " (" + std::string(hcomm::to_string(t)) + ")");
  return f.size() / sizeof(T);
}

// Compresses IN straight from its mapping into one uninitialised buffer of the frame bound
// (only the pages the frame uses are touched), written to OUT from there.
template <class T>
int do_compress(const options& o, const hc::config& cfg) {
  const std::string& in = o.files[0];
  const std::string out = o.files.size() > 1 ? o.files[1] : in + ".hcf";
  const input_file x(in);
  const std::size_t n = count_of<T>(x, in, cfg.type);
  const std::size_t bound = hc::max_frame_bytes(cfg, n);
  host_buffer frame(bound);
  std::size_t used = 0;
  if (o.cuda) {
    used = codec_tool::cuda_compress(cfg, x.data(), n, frame.data(), bound);
  } else {
    auto eng = make_engine(o);
    used = eng.compress(cfg, x.data(), n, frame.data(), bound);
  }
  codec_tool::write_file_atomic(out, frame.data(), used, o.fsync);
  return 0;
}

template <class T>
int decode_and_write(const options& o, const input_file& frame, const hc::frame_info& info, const std::string& out) {
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
  host_buffer y;
  try {
    y = host_buffer(n * sizeof(T));
  } catch (const hcomm::error&) {
    hcomm::fail(errc::invalid_argument,
                "cannot allocate " + std::to_string(info.count * sizeof(T)) + " bytes for the decoded values");
  }
  if (o.cuda) {
    codec_tool::cuda_decompress(frame.data(), frame.size(), y.data(), n, hcomm::dtype_of<T>);
  } else {
    auto eng = make_engine(o);
    eng.decompress(frame.data(), frame.size(), y.data(), n, hcomm::dtype_of<T>);
  }
  codec_tool::write_file_atomic(out, y.data(), n * sizeof(T), o.fsync);
  return 0;
}

int do_decompress(const options& o) {
  const std::string& in = o.files[0];
  std::string out;
  if (o.files.size() > 1) out = o.files[1];
  else if (ends_with(in, ".hcf") && in.size() > 4) out = in.substr(0, in.size() - 4);
  else out = in + ".raw";
  const input_file frame(in);
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
  const input_file in(o.files[0]);
  const std::size_t n = count_of<T>(in, o.files[0], cfg.type);
  const T* x = reinterpret_cast<const T*>(in.data());
  const double raw_bytes = static_cast<double>(n * sizeof(T));
  host_buffer frame(hc::max_frame_bytes(cfg, n)), decoded(n * sizeof(T));
  T* y = reinterpret_cast<T*>(decoded.data());
  std::size_t frame_bytes = 0;
  double best_c = std::numeric_limits<double>::infinity();
  double best_d = std::numeric_limits<double>::infinity();
  if (o.cuda) {
    frame_bytes = codec_tool::cuda_round_trip(cfg, x, n, y, o.reps, &best_c, &best_d);
  } else {
    auto eng = make_engine(o);
    eng.reserve(cfg, n);
    for (int r = 0; r < o.reps; ++r) {
      const auto t0 = clock::now();
      frame_bytes = eng.compress(cfg, x, n, frame.data(), frame.size());
      const std::chrono::duration<double> dt = clock::now() - t0;
      best_c = std::min(best_c, dt.count());
    }
    for (int r = 0; r < o.reps; ++r) {
      const auto t0 = clock::now();
      eng.decompress(frame.data(), frame_bytes, y, n, cfg.type);
      const std::chrono::duration<double> dt = clock::now() - t0;
      best_d = std::min(best_d, dt.count());
    }
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
  const bool bit_exact = n == 0 || std::memcmp(x, y, n * sizeof(T)) == 0;
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
  j["device"] = o.cuda ? "cuda" : "cpu";
  const std::string line = j.dump() + "\n";
  std::fputs(line.c_str(), stdout);
  if (std::fflush(stdout) != 0) io_fail(std::string("cannot write to stdout: ") + std::strerror(errno));
  return 0;
}

int run(const options& o) {
  if (o.cuda)
    if (std::string why = codec_tool::cuda_unavailable(); !why.empty()) throw device_error{"--device cuda: " + why};
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
  } catch (const device_error& e) {
    say(e.what);
    return codec_tool::exit_no_device;
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
