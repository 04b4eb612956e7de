// examples/gpt/checkpoint.hpp: what a checkpoint set holds of the training, and how it comes
// back: rank<r>.ckpt (parameters, Adam moments, the DP error-feedback residual, step, data
// cursor, sampling RNG), rank<r>.sparse (sparsity.hpp's topology and FLOP totals), saved as
// one set (checkpoint_set.hpp) and resumed on the same grid or re-cut for another (--reshard).
//
//   gpt::checkpointer ck(cfg, opts, grid, dog);
//   ck.save(steps_done, state, dp.residual(n));         // collective; throws gpt::stopped to stop
//   gpt::resumed r = ck.resume(state, has_residual);     // collective; loads into state
//
// Resharding: every rank reads the files of the old grid's DP replica 0 (its stages and TP
// shards hold the whole model), assembles each tensor it needs from the old shards and cuts
// it for its own stage and shard. Error-feedback residuals belong to one rank's ring chunks
// and cannot be re-cut. Sparse sets change DP and PP only: masks evolve per TP shard.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint_set.hpp"
#include "collective.hpp"
#include "config.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/topology/grid.hpp"
#include "model.hpp"
#include "msparse/msparse.hpp"
#include "optim.hpp"
#include "options.hpp"
#include "sparsity.hpp"
#include "watchdog.hpp"

