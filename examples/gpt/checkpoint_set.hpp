// examples/gpt/checkpoint_set.hpp: checkpoint sets on disk, one per save, complete or absent.
// The files are opaque bytes here; what they hold is checkpoint.hpp's business.
//
//   DIR/step-00000020/rank<r>.ckpt     rank r's files
//   DIR/step-00000020/rank<r>.sparse
//   DIR/step-00000020/manifest.json    written last, by rank 0: the set is complete
//
//   gpt::save_set(dir, info, my_files, keep, first);    // collective; returns the verdict
//   auto set = gpt::open_newest_set(dir, info, reshard, names_of, check);  // collective; throws gpt::stopped
//   set.files[...]                                      // this rank's verified file bytes
//
// A set is one thing. Every rank writes its files (tmp, fsync, rename, fsync of the directory),
// the ranks agree that all of them succeeded, and only then rank 0 writes the manifest (step,
// grid, configuration hash, each file's size and checksum) the same way. A save that fails on
// any rank is known to every rank in the same collective: the attempt's files are removed
// and the previous set stays current. Resume takes the newest set with a manifest, and every
// rank verifies its files against it (size, checksum, then the caller's header check) before
// anyone loads; the verdict is agreed, so a mixed, incomplete or damaged set is refused on all
// ranks with one message.
#pragma once
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "collective.hpp"
#include "faults.hpp"
#include "hcomm/core/error.hpp"

namespace gpt {

namespace detail {
inline std::uint64_t fnv1a(const char* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}
inline std::string hex(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}
inline std::string errno_text(int e) { return std::strerror(e); }
}  // namespace detail

// ---- files, durably ------------------------------------------------------------------------
inline void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) hcomm::fail(hcomm::errc::io_failure, "cannot open directory " + dir + ": " + detail::errno_text(errno));
  const int rc = ::fsync(fd), e = errno;
  ::close(fd);
  if (rc != 0 && e != EINVAL) hcomm::fail(hcomm::errc::io_failure, "cannot fsync directory " + dir + ": " + detail::errno_text(e));
}

// Writes `path` as PATH.tmp, fsyncs it, renames it over PATH and fsyncs the directory. On any
// failure the .tmp is removed (it would hold scarce space) and the error says why (errno).
// `enospc` and `kill_halfway` are the tests' injected faults (faults.hpp).
inline void write_durably(const std::string& path, std::span<const char> bytes, bool enospc = false, bool kill_halfway = false) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) hcomm::fail(hcomm::errc::io_failure, "cannot create " + tmp + ": " + detail::errno_text(errno));
  auto fail = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    hcomm::fail(hcomm::errc::io_failure, "cannot " + what + " " + tmp + ": " + detail::errno_text(e));
  };
  std::size_t done = 0;
  const std::size_t half = bytes.size() / 2;
  while (done < bytes.size()) {
    std::size_t n = std::min<std::size_t>(bytes.size() - done, 1 << 20);
    if ((enospc || kill_halfway) && done < half) n = std::min(n, half - done);
    const ssize_t w = ::write(fd, bytes.data() + done, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail("write", errno);
    done += static_cast<std::size_t>(w);
    if (done == half && kill_halfway) ::raise(SIGKILL);
    if (done == half && enospc) fail("write", ENOSPC);
  }
  if (::fsync(fd) != 0) fail("fsync", errno);
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    hcomm::fail(hcomm::errc::io_failure, "cannot close " + tmp + ": " + detail::errno_text(e));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    hcomm::fail(hcomm::errc::io_failure, "cannot rename " + tmp + " to " + path + ": " + detail::errno_text(e));
  }
  fsync_dir(std::filesystem::path(path).parent_path().string());
}

inline std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) hcomm::fail(hcomm::errc::io_failure, "cannot open " + path + ": " + detail::errno_text(errno));
  std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) hcomm::fail(hcomm::errc::io_failure, "cannot read " + path);
  return buf;
}

