// hcomm/exec/host_team.hpp: the team handle of the host backends (exec/team.hpp).
//
// host_team<false> is host-fast: a phase is a loop over the team's threads, per-thread state
// is an array indexed by the thread, collectives are loops in the order exec/team.hpp
// defines. host_team<true> is host-check (tests): the same, plus
//  - each phase runs its threads in a shuffled order (seed, team and phase pick it);
//  - scratch is poisoned and shadowed word by word (phase and thread of the last write, the
//    readers of the current phase): a read of a word no phase wrote, two threads writing one
//    word in a phase, or a thread reading a word another thread writes in the same phase
//    throws hcomm::error(kernel_check) naming kernel, team, phase, threads, scratch and index;
//  - per-thread state may be touched by its own thread inside a phase only, and a collective
//    reads no lane that was never written;
//  - collectives inside a phase, writes of scratch outside one, and shuffles from a lane
//    outside the warp are reported the same way.
// So a planted race is caught on every run, not by luck, and outputs can be compared with
// host-fast's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/core/half.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::exec::detail {

// Bump allocation over blocks that never move (per-thread arrays of one team).
class host_arena {
 public:
  void* take(std::size_t bytes) {
    bytes = scratch_round(bytes == 0 ? 1 : bytes);
    while (block_ < blocks_.size() && used_ + bytes > sizes_[block_]) {
      ++block_;
      used_ = 0;
    }
    if (block_ == blocks_.size()) {
      const std::size_t sz = bytes > min_block ? bytes : min_block;
      blocks_.emplace_back(new (std::align_val_t{64}) std::byte[sz]);
      sizes_.push_back(sz);
      used_ = 0;
    }
    void* p = blocks_[block_].get() + used_;
    used_ += bytes;
    return p;
  }
  void reset() noexcept {
    block_ = 0;
    used_ = 0;
  }

 private:
  struct aligned_delete {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
  };
  static constexpr std::size_t min_block = 256 * 1024;
  std::vector<std::unique_ptr<std::byte[], aligned_delete>> blocks_;
  std::vector<std::size_t> sizes_;
  std::size_t block_ = 0, used_ = 0;
};

// What host-check knows about the running kernel, for its reports.
struct check_context {
  const char* kernel = "";
  std::uint64_t seed = 0;
  std::size_t team = 0;
  int phase = 0;       // phases completed in this team
  int thread = -1;     // the thread running now (inside a phase)
  bool in_phase = false;

  // A read of a never-written word inside a phase is reported at the end of the phase, so
  // that a write by another thread later in the same phase is reported as what it is (a
  // missing boundary), whatever order the shuffle picked.
  std::string pending;

  std::string message(const std::string& what) const {
    return std::string("host-check: kernel ") + kernel + ", team " + std::to_string(team) + ", phase " +
           std::to_string(phase) +
           (in_phase ? ", thread " + std::to_string(thread) : std::string(", team-level code")) + ": " + what +
           " (seed " + std::to_string(seed) + ")";
  }
  [[noreturn]] void report(const std::string& what) const { fail(errc::kernel_check, message(what)); }
};

// One shadow entry per scratch element.
struct shadow_word {
  int write_phase = -1, writer = -1;
  int read_phase = -1, reader = -1;  // reader -2: several threads read it in read_phase
};

// Element access of a checked view: reads and writes are reported to the view.
template <class View, class T>
class checked_ref {
 public:
  checked_ref(const View* v, std::size_t i) : v_(v), i_(i) {}
  operator T() const {
    v_->note_read(i_);
    return v_->data[i_];
  }
  checked_ref& operator=(const T& x) {
    v_->note_write(i_);
    v_->data[i_] = x;
    return *this;
  }
  checked_ref& operator=(const checked_ref& o) { return *this = static_cast<T>(o); }
  template <class U>
  checked_ref& operator+=(const U& x) { return *this = static_cast<T>(static_cast<T>(*this) + x); }
  template <class U>
  checked_ref& operator-=(const U& x) { return *this = static_cast<T>(static_cast<T>(*this) - x); }
  template <class U>
  checked_ref& operator|=(const U& x) { return *this = static_cast<T>(static_cast<T>(*this) | x); }
  template <class U>
  checked_ref& operator&=(const U& x) { return *this = static_cast<T>(static_cast<T>(*this) & x); }
  template <class U>
  checked_ref& operator^=(const U& x) { return *this = static_cast<T>(static_cast<T>(*this) ^ x); }
  checked_ref& operator++() { return *this += 1; }
  checked_ref& operator--() { return *this -= 1; }