namespace gpt {

// ---- rank<r>.ckpt ---------------------------------------------------------------------------
struct checkpoint_meta {
  std::string fingerprint;  // config::fingerprint() + scheme
  std::int32_t dp = 1, pp = 1, tp = 1, rank = 0;
  std::int64_t step = 0;    // next step to run
  std::uint64_t cursor = 0; // data position
  std::uint64_t rng = 0;    // sampling RNG state
};

namespace detail {
constexpr char ckpt_magic[8] = {'G', 'P', 'T', 'C', 'K', 'P', 'T', '1'};
struct writer {
  std::vector<char> buf;
  template <class T>
  void put(const T& v) {
    const char* p = reinterpret_cast<const char*>(&v);
    buf.insert(buf.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    buf.insert(buf.end(), c, c + n);
  }
};
struct reader {
  const std::vector<char>& buf;
  std::size_t pos = 0;
  std::string path;
  void need(std::size_t n) {
    if (pos + n > buf.size())
      hcomm::fail(hcomm::errc::truncated_frame, path + " is truncated (" + std::to_string(buf.size()) + " bytes)");
  }
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, buf.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  void get_bytes(void* p, std::size_t n) {
    need(n);
    std::memcpy(p, buf.data() + pos, n);
    pos += n;
  }
};
}  // namespace detail

inline std::vector<char> encode_checkpoint(const checkpoint_meta& meta, std::initializer_list<std::span<const float>> arrays) {
  detail::writer w;
  w.put_bytes(detail::ckpt_magic, 8);
  w.put(static_cast<std::uint32_t>(meta.fingerprint.size()));
  w.put_bytes(meta.fingerprint.data(), meta.fingerprint.size());
  w.put(meta.dp); w.put(meta.pp); w.put(meta.tp); w.put(meta.rank);
  w.put(meta.step); w.put(meta.cursor); w.put(meta.rng);
  w.put(static_cast<std::uint32_t>(arrays.size()));
  for (auto a : arrays) {
    w.put(static_cast<std::uint64_t>(a.size()));
    w.put_bytes(a.data(), a.size_bytes());
  }
  w.put(detail::fnv1a(w.buf.data(), w.buf.size()));
  return std::move(w.buf);
}

// The header only (magic, meta); throws with `path` and the reason.
inline checkpoint_meta decode_checkpoint_meta(const std::vector<char>& buf, const std::string& path) {
  detail::reader r{buf, 0, path};
  char magic[8];
  r.get_bytes(magic, 8);
  if (std::memcmp(magic, detail::ckpt_magic, 8) != 0) hcomm::fail(hcomm::errc::foreign_frame, path + " is not a train_gpt checkpoint");
  const auto flen = r.get<std::uint32_t>();
  if (flen > 4096) hcomm::fail(hcomm::errc::corrupt_frame, path + " has a corrupt header");
  checkpoint_meta m;
  m.fingerprint.resize(flen);
  r.get_bytes(m.fingerprint.data(), flen);
  m.dp = r.get<std::int32_t>(); m.pp = r.get<std::int32_t>(); m.tp = r.get<std::int32_t>(); m.rank = r.get<std::int32_t>();
  m.step = r.get<std::int64_t>(); m.cursor = r.get<std::uint64_t>(); m.rng = r.get<std::uint64_t>();
  return m;
}

// Verifies everything (header against `expect`, sizes, checksum), then fills `arrays` and
// returns the saved meta (step, cursor, rng). Nothing is written on a refusal.
inline checkpoint_meta decode_checkpoint(const std::vector<char>& buf, const std::string& path, const checkpoint_meta& expect,
                                         std::initializer_list<std::span<float>> arrays) {
  const checkpoint_meta m = decode_checkpoint_meta(buf, path);
  if (m.fingerprint != expect.fingerprint)
    hcomm::fail(hcomm::errc::mismatch, path + " was written by a different configuration\n  checkpoint: " + m.fingerprint +
                                           "\n  this run:   " + expect.fingerprint);
  if (m.dp != expect.dp || m.pp != expect.pp || m.tp != expect.tp || m.rank != expect.rank)
    hcomm::fail(hcomm::errc::mismatch, path + " was written by grid dp" + std::to_string(m.dp) + " pp" + std::to_string(m.pp) +
                                           " tp" + std::to_string(m.tp) + " rank " + std::to_string(m.rank) +
                                           ", this run is dp" + std::to_string(expect.dp) + " pp" + std::to_string(expect.pp) +
                                           " tp" + std::to_string(expect.tp) + " rank " + std::to_string(expect.rank));
  detail::reader r{buf, 0, path};
  r.pos = 8 + 4 + m.fingerprint.size() + 4 * 4 + 8 * 3;
  const auto n = r.get<std::uint32_t>();
  if (n != arrays.size()) hcomm::fail(hcomm::errc::mismatch, path + " has the wrong number of arrays");
  std::vector<std::size_t> offsets;
  for (auto a : arrays) {
    const auto len = r.get<std::uint64_t>();
    if (len != a.size())
      hcomm::fail(hcomm::errc::mismatch, path + " has an array of " + std::to_string(len) + " floats, expected " +
                                             std::to_string(a.size()));
    offsets.push_back(r.pos);
    r.need(a.size_bytes());
    r.pos += a.size_bytes();
  }
  const std::size_t body = r.pos;
  const auto sum = r.get<std::uint64_t>();
  if (r.pos != buf.size()) hcomm::fail(hcomm::errc::corrupt_frame, path + " has trailing bytes");
  if (sum != detail::fnv1a(buf.data(), body)) hcomm::fail(hcomm::errc::corrupt_frame, path + ": checksum mismatch (corrupt file)");
  std::size_t i = 0;
  for (auto a : arrays) std::memcpy(a.data(), buf.data() + offsets[i++], a.size_bytes());
  return m;
}

// ---- rank<r>.sparse -------------------------------------------------------------------------
// This rank's sparsity state (masks, schedule, FLOP totals; the growth RNG is counter-based
// on (seed, step)), with a trailing checksum. Empty when not sparse.
template <class Sparse>
std::vector<char> encode_sparsity(const Sparse& sp) {
  if (!sp.active()) return {};
  msparse::byte_writer w;
  for (char ch : std::string("GPTSPAR1")) w.put(ch);
  const auto t = sp.topology().to_bytes();
  w.put_array(t);
  sp.flops().save(w);
  auto b = w.take();
  const std::uint64_t sum = detail::fnv1a(reinterpret_cast<const char*>(b.data()), b.size());
  const auto* p = reinterpret_cast<const std::uint8_t*>(&sum);
  b.insert(b.end(), p, p + 8);
  return std::vector<char>(reinterpret_cast<const char*>(b.data()), reinterpret_cast<const char*>(b.data()) + b.size());
}

// Such a file verified against this run's sparsity (`sp`: layers, schedule, seed, mask shapes)
// and decoded; throws with `path` and the reason.
template <class Sparse>
sparse_state decode_sparsity(const std::vector<char>& bytes, const std::string& path, const Sparse& sp) {
  const auto& mine = sp.topology();
  const std::vector<std::uint8_t> b(bytes.begin(), bytes.end());
  if (b.size() < 16 || std::string(b.begin(), b.begin() + 8) != "GPTSPAR1")
    hcomm::fail(hcomm::errc::foreign_frame, path + " is not a train_gpt sparsity checkpoint");
  std::uint64_t sum;
  std::memcpy(&sum, b.data() + b.size() - 8, 8);
  if (sum != detail::fnv1a(reinterpret_cast<const char*>(b.data()), b.size() - 8))
    hcomm::fail(hcomm::errc::corrupt_frame, path + ": checksum mismatch (corrupt or truncated)");
  msparse::byte_reader r(b.data() + 8, b.size() - 16);
  const auto tb = r.get_array<std::uint8_t>();
  sparse_state s{msparse::sparse_topology::from_bytes(tb), sp.flops()};
  const auto& topo = s.topology;
  if (topo.size() != mine.size() || !(topo.sched() == mine.sched()) || topo.seed() != mine.seed())
    hcomm::fail(hcomm::errc::mismatch, path + " was written by another sparsity configuration");
  for (std::size_t i = 0; i < topo.size(); ++i)
    if (topo.mask_of(i).rows() != mine.mask_of(i).rows() || topo.mask_of(i).cols() != mine.mask_of(i).cols())
      hcomm::fail(hcomm::errc::mismatch, path + ": mask shapes differ");
  s.flops.load(r);
  return s;
}

// --reshard to another DP and PP size (the same TP size): files[s] (at paths[s]) is the
// sparsity file of old pipeline stage s for this rank's TP shard. Each block layer's mask is
// the one of the old stage that held the layer (a pure function of the global layer index
// and the TP shard, so it is this place's mask on the new grid too); the schedule, seed and
// rule are the configuration's, the FLOP totals are global.
template <class Sparse>
sparse_state recut_sparsity(const std::vector<const std::vector<char>*>& files, const std::vector<std::string>& paths,
                            const Sparse& sp) {
  const auto& mine = sp.topology();
  msparse::flop_counter fc = sp.flops();
  std::vector<msparse::sparse_topology> old;
  for (std::size_t k = 0; k < files.size(); ++k) {
    sparse_state s = decode_sparsity(*files[k], paths[k], sp);
    old.push_back(std::move(s.topology));
    if (k == 0) fc = std::move(s.flops);
  }
  const std::size_t n = mine.size();
  std::vector<const msparse::mask*> masks(n);
  std::int64_t last = old.empty() ? 0 : old[0].last_step();
  for (std::size_t i = 0; i < n; ++i) {
    masks[i] = &mine.mask_of(i);  // not a block layer of this stage: full, as after setup
    bool found = false;
    for (const auto& o : old)
      if (o.layer(i).sparse) {
        masks[i] = &o.mask_of(i);
        found = true;
        break;
      }
    if (mine.layer(i).sparse && !found)
      hcomm::fail(hcomm::errc::mismatch, "sparsity: layer " + mine.layer(i).name + " is sparse in no file of the set");
  }
  for (const auto& o : old)
    if (o.last_step() != last) hcomm::fail(hcomm::errc::mismatch, "sparsity: the set's stages were updated at different steps");
  // this place's topology record (layer flags, schedule, rule, seed, TP shard) with the
  // old stages' masks and last update step: [header, step, tp parts, index, axes][masks][checksum]
  auto b = mine.to_bytes();
  std::size_t mask_bytes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    msparse::byte_writer w;
    mine.mask_of(i).save(w);
    mask_bytes += w.bytes().size();
  }
  const std::size_t head = b.size() - mask_bytes - 8;
  const std::size_t step_at = head - (8 + 8 + 8 + n * sizeof(msparse::shard_axis)) - 8;
  b.resize(head);
  std::memcpy(b.data() + step_at, &last, 8);
  msparse::byte_writer w;
  std::uint64_t h = 0x5EED5EED5EED5EEDull;  // sparse_topology::checksum()
  for (std::size_t i = 0; i < n; ++i) {
    masks[i]->save(w);
    h = msparse::splitmix64(h ^ masks[i]->checksum());
  }
  w.put<std::uint64_t>(h);
  const auto& tail = w.bytes();
  b.insert(b.end(), tail.begin(), tail.end());
  auto topo = msparse::sparse_topology::from_bytes(b);
  if (topo.checksum() != h || topo.last_step() != last)
    hcomm::fail(hcomm::errc::mismatch, "sparsity: re-cut topology record is inconsistent");
  return {std::move(topo), std::move(fc)};
}

// ---- the trainer's sets ---------------------------------------------------------------------
// The training state a set holds, by reference (the step is passed on its own), of any
// backend: the files hold host copies (written from, read into the backend's memory).
template <class Model = stage_model, class Adam = adamw, class Sparse = sparse_trainer>
struct basic_train_state {
  Model& model;
  Adam& adam;
  Sparse& sparsity;
  std::uint64_t& cursor;  // data position after the steps done
  std::uint64_t& rng;     // sampling RNG
};
using train_state = basic_train_state<>;

// A backend array's values as a host span: the array itself where the host may read it,
// else a copy kept in `keep`.
template <class Ops, class Array>
std::span<const float> host_values(const Ops& ops, const Array& a, std::vector<float>& keep) {
  if constexpr (Ops::host_memory) return {a.data(), a.size()};
  else {
    keep.resize(a.size());
    ops.download(keep.data(), a.data(), a.size());
    return keep;
  }
}
// Host values into a backend array (moved in where the array is a host vector).
template <class Ops, class Array>
void set_values(const Ops& ops, Array& a, std::vector<float>&& h) {
  if constexpr (Ops::host_memory) a = std::move(h);
  else ops.upload(a.data(), h.data(), h.size());
}

struct resumed {
  std::int64_t step = 0;        // steps done
  std::vector<float> residual;  // the DP error-feedback residual to load (empty: none)
};

class checkpointer {
 public:
  checkpointer(const config& c, const run_options& o, const hcomm::grid& g, watchdog& dog)
      : cfg_(c), opt_(o), grid_(g), dog_(dog) {
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  }

