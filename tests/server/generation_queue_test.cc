// One generation at a time, waiters served in arrival order, a full queue refused at once,
// and Close() releasing every waiter. Threads are sequenced through the queue's own counters,
// never by sleeping a fixed time.
#include "server/generation_queue.h"

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jllm::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Polls until `queue.waiting() == n`; fails after 10 s (a deadlock, not a slow machine).
bool WaitForWaiting(const GenerationQueue& queue, int n) {
  for (int i = 0; i < 10000; ++i) {
    if (queue.waiting() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(GenerationQueueTest, FifoAndBounded) {
  GenerationQueue queue(3);
  auto first = queue.Acquire();
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(queue.busy());
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      auto slot = queue.Acquire();
      ASSERT_TRUE(slot.ok()) << slot.status();
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
    ASSERT_TRUE(WaitForWaiting(queue, i + 1));
  }
  auto refused = queue.Acquire();  // three wait already
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsUnavailable(refused.status()));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("busy"));

  { GenerationQueue::Slot release = *std::move(first); }
  for (auto& t : threads) t.join();
  EXPECT_THAT(order, ElementsAre(0, 1, 2));
  EXPECT_FALSE(queue.busy());
  EXPECT_EQ(queue.waiting(), 0);
  EXPECT_TRUE(queue.Acquire().ok());  // free again
}

TEST(GenerationQueueTest, CloseReleasesWaitersAndRefusesNewcomers) {
  GenerationQueue queue(4);
  auto held = queue.Acquire();
  ASSERT_TRUE(held.ok());
  absl::Status waiter_status;
  std::thread waiter([&] { waiter_status = queue.Acquire().status(); });
  ASSERT_TRUE(WaitForWaiting(queue, 1));
  queue.Close();
  waiter.join();
  EXPECT_TRUE(absl::IsUnavailable(waiter_status));
  EXPECT_THAT(std::string(waiter_status.message()), HasSubstr("shutting down"));
  EXPECT_TRUE(absl::IsUnavailable(queue.Acquire().status()));
}

TEST(GenerationQueueTest, NoWaitingAllowed) {
  GenerationQueue queue(0);
  auto held = queue.Acquire();
  ASSERT_TRUE(held.ok());
  EXPECT_TRUE(absl::IsUnavailable(queue.Acquire().status()));
}

}  // namespace
}  // namespace jllm::server