 private:
  const View* v_;
  std::size_t i_;
};

// Team scratch under host-check.
template <class T>
struct checked_shared_view {
  T* data = nullptr;
  shadow_word* shadow = nullptr;
  std::size_t n = 0;
  const char* label = "";
  check_context* ctx = nullptr;

  checked_ref<checked_shared_view, T> operator[](std::size_t i) const {
    if (i >= n)
      ctx->report("index " + std::to_string(i) + " outside shared '" + label + "' of " + std::to_string(n) +
                  " elements");
    return {this, i};
  }
  void note_read(std::size_t i) const {
    shadow_word& s = shadow[i];
    const auto where = [&] { return "shared '" + std::string(label) + "'[" + std::to_string(i) + "]"; };
    if (s.write_phase < 0) {
      if (!ctx->in_phase) ctx->report("reads " + where() + ", which no thread wrote");
      if (ctx->pending.empty()) ctx->pending = ctx->message("reads " + where() + ", which no thread wrote");
    }
    if (!ctx->in_phase) return;  // team-level code reads a value every thread sees
    if (s.write_phase == ctx->phase && s.writer != ctx->thread)
      ctx->report("reads " + where() + ", which thread " + std::to_string(s.writer) +
                  " writes in the same phase (a missing phase boundary)");
    if (s.read_phase != ctx->phase) {
      s.read_phase = ctx->phase;
      s.reader = ctx->thread;
    } else if (s.reader != ctx->thread) {
      s.reader = -2;
    }
  }
  void note_write(std::size_t i) const {
    shadow_word& s = shadow[i];
    const auto where = [&] { return "shared '" + std::string(label) + "'[" + std::to_string(i) + "]"; };
    if (!ctx->in_phase)
      ctx->report("writes " + where() + " outside a phase (every thread of a GPU team would write it)");
    if (s.write_phase == ctx->phase && s.writer != ctx->thread)
      ctx->report("writes " + where() + ", which thread " + std::to_string(s.writer) + " also writes in this phase");
    if (s.read_phase == ctx->phase && s.reader != ctx->thread)
      ctx->report("writes " + where() + ", which " +
                  (s.reader == -2 ? std::string("other threads read") : "thread " + std::to_string(s.reader) + " reads") +
                  " in the same phase (a missing phase boundary)");
    s.write_phase = ctx->phase;
    s.writer = ctx->thread;
  }
};

// Per-thread state under host-check: thread t's slot, touched only by thread t in a phase.
template <class T>
struct checked_thread_view {
  T* data = nullptr;
  unsigned char* written = nullptr;  // per thread: ever written
  check_context* ctx = nullptr;

  decltype(auto) operator[](int t) const {
    if (!ctx->in_phase)
      ctx->report("team-level code touches per-thread state of thread " + std::to_string(t) +
                  " (read it through a collective)");
    if (t != ctx->thread)
      ctx->report("touches per-thread state of thread " + std::to_string(t) + " (its own is [" +
                  std::to_string(ctx->thread) + "])");
    if constexpr (std::is_arithmetic_v<T>) {
      return checked_ref<checked_thread_view, T>{this, static_cast<std::size_t>(t)};
    } else {
      written[t] = 1;  // a class value: every access counts as a write
      return static_cast<T&>(data[t]);
    }
  }
  void note_read(std::size_t t) const {
    if (!written[t]) ctx->report("reads its per-thread value before writing it");
  }
  void note_write(std::size_t t) const { written[t] = 1; }
  // Collectives read lane t of the input.
  T lane(int t, const char* what) const {
    if (!written[t])
      ctx->report(std::string(what) + " reads the per-thread value of thread " + std::to_string(t) +
                  ", which it never wrote");
    return data[t];
  }
};