  // The set of `steps_done` steps in --save DIR (every rank writes, all agree, rank 0's
  // manifest makes it current); `residual`: the DP error-feedback residual. A failure is
  // known to every rank at once: the run stops with the reason (gpt::stopped) or, with
  // --on-save-error continue, goes on with the previous set current. A step already saved
  // (--save-every, then the end of the run) is not saved again.
  // Whether the set of `steps_done` steps is saved already (save() would do nothing).
  bool saved(std::int64_t steps_done) const { return steps_done == last_saved_; }

  template <class State>
  void save(std::int64_t steps_done, const State& s, std::span<const float> residual) {
    if (steps_done == last_saved_) return;
    auto w = dog_.watch("checkpoint save", steps_done);
    const std::string r = std::to_string(world_rank_);
    std::vector<float> hw, hm, hv;  // host copies (backends without host memory)
    std::vector<set_file> files;
    files.push_back({"rank" + r + ".ckpt",
                     encode_checkpoint(meta(steps_done, s), {host_values(s.model.ops(), s.adam.weights(s.model), hw),
                                                             host_values(s.model.ops(), s.adam.m, hm),
                                                             host_values(s.model.ops(), s.adam.v, hv), residual})});
    if (s.sparsity.active()) files.push_back({"rank" + r + ".sparse", encode_sparsity(s.sparsity)});
    const save_verdict v = save_set(opt_.save, set_meta(steps_done), files, opt_.keep, last_saved_ < 0);
    if (!v.ok && v.fatal) throw stopped{3, v.message + "; stopping"};
    if (!v.ok && opt_.on_save_error == "stop") throw stopped{3, v.message + "; stopping (--on-save-error continue trains on)"};
    if (!v.ok) {
      if (world_rank_ == 0) std::fprintf(stderr, "train_gpt: %s; training goes on (--on-save-error continue)\n", v.message.c_str());
      return;
    }
    last_saved_ = steps_done;
    if (world_rank_ == 0 && !opt_.quiet)
      std::printf("saved checkpoint set %s at step %lld\n", set_dir(opt_.save, steps_done).c_str(),
                  static_cast<long long>(steps_done));
  }

