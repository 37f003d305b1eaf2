// A minimal fork-join thread pool: ParallelFor splits [0, n) into one contiguous chunk per
// thread and returns when every chunk is done. The calling thread runs the first chunk, so a
// pool of one thread is a plain loop. Not re-entrant: one ParallelFor at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace jllm::cpu_ref {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads <= 0: one per hardware thread
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n). Work below `min_chunk` items per
  // thread runs on fewer threads (waking a thread costs more than a tiny loop).
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                   int64_t min_chunk = 1);

 private:
  void WorkerLoop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;  // bumped per ParallelFor; workers wait for a change
  int pending_ = 0;          // workers still running the current job
  bool stop_ = false;
  // The current job, valid while pending_ > 0.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_threads_ = 0;
};

}  // namespace jllm::cpu_ref