// A small fast generator for the shuffles (splitmix64).
inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Per-thread state of host_team<Checked> (one type per backend, so collectives deduce T).
template <class T, bool Checked>
struct host_thread_view;
template <class T>
struct host_thread_view<T, false> : raw_view<T> {};
template <class T>
struct host_thread_view<T, true> : checked_thread_view<T> {};

template <bool Checked>
class host_team {
 public:
  template <class T>
  using thread_view = host_thread_view<T, Checked>;
  template <class T>
  using shared_view = std::conditional_t<Checked, checked_shared_view<T>, raw_view<T>>;

  host_team(int size, std::size_t league, std::size_t scratch_bytes, const char* kernel, std::uint64_t seed)
      : size_(size), league_(league), scratch_bytes_(scratch_bytes) {
    scratch_.reset(new (std::align_val_t{64}) std::byte[scratch_bytes_ > 0 ? scratch_bytes_ : 1]);
    scratch_base_ = scratch_.get();
    if constexpr (Checked) {
      ctx_.kernel = kernel;
      ctx_.seed = seed;
      order_.resize(static_cast<std::size_t>(size));
    }
  }

  // A host-fast team over scratch and an arena that another backend owns (exec/kokkos_team.hpp).
  host_team(int size, std::size_t league, std::byte* scratch, std::size_t scratch_bytes, host_arena& arena)
    requires(!Checked)
      : size_(size), league_(league), scratch_bytes_(scratch_bytes), scratch_base_(scratch), arena_(&arena) {}

  // Starts team `rank`: scratch and per-thread state are handed out afresh.
  void begin(std::size_t rank) {
    rank_ = rank;
    scratch_used_ = 0;
    in_phase_ = false;
    arena_->reset();
    if constexpr (Checked) {
      ctx_.team = rank;
      ctx_.phase = 0;
      ctx_.in_phase = false;
      ctx_.pending.clear();
      shadows_.clear();
      std::memset(scratch_base_, 0xA5, scratch_bytes_);  // poison: unwritten reads give garbage
    }
  }

  int size() const noexcept { return size_; }
  std::size_t league_rank() const noexcept { return rank_; }
  std::size_t league_size() const noexcept { return league_; }

  // One phase: f(t) for every thread t, then (implicitly) a barrier.
  template <class F>
  void for_threads(F&& f) {
    if (in_phase_) report("for_threads inside a phase (phases do not nest)");
    in_phase_ = true;
    if constexpr (Checked) {
      ctx_.in_phase = true;
      shuffled(order_, ctx_.team * 1315423911ull + static_cast<std::uint64_t>(ctx_.phase));
      for (int i = 0; i < size_; ++i) {
        ctx_.thread = order_[static_cast<std::size_t>(i)];
        f(ctx_.thread);
      }
      if (!ctx_.pending.empty()) fail(errc::kernel_check, ctx_.pending);
      ctx_.in_phase = false;
      ctx_.thread = -1;
      ++ctx_.phase;
    } else {
      for (int t = 0; t < size_; ++t) f(t);
    }
    in_phase_ = false;
  }

  // n elements of team-shared scratch (declared in the kernel's scratch_bytes).
  template <class T>
  shared_view<T> shared(std::size_t n, const char* label = "scratch") {
    static_assert(std::is_trivially_copyable_v<T>, "hcomm: team scratch holds trivially copyable values");
    if (in_phase_) report("shared() inside a phase (declare scratch in team-level code)");
    const std::size_t bytes = scratch_for<T>(n);
    if (scratch_used_ + bytes > scratch_bytes_)
      report("declares " + std::to_string(scratch_used_ + bytes) + " bytes of scratch, its scratch_bytes() says " +
             std::to_string(scratch_bytes_));
    T* p = reinterpret_cast<T*>(scratch_base_ + scratch_used_);
    scratch_used_ += bytes;
    if constexpr (Checked) {
      shadows_.emplace_back(new shadow_word[n > 0 ? n : 1]);
      return shared_view<T>{p, shadows_.back().get(), n, label, &ctx_};
    } else {
      return shared_view<T>{p};
    }
  }

