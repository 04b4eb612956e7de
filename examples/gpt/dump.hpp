// examples/gpt/dump.hpp: --dump-tensors DIR: what one training step hands to its
// communicators, as raw float32 files: real tensors for `hcomm-collective --data FILE` and
// `hcomm-codec`, beside the tools' synthetic data.
//
//   gpt::tensor_dump d(dir, step, grid, grads.size());
//   d.prepare();                                    // collective: DIR usable, none of the names there
//   d.record_grad(offset, bucket);                  // at that step, from the trainer's taps:
//   d.record(gpt::dump_kind::pp_act_fwd, mb, sent); //   what goes to each communicator, before it goes
//   gpt::tp_tap tp{bundle.tp(), d.tp_buffer(gpt::dump_kind::tp_partial_fwd, mb)};  // model.forward(..., tp, ...)
//   d.write();                                      // collective: every rank's files, then the manifest
//
// Files in DIR (R: the world rank; float32 in the machine's byte order, little-endian):
//
//   dp-grad.rR.f32             the stage's whole gradient allocation as handed to the DP
//                              all-reduce, before it (every bucket at its offset); with an
//                              error-feedback scheme, before the communicator adds its residual
//   pp-act-fwd.rR.mb0.f32      the activation micro-batch 0 sends to the next stage
//   pp-grad-bwd.rR.mb0.f32     the activation gradient micro-batch 0 sends to the previous stage
//   tp-partial-fwd.rR.mb0.f32  the inputs (partial sums) of micro-batch 0's TP all-reduces in
//   tp-partial-bwd.rR.mb0.f32  forward and in backward, concatenated in call order (TP > 1 only)
//   manifest.tsv               rank 0: a header, then one line per file of every rank:
//                              file axis kind rank dp pp tp step micro_batch values dtype group
//
// `step` is the step line's number (1-based); `group` lists the world ranks whose files meet
// in that collective: the DP or TP group in group order (the files that sum together), or
// sender,receiver for PP. Only micro-batch 0 is kept, so the files stay bounded by the model:
// the gradient allocation, and (2 x layers of the stage + 2) x micro x T x C values per TP
// file. Nothing is ever overwritten: prepare() refuses a DIR that holds any of this run's
// names, and write() creates each file exclusively (O_EXCL). The trainer keeps a null pointer
// to the dump outside its step, so that its taps cost one test of a pointer per call.
#pragma once
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "collective.hpp"
#include "comm_buffer.hpp"
#include "exact_exchange.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/topology/grid.hpp"
#include "wire.hpp"

namespace gpt {

static_assert(std::endian::native == std::endian::little, "--dump-tensors writes float32 as little-endian bytes");

enum class dump_kind { dp_grad, pp_act_fwd, pp_grad_bwd, tp_partial_fwd, tp_partial_bwd };

// The model's TP communicator for one micro-batch's forward or backward: the bundle's (host
// or device: the model's memory goes as comm_buffer.hpp's buffer), whose all-reduce inputs
// are first appended to `into` when it is not null (the dump step; host memory only). With a
// wire (--precision bf16, wire.hpp) the all-reduce sums bfloat16 copies (recorded: the float32
// partial sums, before the copy).
template <class Tp>
class tp_tap {
  using Wire = wire16<wire_exec_t<Tp>>;

 public:
  tp_tap(Tp& tp, std::vector<float>* into, Wire* wire = nullptr) : tp_(tp), into_(into), wire_(wire) {}
  void allreduce(std::span<float> x) {
    if (into_) into_->insert(into_->end(), x.begin(), x.end());
    allreduce_on(tp_, x, wire_);
  }
  void allgather(std::span<const float> in, std::span<float> out) { tp_.allgather(comm_buffer<Tp>(in), comm_buffer<Tp>(out)); }
  // The cross-entropy's statistics (model.hpp exact_allreduce): not recorded, not compressed.
  void allreduce_exact(std::span<float> x) { exact_allreduce(tp_, x); }
  void allgather_exact(std::span<const float> in, std::span<float> out) { exact_allgather(tp_, in, out); }

