// hcomm/exec/host_stream.hpp: streams on the host. A host_stream is a worker thread that runs
// enqueued work in order; host_async is the host executor on such a stream: every member is
// enqueued (kernels copied by value, as on CUDA), so the caller goes on while it runs, and
// events order work across streams. Compute and communication overlap is then written once
// for the host and for CUDA (exec/cuda.hpp has the same record/wait members).
//
//   hcomm::exec::host_stream compute_q, comm_q;
//   hcomm::exec::host_async compute{&compute_q}, comm{&comm_q};
//   compute.for_each(n, backward_kernel{...});
//   comm.wait(compute.record());              // the reduction starts when backward is done
//   comm.for_each(m, pack_kernel{...});
//   comm.synchronize();                       // the host waits (and sees any error)
//
// Like a device stream: memory given to enqueued work must stay valid until the stream
// reaches it (from_host's source included); deallocate is stream-ordered; to_host and
// synchronize wait. An exception thrown by enqueued work is kept, the stream skips its
// later work, and the next to_host or synchronize rethrows it. is_device is true: codecs
// take their stream-ordered device paths (no host reads between kernels).
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <thread>

#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_event.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::exec {

class host_stream {
 public:
  host_stream() : worker_([this] { run(); }) {}
  ~host_stream() {
    {
      const std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  host_stream(const host_stream&) = delete;
  host_stream& operator=(const host_stream&) = delete;

  void enqueue(std::function<void()> task) {
    {
      const std::lock_guard<std::mutex> lock(m_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
  }

  // Waits until everything enqueued so far has run; rethrows the first error since the last call.
  void synchronize() {
    std::unique_lock<std::mutex> lock(m_);
    idle_cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stop_ and drained
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      busy_ = true;
      const bool skip = error_ != nullptr;
      lock.unlock();
      std::exception_ptr err;
      if (!skip) {
        try {
          task();
        } catch (...) {
          err = std::current_exception();
        }
      }
      lock.lock();
      if (err && !error_) error_ = err;
      busy_ = false;
      if (tasks_.empty()) idle_cv_.notify_all();
    }
  }

  std::mutex m_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // last: starts after the members it uses
};

struct host_async {
  static constexpr bool is_device = true;
  static constexpr const char* name = "host_async";
  using event_type = host_event;
  host_stream* stream = nullptr;  // not owned; must outlive the work enqueued on it
  host work{};                    // what runs the enqueued kernels (its thread count)

  template <class F>
  void for_each(std::size_t n, const F& f) const {
    detail::reject_team_kernel_in_for_each<F>();
    q().enqueue([w = work, n, f] { w.for_each(n, f); });
  }
  template <class K>
  void launch(std::size_t league, int team_size, const K& k) const {
    detail::check_team_launch("host_async", k, team_size, max_team_scratch_bytes);  // at the call, as CUDA does
    q().enqueue([w = work, league, team_size, k] { w.launch(league, team_size, k); });
  }
  void exclusive_scan(const std::uint64_t* in, std::uint64_t* out, std::size_t n) const {
    q().enqueue([w = work, in, out, n] { w.exclusive_scan(in, out, n); });
  }

  void* allocate(std::size_t bytes) const { return work.allocate(bytes); }
  void deallocate(void* p) const noexcept {
    if (p == nullptr) return;
    if (stream == nullptr) {
      std::free(p);
      return;
    }
    try {
      stream->enqueue([p] { std::free(p); });
    } catch (...) {  // could not enqueue (no memory): wait, then free now
      try {
        stream->synchronize();
      } catch (...) {
      }
      std::free(p);
    }
  }
  void copy(void* dst, const void* src, std::size_t bytes) const {
    q().enqueue([dst, src, bytes] {
      if (bytes) std::memmove(dst, src, bytes);
    });
  }
  void to_host(void* host_dst, const void* src, std::size_t bytes) const {
    copy(host_dst, src, bytes);
    synchronize();
  }
  void from_host(void* dst, const void* host_src, std::size_t bytes) const { copy(dst, host_src, bytes); }
  void fill_zero(void* dst, std::size_t bytes) const {
    q().enqueue([dst, bytes] {
      if (bytes) std::memset(dst, 0, bytes);
    });
  }
  void synchronize() const { q().synchronize(); }

  // A point after the work enqueued so far; wait(e) holds this stream's later work until then.
  host_event record() const {
    host_event e = host_event::pending();
    q().enqueue([e] { e.set(); });
    return e;
  }
  void wait(const host_event& e) const {
    if (e.ready()) return;
    q().enqueue([e] { e.synchronize(); });
  }

 private:
  host_stream& q() const {
    if (stream == nullptr) fail(errc::invalid_argument, "hcomm: host_async executor without a stream");
    return *stream;
  }
};

}  // namespace hcomm::exec
