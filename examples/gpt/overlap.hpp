// examples/gpt/overlap.hpp: the DP gradient buckets and the communication thread that
// reduces them while backward goes on (--overlap on), as PyTorch DDP does.
//
//   auto buckets = gpt::plan_buckets(model.tensors(), 25.0);   // [begin, end) offsets, backward order
//   gpt::comm_worker w;                                        // one thread, started once
//   w.submit([&] { dp.reduce_bucket(span_of(buckets[0])); });  // from the backward hook
//   w.flush();                                                 // before the gradient norm
//
// Buckets are contiguous ranges of the stage's gradient allocation, cut at tensor
// boundaries from its end (the head, the last block: what backward finishes first) toward
// offset 0 (the embedding), each at least --bucket-mb MiB unless it is the last one. The same
// buckets are used with --overlap on and off: each bucket is one DP all-reduce of the same
// bytes, so the sums and the losses are bitwise the same; only when it starts differs.
//
// The worker (compressed schemes; uncompressed DP buckets use MPI_Iallreduce on the main
// thread instead, trainer.hpp) runs tasks in submission order on its own thread. MPI must then be initialised
// with MPI_THREAD_MULTIPLE (train_gpt.cpp): the main thread runs the TP collectives and the
// PP send/recv of the pipeline while the worker runs the DP all-reduce, each on its own
// communicator (hcomm: one context per communicator). The worker sets its OpenMP count to 1,
// which caps hcomm's automatic default_threads() for the loops it starts (codecs): the
// compute threads keep the cores, the worker mostly waits in MPI.
#pragma once
#include <omp.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "params.hpp"

namespace gpt {

struct bucket_range {
  std::int64_t begin = 0, end = 0;  // offsets into the gradient allocation
};

// Buckets in backward order (descending offsets). mib <= 0: one bucket, the whole allocation.
inline std::vector<bucket_range> plan_buckets(const std::vector<local_tensor>& tensors, double mib) {
  std::vector<bucket_range> out;
  if (tensors.empty()) return out;
  const std::int64_t total = tensors.back().offset + tensors.back().numel;
  if (mib <= 0) return {{0, total}};
  const double cap = mib * 1024.0 * 1024.0 / sizeof(float);
  std::int64_t end = total;
  for (std::size_t i = tensors.size(); i-- > 0;) {
    const std::int64_t begin = tensors[i].offset;
    if (begin == 0 || static_cast<double>(end - begin) >= cap) {
      out.push_back({begin, end});
      end = begin;
    }
  }
  return out;
}

// One thread that runs submitted tasks in order. An exception in a task is kept and thrown
// again by flush() on the submitting thread; the tasks after it are dropped.
class comm_worker {
 public:
  comm_worker() : st_(std::make_shared<state>()) {
    thread_ = std::thread([s = st_] {
      omp_set_num_threads(1);
      loop(*s);
    });
  }
  ~comm_worker() {
    bool idle = false;
    {
      std::lock_guard<std::mutex> l(st_->mu);
      st_->quit = true;  // pending tasks are dropped
      idle = !st_->busy;
    }
    st_->cv.notify_all();
    // A task still running here means an error is unwinding the trainer while a collective
    // waits for peers that may never come; main ends the job with MPI_Abort: do not wait (the
    // thread keeps its shared state alive).
    if (idle) thread_.join();
    else thread_.detach();
  }
  comm_worker(const comm_worker&) = delete;
  comm_worker& operator=(const comm_worker&) = delete;

  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> l(st_->mu);
      st_->queue.push_back(std::move(task));
    }
    st_->cv.notify_all();
  }
  // Waits until every submitted task has run; rethrows the first failure.
  void flush() {
    std::unique_lock<std::mutex> l(st_->mu);
    st_->done_cv.wait(l, [&] { return st_->queue.empty() && !st_->busy; });
    if (st_->error) std::rethrow_exception(std::exchange(st_->error, nullptr));
  }

 private:
  struct state {
    std::mutex mu;
    std::condition_variable cv, done_cv;
    std::deque<std::function<void()>> queue;
    bool busy = false, quit = false;
    std::exception_ptr error;
  };
  static void loop(state& s) {
    std::unique_lock<std::mutex> l(s.mu);
    while (true) {
      s.cv.wait(l, [&] { return s.quit || !s.queue.empty(); });
      if (s.quit) return;
      std::function<void()> task = std::move(s.queue.front());
      s.queue.pop_front();
      s.busy = true;
      const bool skip = s.error != nullptr;
      l.unlock();
      std::exception_ptr e;
      if (!skip) {
        try {
          task();
        } catch (...) {
          e = std::current_exception();
        }
      }
      task = nullptr;
      l.lock();
      s.busy = false;
      if (e && !s.error) s.error = e;
      if (s.queue.empty()) s.done_cv.notify_all();
    }
  }

  std::shared_ptr<state> st_;
  std::thread thread_;
};

}  // namespace gpt