 private:
  Tp& tp_;
  std::vector<float>* into_;
  Wire* wire_;
};

class tensor_dump {
 public:
  // step: 0-based index of the step to dump (the step line's number - 1); grad_values: the
  // size of this rank's gradient allocation.
  tensor_dump(std::string dir, std::int64_t step, const hcomm::grid& g, std::size_t grad_values)
      : dir_(std::move(dir)), step_(step) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    coords_ = std::to_string(g.dp_rank()) + "\t" + std::to_string(g.pp_rank()) + "\t" + std::to_string(g.tp_rank());
    std::string dp_group, tp_group;
    for (int d = 0; d < g.dp_size(); ++d) {
      if (d > 0) dp_group += ',';
      dp_group += std::to_string(g.world_rank_of(d, g.pp_rank(), g.tp_rank()));
    }
    for (int t = 0; t < g.tp_size(); ++t) {
      if (t > 0) tp_group += ',';
      tp_group += std::to_string(g.world_rank_of(g.dp_rank(), g.pp_rank(), t));
    }
    const std::string me = std::to_string(rank_);
    add(dump_kind::dp_grad, dp_group).values.assign(grad_values, 0.f);
    if (g.pp_rank() + 1 < g.pp_size()) add(dump_kind::pp_act_fwd, me + "," + std::to_string(g.next_stage()));
    if (g.pp_rank() > 0) add(dump_kind::pp_grad_bwd, me + "," + std::to_string(g.prev_stage()));
    if (g.tp_size() > 1) {
      add(dump_kind::tp_partial_fwd, tp_group);
      add(dump_kind::tp_partial_bwd, tp_group);
    }
  }

  std::int64_t step() const { return step_; }
  const std::string& dir() const { return dir_; }

  // Collective over MPI_COMM_WORLD: creates DIR if needed and checks that this rank can create files
  // in it and that none of its names (rank 0: the manifest) exist; on any rank's failure
  // every rank throws gpt::stopped(2) with that rank's reason.
  void prepare() const {
    agreed(
        [&] {
          namespace fs = std::filesystem;
          std::error_code ec;
          if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
            hcomm::fail(hcomm::errc::io_failure, "exists and is not a directory");
          fs::create_directories(dir_, ec);
          if (ec) hcomm::fail(hcomm::errc::io_failure, "cannot create the directory: " + ec.message());
          std::vector<std::string> names;
          for (const auto& f : files_) names.push_back(f.name);
          if (rank_ == 0) names.push_back(manifest_name);
          for (const auto& n : names)
            if (fs::exists(fs::symlink_status(path(n), ec)))
              hcomm::fail(hcomm::errc::io_failure,
                          path(n) + " exists (an earlier dump?); nothing is overwritten: give another directory");
          const std::string probe = path(".probe.r" + std::to_string(rank_));
          const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
          if (fd < 0) hcomm::fail(hcomm::errc::io_failure, "cannot create files in it: " + std::string(std::strerror(errno)));
          ::close(fd);
          ::unlink(probe.c_str());
        },
        2, "--dump-tensors " + dir_ + ": ");
  }

  // The taps, during the dump step. A DP bucket lands at its offset in the allocation.
  void record_grad(std::int64_t offset, std::span<const float> g) {
    std::copy(g.begin(), g.end(), files_[0].values.begin() + offset);
    files_[0].taken = true;
  }
  // A PP send of micro-batch mb (kept for mb 0).
  void record(dump_kind k, int mb, std::span<const float> x) {
    if (mb != 0) return;
    file& f = of(k);
    f.values.assign(x.begin(), x.end());
    f.taken = true;
  }
  // Where micro-batch mb's TP all-reduce inputs go: null but for mb 0 with TP > 1.
  std::vector<float>* tp_buffer(dump_kind k, int mb) {
    for (auto& f : files_)
      if (f.kind == k && mb == 0) {
        f.taken = true;
        return &f.values;
      }
    return nullptr;
  }