  // The newest complete set of --resume DIR into `s`, verified on every rank before anything
  // changes (every rank throws the same gpt::stopped otherwise). `has_residual`: this run's DP
  // communicator keeps an error-feedback residual (returned for the caller to load).
  template <class State>
  resumed resume(State& s, bool has_residual) {
    auto w = dog_.watch("checkpoint resume", 0);
    const int D = grid_.dp_size(), P = grid_.pp_size(), T = grid_.tp_size();
    const bool sparse = s.sparsity.active();
    const bool grow = opt_.resume_block > 0;  // a set of a shorter --block: re-cut, its position table grown
    bool recut = false;
    auto names_of = [&](int dp, int pp, int tp) {
      std::vector<std::string> n;
      recut = grow || dp != D || pp != P || tp != T;
      if (!recut) {
        n.push_back("rank" + std::to_string(world_rank_) + ".ckpt");
        if (sparse) n.push_back("rank" + std::to_string(world_rank_) + ".sparse");
        return n;
      }
      // masks under TP are evolved per shard (per-shard targets, top-k and RNG keys): a set of
      // another TP holds masks that no run on this TP would have, so only DP and PP may change
      if (sparse && tp != T)
        hcomm::fail(hcomm::errc::unsupported, "resharding a sparse set (--sparsity) to another TP size is not supported: "
                                              "its masks were evolved per TP shard (per-shard targets, top-k and RNG), so "
                                              "no re-cut gives the masks of a tp" + std::to_string(T) + " run; resume it "
                                              "with --tp " + std::to_string(tp) + " (DP and PP may change)");
      if (has_residual && !opt_.reshard_reset_residuals)
        hcomm::fail(hcomm::errc::unsupported, "the set holds error-feedback residuals, which belong to one rank's ring chunks "
                                              "and cannot be re-cut to another grid or --block (--reshard-reset-residuals "
                                              "resumes with them reset to zero)");
      for (int st = 0; st < pp; ++st)
        for (int t = 0; t < tp; ++t) n.push_back("rank" + std::to_string(t + tp * dp * st) + ".ckpt");
      // sparse (same TP): the sparsity files of this TP shard on every old stage
      if (sparse)
        for (int st = 0; st < pp; ++st) n.push_back("rank" + std::to_string(grid_.tp_rank() + tp * dp * st) + ".sparse");
      return n;
    };
    // header check: a file of another save names its step (a mixed set), else its other reason
    auto check = [&](const std::string& path, const std::vector<char>& bytes, std::int64_t set_step) {
      if (path.ends_with(".sparse")) return;
      const checkpoint_meta m = decode_checkpoint_meta(bytes, path);
      if (m.step != set_step)
        hcomm::fail(hcomm::errc::mismatch, path + " holds step " + std::to_string(m.step) + ", the set is step " +
                                               std::to_string(set_step) + " (a mixed set: files of different saves)");
      if (!path.ends_with("/rank" + std::to_string(m.rank) + ".ckpt"))
        hcomm::fail(hcomm::errc::mismatch, path + " is rank " + std::to_string(m.rank) + "'s file (a mixed set)");
    };
    set_info expect = set_meta(0);
    expect.fingerprint = fingerprint(saved_config());
    opened_set set = open_newest_set(opt_.resume, expect, opt_.reshard, names_of, check);
    // Decode into scratch first so that a refusal leaves every rank untouched.
    std::vector<float> p(s.model.params.size()), m(p.size()), v(p.size()), res(p.size());
    checkpoint_meta got;
    std::optional<sparse_state> sp;
    agreed(
        [&] {
          if (recut) {
            got = recut_from(set, s.model, p, m, v);
            if (sparse) {  // masks of each layer from the old stage that held it
              const std::size_t k = static_cast<std::size_t>(set.pp * set.tp);
              std::vector<const std::vector<char>*> files;
              std::vector<std::string> paths;
              for (std::size_t i = k; i < set.files.size(); ++i) {
                files.push_back(&set.files[i]);
                paths.push_back(set.dir + "/" + set.names[i]);
              }
              sp = recut_sparsity(files, paths, s.sparsity);
            }
            return;
          }
          got = decode_checkpoint(set.files[0], set.dir + "/" + set.names[0], meta(0, s),
                                  {std::span<float>(p), std::span<float>(m), std::span<float>(v), std::span<float>(res)});
          if (sparse) sp = decode_sparsity(set.files[1], set.dir + "/" + set.names[1], s.sparsity);
        },
        2, "refusing checkpoint set " + set.dir + ": ");
    set_values(s.model.ops(), s.model.params, std::move(p));
    s.adam.adopt_master(s.model);  // bf16: the file holds the master weights
    set_values(s.model.ops(), s.adam.m, std::move(m));
    set_values(s.model.ops(), s.adam.v, std::move(v));
    resumed r;
    if (has_residual && !recut) r.residual = std::move(res);
    r.step = got.step;
    s.cursor = got.cursor;
    s.rng = got.rng;
    last_saved_ = recut ? -1 : r.step;
    s.sparsity.restore(r.step, std::move(sp), saved_config().block);
    if (world_rank_ == 0 && !opt_.quiet) {  // where it was written (manifests before the fields: unknown)
      const auto recorded = [&](const char* key) {
        const auto it = set.manifest.find(key);
        return it != set.manifest.end() && it->is_string() ? it->get<std::string>() : std::string("unknown");
      };
      std::printf("resumed checkpoint set %s, written on --device %s, --precision %s (this run: --device %s)\n",
                  set.dir.c_str(), recorded("device").c_str(), recorded("precision").c_str(), opt_.device.c_str());
    }
    if (recut && world_rank_ == 0 && !opt_.quiet && (set.dp != D || set.pp != P || set.tp != T))
      std::printf("resharded checkpoint set %s from grid dp%d pp%d tp%d\n", set.dir.c_str(), set.dp, set.pp, set.tp);
    if (grow && world_rank_ == 0 && !opt_.quiet)
      std::printf("resumed checkpoint set %s of --block %d at --block %d%s\n", set.dir.c_str(), opt_.resume_block,
                  cfg_.block, cfg_.arch == arch_kind::neox ? "" : " (position rows beyond it from initialisation)");
    return r;
  }