// ---- sets ----------------------------------------------------------------------------------
// What a set is checked against on resume (and recorded in its manifest).
struct set_info {
  std::string fingerprint;  // configuration + scheme (+ sparsity)
  int dp = 1, pp = 1, tp = 1;
  std::int64_t step = 0;    // steps done (the next step to run)
  // recorded, not checked: a set moves between backends (the precision is in the fingerprint)
  std::string device = "cpu", precision = "fp32";
};

struct set_file {
  std::string name;        // rank<r>.ckpt, rank<r>.sparse
  std::vector<char> bytes;
};

inline std::string set_dir(const std::string& dir, std::int64_t step) {
  char b[32];
  std::snprintf(b, sizeof b, "step-%08lld", static_cast<long long>(step));
  return (std::filesystem::path(dir) / b).string();
}
inline std::string manifest_path(const std::string& sdir) { return (std::filesystem::path(sdir) / "manifest.json").string(); }

// Steps of DIR's set directories: complete (with a manifest) and not, ascending.
struct set_listing {
  std::vector<std::int64_t> complete, incomplete;
};
inline set_listing list_sets(const std::string& dir) {
  namespace fs = std::filesystem;
  set_listing l;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() != 13 || n.rfind("step-", 0) != 0 || !e.is_directory()) continue;
    char* end = nullptr;
    const long long s = std::strtoll(n.c_str() + 5, &end, 10);
    if (*end) continue;
    (fs::exists(manifest_path(e.path().string())) ? l.complete : l.incomplete).push_back(s);
  }
  std::sort(l.complete.begin(), l.complete.end());
  std::sort(l.incomplete.begin(), l.incomplete.end());
  return l;
}

struct save_verdict {
  bool ok = true;
  std::string message;  // why not (the same on every rank)
  bool fatal = false;   // the directory is not usable at all (not shared): stop whatever the option
};