  // Collective over MPI_COMM_WORLD: every rank writes its files, then rank 0 the manifest of all of
  // them. On any rank's failure the files this rank wrote are removed and every rank throws
  // gpt::stopped(2) with that rank's reason.
  void write() const {
    std::vector<std::string> written;
    try {
      agreed(
          [&] {
            for (const auto& f : files_) {
              if (!f.taken) hcomm::fail(hcomm::errc::invalid_argument, "the step recorded no " + f.name);
              write_new(path(f.name), f.values);
              written.push_back(path(f.name));
            }
          },
          2, "--dump-tensors " + dir_ + ": ");
      const std::string lines = gather_lines();
      agreed(
          [&] {
            if (rank_ != 0) return;
            const std::string text = "file\taxis\tkind\trank\tdp\tpp\ttp\tstep\tmicro_batch\tvalues\tdtype\tgroup\n" + lines;
            write_new(path(manifest_name), std::span<const char>(text.data(), text.size()));
          },
          2, "--dump-tensors " + dir_ + ": ");
    } catch (const stopped&) {
      for (const auto& p : written) ::unlink(p.c_str());
      throw;
    }
  }

  static constexpr const char* manifest_name = "manifest.tsv";

 private:
  struct file {
    dump_kind kind;
    std::string name, group;
    std::vector<float> values;
    bool taken = false;  // the step reached its tap
  };
  static const char* axis_of(dump_kind k) {
    return k == dump_kind::dp_grad ? "dp" : k == dump_kind::pp_act_fwd || k == dump_kind::pp_grad_bwd ? "pp" : "tp";
  }
  static const char* kind_of(dump_kind k) {
    switch (k) {
      case dump_kind::dp_grad: return "grad";
      case dump_kind::pp_act_fwd: return "act-fwd";
      case dump_kind::pp_grad_bwd: return "grad-bwd";
      case dump_kind::tp_partial_fwd: return "partial-fwd";
      case dump_kind::tp_partial_bwd: return "partial-bwd";
    }
    return "";
  }
  file& add(dump_kind k, std::string group) {
    const std::string mb = k == dump_kind::dp_grad ? "" : ".mb0";
    files_.push_back({k, std::string(axis_of(k)) + "-" + kind_of(k) + ".r" + std::to_string(rank_) + mb + ".f32",
                      std::move(group), {}, false});
    return files_.back();
  }
  file& of(dump_kind k) {
    for (auto& f : files_)
      if (f.kind == k) return f;
    hcomm::fail(hcomm::errc::invalid_argument, std::string("--dump-tensors: this rank sends no ") + kind_of(k));
  }
  std::string path(const std::string& name) const { return (std::filesystem::path(dir_) / name).string(); }

  // Creates `p` (never over an existing file) with `bytes`; a failed write removes it.
  static void write_new(const std::string& p, std::span<const char> bytes) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
      hcomm::fail(hcomm::errc::io_failure, "cannot create " + p + ": " + std::strerror(errno) +
                                               (errno == EEXIST ? " (nothing is overwritten)" : ""));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t w = ::write(fd, bytes.data() + done, std::min<std::size_t>(bytes.size() - done, 1 << 20));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        const int e = errno;
        ::close(fd);
        ::unlink(p.c_str());
        hcomm::fail(hcomm::errc::io_failure, "cannot write " + p + ": " + std::strerror(e));
      }
      done += static_cast<std::size_t>(w);
    }
    if (::close(fd) != 0) {
      const int e = errno;
      ::unlink(p.c_str());
      hcomm::fail(hcomm::errc::io_failure, "cannot close " + p + ": " + std::strerror(e));
    }
  }
  static void write_new(const std::string& p, const std::vector<float>& v) {
    write_new(p, std::span<const char>(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  }

  // Every rank's manifest lines, in rank order, on rank 0 (empty elsewhere).
  std::string gather_lines() const {
    std::string mine;
    for (const auto& f : files_)
      mine += f.name + "\t" + axis_of(f.kind) + "\t" + kind_of(f.kind) + "\t" + std::to_string(rank_) + "\t" + coords_ +
              "\t" + std::to_string(step_ + 1) + "\t" + (f.kind == dump_kind::dp_grad ? "all" : "0") + "\t" +
              std::to_string(f.values.size()) + "\tf32\t" + f.group + "\n";
    int size = 1, len = static_cast<int>(mine.size());
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> lens(static_cast<std::size_t>(size)), offs(lens.size());
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    for (std::size_t r = 0; r < lens.size(); ++r) {
      offs[r] = total;
      total += lens[r];
    }
    std::string all(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    return all;
  }

  std::string dir_;
  std::int64_t step_ = 0;
  int rank_ = 0;
  std::string coords_;        // "dp\tpp\ttp" of this rank
  std::vector<file> files_;   // dp-grad first
};

}  // namespace gpt
