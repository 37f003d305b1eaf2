#include "server/generation_queue.h"

#include "absl/strings/str_cat.h"

namespace jllm::server {

GenerationQueue::Slot::~Slot() {
  if (queue_ != nullptr) queue_->Release();
}

absl::StatusOr<GenerationQueue::Slot> GenerationQueue::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return absl::UnavailableError("the server is shutting down");
  if ((busy_ || waiting_ > 0) && waiting_ >= max_waiting_) {
    return absl::UnavailableError(absl::StrCat(
        "the server is busy: one request is generating and ", waiting_,
        " are waiting (the most --max-waiting allows); retry later"));
  }
  const uint64_t ticket = next_ticket_++;
  ++waiting_;
  cv_.wait(lock, [&] { return closed_ || (!busy_ && serving_ == ticket); });
  --waiting_;
  if (closed_) {
    cv_.notify_all();
    return absl::UnavailableError("the server is shutting down");
  }
  busy_ = true;
  ++serving_;
  return Slot(this);
}

void GenerationQueue::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
  }
  cv_.notify_all();
}

void GenerationQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

int GenerationQueue::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

bool GenerationQueue::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

}  // namespace jllm::server