// Collective: saves this rank's `files` as part of the set at info.step in `dir`. `check_shared`
// (the first save of a run) first checks that every rank sees rank 0's files. Returns the
// agreed verdict; on failure the attempt's files are gone and the previous set stays current.
inline save_verdict save_set(const std::string& dir, const set_info& info, const std::vector<set_file>& files, int keep,
                             bool check_shared) {
  namespace fs = std::filesystem;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string sdir = set_dir(dir, info.step), old = sdir + ".replaced";
  const std::string where = "checkpoint set " + sdir + " not saved: ";
  auto previous = [&] {  // rank 0: which set stays current
    const auto l = list_sets(dir);
    return l.complete.empty() ? std::string("no earlier set exists")
                              : "the set at step " + std::to_string(l.complete.back()) + " stays current";
  };
  // 1. with check_shared (the first save of a run), every rank reads a probe file of rank 0's:
  //    checkpoints need a directory that all ranks see; a failure here always stops the run
  std::string err;
  if (check_shared) {
    const std::string probe = (fs::path(dir) / ".shared-probe").string();
    std::uint64_t nonce = 0;
    if (rank == 0) {
      try {
        fs::create_directories(dir);
        nonce = detail::fnv1a(sdir.data(), sdir.size(),
                              static_cast<std::uint64_t>(::getpid()) ^ static_cast<std::uint64_t>(MPI_Wtime() * 1e9));
        const std::string s = detail::hex(nonce);
        write_durably(probe, std::span<const char>(s.data(), s.size()));
      } catch (const std::exception& e) {
        err = reason_of(e);
      }
    }
    verdict v = agree(err.empty(), err);
    if (!v.ok) return {false, where + "rank 0: " + v.what, true};
    MPI_Bcast(&nonce, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    std::string why;
    if (rank != 0) {
      std::ifstream f(faults::unshared().at(rank, -1) ? probe + ".elsewhere" : probe);
      std::string got;
      if (!f) why = "cannot see rank 0's file " + probe + " (" + detail::errno_text(errno) + ")";
      else if (!(f >> got) || got != detail::hex(nonce)) why = "sees another " + probe + " than rank 0";
      if (!why.empty()) why += ": checkpoints need a directory that every rank sees (a shared filesystem)";
    }
    v = agree(why.empty(), why);
    if (rank == 0) {
      std::error_code ec;
      fs::remove(probe, ec);
    }
    if (!v.ok)
      return {false, "checkpoint directory " + dir + " is not shared: rank " + std::to_string(v.first_bad) + " " + v.what, true};
  }
  // 2. rank 0 makes the set's directory, moving aside a complete set of the same step (put
  //    back if this attempt fails)
  if (rank == 0) {
    try {
      fs::create_directories(dir);
      if (fs::exists(manifest_path(sdir))) {
        fs::remove_all(old);
        fs::rename(sdir, old);
      }
      fs::create_directories(sdir);
    } catch (const std::exception& e) {
      err = reason_of(e);
    }
  }
  verdict v = agree(err.empty(), err);
  if (!v.ok) return {false, where + "rank 0: " + v.what + "; " + previous()};
  // 3. every rank writes its files; the ranks agree on the outcome
  std::vector<std::uint64_t> mine;  // size, checksum per file
  err.clear();
  try {
    for (const auto& f : files) {
      const bool enospc = faults::save_enospc().at(rank, info.step);
      const bool kill = faults::kill_in_save().at(rank, info.step);
      write_durably((fs::path(sdir) / f.name).string(), std::span<const char>(f.bytes), enospc, kill);
      mine.push_back(f.bytes.size());
      mine.push_back(detail::fnv1a(f.bytes.data(), f.bytes.size()));
    }
  } catch (const std::exception& e) {
    err = reason_of(e);
  }
  v = agree(err.empty(), err);
  // 4. all written: rank 0 writes the manifest, and that outcome is agreed too
  if (v.ok) {
    const int k = static_cast<int>(2 * files.size());
    std::vector<std::uint64_t> all(rank == 0 ? static_cast<std::size_t>(k) * size : 0);
    MPI_Gather(mine.data(), k, MPI_UINT64_T, all.data(), k, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    err.clear();
    if (rank == 0) {
      try {
        nlohmann::ordered_json m;
        m["format"] = "train_gpt checkpoint set";
        m["version"] = 1;
        m["step"] = info.step;
        m["grid"] = {{"dp", info.dp}, {"pp", info.pp}, {"tp", info.tp}};
        m["ranks"] = size;
        m["config_hash"] = detail::hex(detail::fnv1a(info.fingerprint.data(), info.fingerprint.size()));
        m["config"] = info.fingerprint;
        m["device"] = info.device;
        m["precision"] = info.precision;
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (int r = 0; r < size; ++r)
          for (std::size_t i = 0; i < files.size(); ++i) {
            const std::string suffix = files[i].name.substr(files[i].name.find('.'));
            const std::uint64_t* e = all.data() + static_cast<std::size_t>(r) * k + 2 * i;
            list.push_back({{"rank", r}, {"name", "rank" + std::to_string(r) + suffix}, {"bytes", e[0]},
                            {"checksum", detail::hex(e[1])}});
          }
        m["files"] = std::move(list);
        const std::string text = m.dump(1) + "\n";
        write_durably(manifest_path(sdir), std::span<const char>(text.data(), text.size()),
                      faults::save_enospc().rank == size && faults::save_enospc().at(size, info.step));
      } catch (const std::exception& e) {
        err = reason_of(e);
      }
    }
    v = agree(err.empty(), err);
  }
  // 5. the verdict: on failure every rank removes what it wrote, rank 0 the directory; on
  //    success rank 0 keeps the newest `keep` complete sets and drops incomplete ones
  std::string outcome;
  if (!v.ok) {
    std::error_code ec;
    for (const auto& f : files) {
      fs::remove(fs::path(sdir) / f.name, ec);
      fs::remove(fs::path(sdir) / (f.name + ".tmp"), ec);
    }
    MPI_Barrier(MPI_COMM_WORLD);  // every rank's files are gone before the directory goes
    if (rank == 0) {
      fs::remove_all(sdir, ec);
      if (fs::exists(old, ec)) fs::rename(old, sdir, ec);
      outcome = previous();
    }
  } else if (rank == 0) {
    std::error_code ec;
    fs::remove_all(old, ec);
    const auto l = list_sets(dir);
    for (auto s : l.incomplete) fs::remove_all(set_dir(dir, s), ec);
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < l.complete.size(); ++i)
      fs::remove_all(set_dir(dir, l.complete[i]), ec);
  }
  if (v.ok) return {};
  int len = static_cast<int>(outcome.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  outcome.resize(static_cast<std::size_t>(len));
  MPI_Bcast(outcome.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return {false, where + "rank " + std::to_string(v.first_bad) + ": " + v.what + "; " + outcome};
}

// The set a resume starts from: its directory, step and this rank's verified file bytes.
struct opened_set {
  std::string dir;
  std::int64_t step = 0;
  int dp = 1, pp = 1, tp = 1;            // the grid that saved it
  std::vector<std::string> names;        // the files read, in the order of `files`
  nlohmann::json manifest;
  std::vector<std::vector<char>> files;  // in the order of `names`
};

// Collective: finds the newest complete set in `dir`, checks its manifest against `info`
// (configuration; grid unless `reshard`), and has every rank verify the files it needs,
// `names_of(dp, pp, tp)` of the set's grid (size and checksum against the manifest, then
// `check(path, bytes, step)`: the header); every rank throws the same gpt::stopped (code 2,
// one message) when anything is wrong, before anyone loads.
template <class Names, class Check>
opened_set open_newest_set(const std::string& dir, const set_info& info, bool reshard, Names&& names_of, Check&& check) {
  namespace fs = std::filesystem;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // 1. rank 0 picks the set and checks its manifest; the text goes to every rank
  std::string err, text;
  opened_set o;
  if (rank == 0) {
    try {
      if (!fs::is_directory(dir)) hcomm::fail(hcomm::errc::io_failure, "refusing to resume: " + dir + " is not a checkpoint directory");
      const auto l = list_sets(dir);
      if (l.complete.empty())
        hcomm::fail(hcomm::errc::io_failure, "refusing to resume: " + dir + " holds no complete checkpoint set" +
                                                 (l.incomplete.empty() ? std::string()
                                                                       : " (step-" + std::to_string(l.incomplete.back()) +
                                                                             " has no manifest: an interrupted save)"));
      o.dir = set_dir(dir, l.complete.back());
      const auto bytes = read_file(manifest_path(o.dir));
      text.assign(bytes.begin(), bytes.end());
      const std::string refusing = "refusing checkpoint set " + o.dir + ": ";
      nlohmann::json m = nlohmann::json::parse(text, nullptr, false);
      if (m.is_discarded() || !m.is_object() || m.value("format", "") != "train_gpt checkpoint set")
        hcomm::fail(hcomm::errc::corrupt_frame, refusing + "manifest.json is damaged (not a train_gpt manifest)");
      // the architecture first (the configuration's first word): a GPT set given to BERT is
      // named as such, not as one more configuration difference
      const std::string saved = m.at("config").get<std::string>();
      const std::string saved_arch = saved.substr(0, saved.find(' '));
      const std::string this_arch = info.fingerprint.substr(0, info.fingerprint.find(' '));
      if (saved_arch != this_arch)
        hcomm::fail(hcomm::errc::mismatch, refusing + "written by a " + saved_arch + " model, this run is " + this_arch +
                                               " (a checkpoint resumes only the architecture that wrote it)");
      const auto g = m.at("grid");
      const int dp = g.at("dp"), pp = g.at("pp"), tp = g.at("tp");
      if (!reshard && (dp != info.dp || pp != info.pp || tp != info.tp))
        hcomm::fail(hcomm::errc::mismatch, refusing + "written by grid dp" + std::to_string(dp) + " pp" + std::to_string(pp) +
                                               " tp" + std::to_string(tp) + ", this run is dp" + std::to_string(info.dp) +
                                               " pp" + std::to_string(info.pp) + " tp" + std::to_string(info.tp) +
                                               " (--reshard re-cuts a set to another grid)");
      if (m.at("config").get<std::string>() != info.fingerprint)
        hcomm::fail(hcomm::errc::mismatch, refusing + "written by a different configuration\n  checkpoint: " +
                                               m.at("config").get<std::string>() + "\n  this run:   " + info.fingerprint);
      const int ranks = m.at("ranks").get<int>();
      if (ranks != dp * pp * tp || m.at("files").size() % static_cast<std::size_t>(ranks) != 0)
        hcomm::fail(hcomm::errc::corrupt_frame, refusing + "the manifest lists " + std::to_string(m.at("files").size()) +
                                                    " files of " + std::to_string(ranks) + " ranks on grid dp" +
                                                    std::to_string(dp) + " pp" + std::to_string(pp) + " tp" + std::to_string(tp));
    } catch (const nlohmann::json::exception& e) {
      err = "refusing checkpoint set " + o.dir + ": manifest.json is damaged (" + e.what() + ")";
    } catch (const std::exception& e) {
      err = reason_of(e);
    }
  }
  verdict v = agree(err.empty(), err);
  if (!v.ok) throw stopped{2, v.what};
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  text.resize(static_cast<std::size_t>(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  o.manifest = nlohmann::json::parse(text);
  o.step = o.manifest.at("step").get<std::int64_t>();
  if (rank != 0) o.dir = set_dir(dir, o.step);
  o.dp = o.manifest.at("grid").at("dp");
  o.pp = o.manifest.at("grid").at("pp");
  o.tp = o.manifest.at("grid").at("tp");
  // 2. every rank verifies its own files against the manifest and their headers
  err.clear();
  try {
    o.names = names_of(o.dp, o.pp, o.tp);
    for (const auto& name : o.names) {
      const std::string path = (fs::path(o.dir) / name).string();
      const nlohmann::json* entry = nullptr;
      for (const auto& f : o.manifest.at("files"))
        if (f.at("name").get<std::string>() == name) entry = &f;
      if (!entry) hcomm::fail(hcomm::errc::mismatch, "the manifest does not list " + name + " (an incomplete set)");
      if (!fs::exists(path)) hcomm::fail(hcomm::errc::io_failure, path + " is missing (an incomplete set)");
      auto bytes = read_file(path);
      const auto want = entry->at("bytes").get<std::uint64_t>();
      if (bytes.size() < want)
        hcomm::fail(hcomm::errc::truncated_frame, path + " is truncated (" + std::to_string(bytes.size()) + " of " +
                                                      std::to_string(want) + " bytes in the manifest)");
      if (bytes.size() != want || detail::hex(detail::fnv1a(bytes.data(), bytes.size())) != entry->at("checksum").get<std::string>())
        check(path, bytes, o.step);  // a file of another save names its step; else it is damaged
      if (bytes.size() != want)
        hcomm::fail(hcomm::errc::corrupt_frame, path + " has " + std::to_string(bytes.size()) + " bytes, the manifest " +
                                                    std::to_string(want) + " (not this set's file)");
      if (detail::hex(detail::fnv1a(bytes.data(), bytes.size())) != entry->at("checksum").get<std::string>())
        hcomm::fail(hcomm::errc::corrupt_frame, path + ": checksum differs from the manifest (damaged or not this set's file)");
      check(path, bytes, o.step);
      o.files.push_back(std::move(bytes));
    }
  } catch (const std::exception& e) {
    err = reason_of(e);
  }
  v = agree(err.empty(), err);
  if (!v.ok) throw stopped{2, "refusing checkpoint set " + o.dir + ": rank " + std::to_string(v.first_bad) + ": " + v.what};
  return o;
}

}  // namespace gpt