  // One T per thread, living across phases (registers on a GPU).
  template <class T>
  thread_view<T> per_thread() {
    static_assert(std::is_trivially_copyable_v<T>, "hcomm: per-thread state holds trivially copyable values");
    if (in_phase_) report("per_thread() inside a phase (declare it in team-level code)");
    T* p = static_cast<T*>(arena_->take(sizeof(T) * static_cast<std::size_t>(size_)));
    if constexpr (Checked) {
      auto* w = static_cast<unsigned char*>(arena_->take(static_cast<std::size_t>(size_)));
      std::memset(w, 0, static_cast<std::size_t>(size_));
      std::memset(static_cast<void*>(p), 0xA5, sizeof(T) * static_cast<std::size_t>(size_));
      return thread_view<T>{{p, w, &ctx_}};
    } else {
      return thread_view<T>{{p}};
    }
  }

  // ---- collectives (team-level; see exec/team.hpp for their exact order) ----

  template <class T>
  thread_view<std::uint32_t> ballot(const thread_view<T>& p) {
    enter("ballot");
    auto out = per_thread<std::uint32_t>();
    for (int w = 0; w < size_; w += warp_size) {
      std::uint32_t m = 0;
      for (int l = 0; l < warp_size; ++l) m |= static_cast<std::uint32_t>(get(p, w + l, "ballot") != T{}) << l;
      for (int l = 0; l < warp_size; ++l) set(out, w + l, m);
    }
    return out;
  }

  template <class T>
  thread_view<T> shuffle(const thread_view<T>& v, const thread_view<int>& src) {
    enter("shuffle");
    auto out = per_thread<T>();
    for (int t = 0; t < size_; ++t) {
      const int s = get(src, t, "shuffle");
      if constexpr (Checked)
        if (s < 0 || s >= warp_size)
          report("shuffle: thread " + std::to_string(t) + " reads lane " + std::to_string(s) +
                 ", outside its warp's lanes 0..31");
      set(out, t, get(v, (t & ~(warp_size - 1)) + (s & (warp_size - 1)), "shuffle"));
    }
    return out;
  }

  template <class T>
  thread_view<T> shuffle_xor(const thread_view<T>& v, int mask) {
    enter("shuffle_xor");
    if (mask < 0 || mask >= warp_size) report("shuffle_xor with lane mask " + std::to_string(mask) + " outside 0..31");
    auto out = per_thread<T>();
    for (int t = 0; t < size_; ++t) set(out, t, get(v, t ^ mask, "shuffle_xor"));
    return out;
  }

  template <class T, class Op>
  thread_view<T> warp_reduce(const thread_view<T>& v, Op op) {
    enter("warp_reduce");
    auto out = per_thread<T>();
    for (int w = 0; w < size_; w += warp_size) {
      const T total = warp_total(v, w, op, "warp_reduce");
      for (int l = 0; l < warp_size; ++l) set(out, w + l, total);
    }
    return out;
  }

  template <class T, class Op>
  T reduce(const thread_view<T>& v, Op op) {
    enter("reduce");
    T acc = warp_total(v, 0, op, "reduce");
    for (int w = warp_size; w < size_; w += warp_size) acc = op(acc, warp_total(v, w, op, "reduce"));
    return acc;
  }

  template <class T, class Op>
  thread_view<T> warp_inclusive_scan(const thread_view<T>& v, Op op) {
    enter("warp_inclusive_scan");
    auto out = per_thread<T>();
    for (int w = 0; w < size_; w += warp_size) {
      T lane[warp_size];
      warp_scan(v, w, op, lane, "warp_inclusive_scan");
      for (int l = 0; l < warp_size; ++l) set(out, w + l, lane[l]);
    }
    return out;
  }

  template <class T, class Op>
  thread_view<T> inclusive_scan(const thread_view<T>& v, Op op) {
    enter("inclusive_scan");
    auto out = per_thread<T>();
    T carry{};
    for (int w = 0; w < size_; w += warp_size) {
      T lane[warp_size];
      warp_scan(v, w, op, lane, "inclusive_scan");
      for (int l = 0; l < warp_size; ++l) set(out, w + l, w == 0 ? lane[l] : op(carry, lane[l]));
      carry = w == 0 ? lane[warp_size - 1] : op(carry, lane[warp_size - 1]);
    }
    return out;
  }