 private:
  std::string fingerprint(const config& c) const {
    std::string f = c.fingerprint() + " scheme " + opt_.scheme;
    if (opt_.sparsity.sparse()) f += " " + opt_.sparsity.describe(c.steps);
    return f;
  }
  std::string fingerprint() const { return fingerprint(cfg_); }
  // The configuration that wrote the --resume set: this run's, at --resume-block's length.
  config saved_config() const {
    config c = cfg_;
    if (opt_.resume_block > 0) c.block = opt_.resume_block;
    return c;
  }
  template <class State>
  checkpoint_meta meta(std::int64_t steps_done, const State& s) const {
    checkpoint_meta m;
    m.fingerprint = fingerprint();
    m.dp = grid_.dp_size(); m.pp = grid_.pp_size(); m.tp = grid_.tp_size(); m.rank = world_rank_;
    m.step = steps_done; m.cursor = s.cursor; m.rng = s.rng;
    return m;
  }
  set_info set_meta(std::int64_t steps_done) const {
    set_info i;
    i.fingerprint = fingerprint();
    i.dp = grid_.dp_size(); i.pp = grid_.pp_size(); i.tp = grid_.tp_size();
    i.step = steps_done;
    i.device = opt_.device;
    i.precision = cfg_.bf16 ? "bf16" : "fp32";
    return i;
  }
  // --reshard: the old grid's DP-replica-0 files (stage s, shard t in set.files[s * tp + t])
  // decoded, each tensor assembled whole from its old shards and cut for this rank's place.
  // Step, data cursor and RNG are global; parameters and Adam moments are per element.
  // --resume-block: the position table, saved shorter, continues with the rows of its
  // initial draw (params.hpp initial_values) and zero moments.
  template <class Model>
  checkpoint_meta recut_from(const opened_set& set, const Model& model, std::vector<float>& p, std::vector<float>& m,
                             std::vector<float>& v) const {
    const config old = saved_config();
    const auto& specs = model.specs();
    const auto old_specs = global_specs(old);
    std::vector<std::vector<float>> gp(specs.size()), gm(specs.size()), gv(specs.size());
    std::vector<char> have(specs.size(), 0);
    checkpoint_meta got;
    for (int s = 0; s < set.pp; ++s)
      for (int t = 0; t < set.tp; ++t) {
        const std::size_t i = static_cast<std::size_t>(s * set.tp + t);
        const auto layout = stage_tensors(old, {set.pp, s, set.tp, t});
        const std::size_t n = layout.empty() ? 0 : static_cast<std::size_t>(layout.back().offset + layout.back().numel);
        std::vector<float> op(n), om(n), ov(n), ores(n);
        checkpoint_meta want;
        want.fingerprint = fingerprint(old);
        want.dp = set.dp; want.pp = set.pp; want.tp = set.tp;
        want.rank = t + set.tp * set.dp * s;
        got = decode_checkpoint(set.files[i], set.dir + "/" + set.names[i], want,
                                {std::span<float>(op), std::span<float>(om), std::span<float>(ov), std::span<float>(ores)});
        for (const auto& lt : layout) {
          if (lt.tied_copy) continue;  // the first stage's wte is the same tensor
          const auto& sp = old_specs[lt.global];
          for (auto* g : {&gp[lt.global], &gm[lt.global], &gv[lt.global]}) g->resize(static_cast<std::size_t>(sp.numel()));
          insert_shard(sp, op.data() + lt.offset, set.tp, t, gp[lt.global].data());
          insert_shard(sp, om.data() + lt.offset, set.tp, t, gm[lt.global].data());
          insert_shard(sp, ov.data() + lt.offset, set.tp, t, gv[lt.global].data());
          have[lt.global] = 1;
        }
      }
    for (const auto& lt : model.tensors()) {
      if (!have[lt.global]) hcomm::fail(hcomm::errc::mismatch, "tensor " + specs[lt.global].name + " is in no file of the set");
      const auto& sp = specs[lt.global];
      const std::size_t saved = gp[lt.global].size(), n = static_cast<std::size_t>(sp.numel());
      if (saved != n) {  // the position table of a shorter --block: rows [old T, T) appended
        if (sp.name != "wpe" || saved > n)
          hcomm::fail(hcomm::errc::mismatch, "tensor " + sp.name + " has " + std::to_string(saved) + " values in the set, " +
                                                 std::to_string(n) + " in this run");
        const std::vector<float> init = initial_values(sp, lt.global, cfg_.seed);
        gp[lt.global].insert(gp[lt.global].end(), init.begin() + static_cast<std::ptrdiff_t>(saved), init.end());
        gm[lt.global].resize(n, 0.f);
        gv[lt.global].resize(n, 0.f);
      }
      extract_shard(sp, gp[lt.global].data(), grid_.tp_size(), grid_.tp_rank(), p.data() + lt.offset);
      extract_shard(sp, gm[lt.global].data(), grid_.tp_size(), grid_.tp_rank(), m.data() + lt.offset);
      extract_shard(sp, gv[lt.global].data(), grid_.tp_size(), grid_.tp_rank(), v.data() + lt.offset);
    }
    return got;
  }

  config cfg_;
  run_options opt_;
  const hcomm::grid& grid_;
  watchdog& dog_;
  int world_rank_ = 0;
  std::int64_t last_saved_ = -1;  // steps of the last set saved or resumed (-1: none yet)
};

}  // namespace gpt
