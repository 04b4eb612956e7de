// hcomm/exec/host_event.hpp: an event of the host backends (exec/host_stream.hpp): a point
// in a stream's work that other streams and the host can wait for.
//
//   hcomm::exec::host_event e = compute.record();   // after the work enqueued so far
//   comm.wait(e);                                   // comm's later work runs after that point
//   e.synchronize();                                // or the host waits for it
//
// Copies share the point. An event that was never recorded (or one from an in-order
// executor, which has run everything already) is complete.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>

namespace hcomm::exec {

class host_event {
 public:
  host_event() = default;
  static host_event completed() { return host_event{}; }
  static host_event pending() {
    host_event e;
    e.s_ = std::make_shared<state>();
    return e;
  }

  // Completes the event (the stream does this when its work reaches it).
  void set() const {
    if (!s_) return;
    {
      const std::lock_guard<std::mutex> lock(s_->m);
      s_->done = true;
    }
    s_->cv.notify_all();
  }
  bool ready() const {
    if (!s_) return true;
    const std::lock_guard<std::mutex> lock(s_->m);
    return s_->done;
  }
  void synchronize() const {
    if (!s_) return;
    std::unique_lock<std::mutex> lock(s_->m);
    s_->cv.wait(lock, [&] { return s_->done; });
  }

 private:
  struct state {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
  };
  std::shared_ptr<state> s_;
};

}  // namespace hcomm::exec