  template <class T, class Op>
  thread_view<T> exclusive_scan(const thread_view<T>& v, Op op, T identity) {
    auto inc = inclusive_scan(v, op);
    enter("exclusive_scan");
    auto out = per_thread<T>();
    set(out, 0, identity);
    for (int t = 1; t < size_; ++t) set(out, t, get(inc, t - 1, "exclusive_scan"));
    return out;
  }

  thread_view<std::uint32_t> transpose32(const thread_view<std::uint32_t>& v) {
    enter("transpose32");
    auto out = per_thread<std::uint32_t>();
    for (int w = 0; w < size_; w += warp_size) {
      std::uint32_t a[warp_size];
      for (int l = 0; l < warp_size; ++l) a[l] = get(v, w + l, "transpose32");
      // Recursive block swap: at step j, rows k and k + j (bit j of k clear) trade the high j
      // bits of each 2j-bit field of row k with the low j bits of row k + j.
      std::uint32_t m = 0x0000FFFFu;
      for (int j = 16; j != 0; j >>= 1, m ^= m << j)
        for (int k = 0; k < warp_size; k = ((k | j) + 1) & ~j) {
          const std::uint32_t t = ((a[k] >> j) ^ a[k | j]) & m;
          a[k] ^= t << j;
          a[k | j] ^= t;
        }
      for (int l = 0; l < warp_size; ++l) set(out, w + l, a[l]);
    }
    return out;
  }

  template <class T>
  T broadcast(const thread_view<T>& v, int t) {
    enter("broadcast");
    if (t < 0 || t >= size_) report("broadcast from thread " + std::to_string(t) + " outside the team");
    return get(v, t, "broadcast");
  }

  // The tensor-core product (exec/team.hpp): each tile of C summed over k one product at a
  // time. Under host-check it runs as a phase of its own, each tile by the first thread of
  // its warp, tiles in shuffled order, each tile's operands read once through the shadow:
  // it reports unwritten reads of A, B (or of C when accumulating) and a C tile that overlaps
  // what another warp reads.
  template <class VC, class VA, class VB>
  void mma(const VC& C, const VA& A, const VB& B, const mma_shape& s) {
    enter("mma");
    if (const char* e = mma_shape_error(s)) report(std::string("mma: ") + e);
    check_mma_operand(A.data, "A");
    check_mma_operand(B.data, "B");
    check_mma_operand(C.data, "C");
    const int tn = s.n / mma_tile, tiles = s.m / mma_tile * tn, warps = size_ / warp_size;
    const auto a_at = [&](int i, int p) {
      return s.a_trans ? static_cast<std::size_t>(p) * s.lda + i : static_cast<std::size_t>(i) * s.lda + p;
    };
    const auto b_at = [&](int p, int j) {
      return s.b_trans ? static_cast<std::size_t>(j) * s.ldb + p : static_cast<std::size_t>(p) * s.ldb + j;
    };
    const auto tile = [&](int r) {
      const int i0 = r / tn * mma_tile, j0 = r % tn * mma_tile;
      if constexpr (Checked) {  // the tile's operands through the shadow, once each
        for (int i = i0; i < i0 + mma_tile; ++i)
          for (int p = 0; p < s.k; ++p) (void)static_cast<bf16>(A[a_at(i, p)]);
        for (int p = 0; p < s.k; ++p)
          for (int j = j0; j < j0 + mma_tile; ++j) (void)static_cast<bf16>(B[b_at(p, j)]);
      }
      const bf16* a = A.data;
      const bf16* b = B.data;
      for (int i = i0; i < i0 + mma_tile; ++i)
        for (int j = j0; j < j0 + mma_tile; ++j) {
          const std::size_t c = static_cast<std::size_t>(i) * s.ldc + j;
          float acc = s.accumulate ? static_cast<float>(C[c]) : 0.f;
          for (int p = 0; p < s.k; ++p) acc += static_cast<float>(a[a_at(i, p)]) * static_cast<float>(b[b_at(p, j)]);
          C[c] = acc;
        }
    };
    if constexpr (Checked) {
      std::vector<int> order(static_cast<std::size_t>(tiles));
      shuffled(order, ctx_.team * 2654435761ull + static_cast<std::uint64_t>(ctx_.phase));
      ctx_.in_phase = true;
      for (int r : order) {
        ctx_.thread = r % warps * warp_size;
        tile(r);
      }
      if (!ctx_.pending.empty()) fail(errc::kernel_check, ctx_.pending);
      ctx_.in_phase = false;
      ctx_.thread = -1;
      ++ctx_.phase;
    } else {
      for (int r = 0; r < tiles; ++r) tile(r);
    }
  }

