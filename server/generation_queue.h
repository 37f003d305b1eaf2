// One generation at a time: a request takes the generation slot, or waits for it in arrival
// order. At most `max_waiting` requests wait; one more is refused (the server answers 503
// with Retry-After) rather than left hanging.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "absl/status/statusor.h"

namespace jllm::server {

class GenerationQueue {
 public:
  // Holds the slot until destroyed.
  class Slot {
   public:
    Slot(Slot&& other) noexcept : queue_(other.queue_) { other.queue_ = nullptr; }
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;
    ~Slot();

   private:
    friend class GenerationQueue;
    explicit Slot(GenerationQueue* queue) : queue_(queue) {}
    GenerationQueue* queue_;
  };

  explicit GenerationQueue(int max_waiting) : max_waiting_(max_waiting) {}

  // Blocks until the slot is this caller's. Unavailable at once when max_waiting requests
  // already wait, and for every waiter once Close() is called.
  absl::StatusOr<Slot> Acquire();
  // Refuses everything from now on (shutdown); the slot's holder keeps it until it lets go.
  void Close();

  int waiting() const;
  bool busy() const;
  int max_waiting() const { return max_waiting_; }

 private:
  void Release();

  const int max_waiting_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool busy_ = false;
  bool closed_ = false;
  int waiting_ = 0;
  uint64_t next_ticket_ = 0;  // the ticket the next arrival gets
  uint64_t serving_ = 0;      // the ticket whose turn it is
};

}  // namespace jllm::server
