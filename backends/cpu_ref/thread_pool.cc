#include "backends/cpu_ref/thread_pool.h"

#include <algorithm>

namespace jllm::cpu_ref {
namespace {

// Chunk `index` of `parts` equal chunks of [0, n).
std::pair<int64_t, int64_t> Chunk(int64_t n, int parts, int index) {
  return {n * index / parts, n * (index + 1) / parts};
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                             int64_t min_chunk) {
  if (n <= 0) return;
  const int64_t by_size = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int threads = static_cast<int>(std::min<int64_t>(size(), by_size));
  if (threads == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    job_threads_ = threads;
    pending_ = threads - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  const auto [begin, end] = Chunk(n, threads, 0);
  fn(begin, end);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int threads;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      threads = job_threads_;
    }
    // Workers beyond this job's thread count sit it out (pending_ did not count them).
    if (index >= threads) continue;
    const auto [begin, end] = Chunk(n, threads, index);
    (*job)(begin, end);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace jllm::cpu_ref