 protected:
  // order = 0..n-1 in the order of a Fisher-Yates shuffle that the seed and `salt` (the team
  // and phase) pick: the same order on every run of one seed.
  void shuffled(std::vector<int>& order, std::uint64_t salt) const {
    const int n = static_cast<int>(order.size());
    for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    std::uint64_t z = mix64(ctx_.seed ^ mix64(salt));
    for (int i = n - 1; i > 0; --i) {
      z = mix64(z);
      std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(z % static_cast<std::uint64_t>(i + 1))]);
    }
  }
  [[noreturn]] void report(const std::string& what) {
    if constexpr (Checked) {
      ctx_.report(what);
    } else {
      fail(errc::kernel_check, std::string("host launch: kernel ") + ctx_kernel() + ": " + what);
    }
  }
  const char* ctx_kernel() const { return Checked ? ctx_.kernel : "(team kernel)"; }
  bool in_phase_ = false;

 private:

  void enter(const char* what) {
    if (in_phase_) report(std::string(what) + " inside a phase (collectives are called by the whole team between phases)");
  }
  // An mma operand lies in this team's scratch, 32 bytes into it.
  void check_mma_operand(const void* p, const char* which) {
    const auto* b = static_cast<const std::byte*>(p);
    if (b < scratch_base_ || b >= scratch_base_ + scratch_bytes_)
      report(std::string("mma: ") + which + " is not in the team's scratch");
    if (static_cast<std::size_t>(b - scratch_base_) % mma_align != 0)
      report(std::string("mma: ") + which + " starts " + std::to_string(b - scratch_base_) +
             " bytes into scratch, not a multiple of 32");
  }
  template <class T>
  T get(const thread_view<T>& v, int t, const char* what) const {
    if constexpr (Checked)
      return v.lane(t, what);
    else
      return v.data[t];
  }
  template <class T>
  void set(const thread_view<T>& v, int t, const T& x) const {
    v.data[t] = x;
    if constexpr (Checked) v.written[t] = 1;
  }
  template <class T, class Op>
  T warp_total(const thread_view<T>& v, int w, Op op, const char* what) const {
    T lane[warp_size];
    for (int l = 0; l < warp_size; ++l) lane[l] = get(v, w + l, what);
    for (int o = warp_size / 2; o > 0; o /= 2)
      for (int l = 0; l < o; ++l) lane[l] = op(lane[l], lane[l + o]);
    return lane[0];
  }
  template <class T, class Op>
  void warp_scan(const thread_view<T>& v, int w, Op op, T (&lane)[warp_size], const char* what) const {
    for (int l = 0; l < warp_size; ++l) lane[l] = get(v, w + l, what);
    for (int o = 1; o < warp_size; o *= 2)
      for (int l = warp_size - 1; l >= o; --l) lane[l] = op(lane[l - o], lane[l]);  // high lanes first: old values
  }

  struct aligned_delete {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
  };
  int size_;
  std::size_t league_, rank_ = 0;
  std::size_t scratch_bytes_, scratch_used_ = 0;
  std::unique_ptr<std::byte[], aligned_delete> scratch_;
  std::byte* scratch_base_ = nullptr;
  host_arena own_arena_;
  host_arena* arena_ = &own_arena_;
  // host-check only
  check_context ctx_;
  std::vector<int> order_;
  std::vector<std::unique_ptr<shadow_word[]>> shadows_;
};

}  // namespace hcomm::exec::detail
