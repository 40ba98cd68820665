// BoundedQueue: capacity, blocking both ways, close() wakes every waiter.
#include "workloads/bounded_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace autotune {
namespace {

using namespace std::chrono_literals;

TEST(BoundedQueue, HoldsAtMostCapacityInFifoOrder) {
  BoundedQueue<int> q(3);
  EXPECT_TRUE(q.try_push(1));
  EXPECT_TRUE(q.try_push(2));
  EXPECT_TRUE(q.push(3));
  EXPECT_FALSE(q.try_push(4));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(*q.pop(), 1);
  EXPECT_TRUE(q.try_push(4));  // wraps around the ring
  EXPECT_EQ(*q.pop(), 2);
  EXPECT_EQ(*q.pop(), 3);
  EXPECT_EQ(*q.pop(), 4);
  EXPECT_EQ(q.size(), 0u);
}

TEST(BoundedQueue, PopSaysWhetherItFoundTheQueueEmptyOrFullWithAProducerWaiting) {
  BoundedQueue<int> q(2);
  ASSERT_TRUE(q.try_push(1));
  ASSERT_TRUE(q.try_push(2));
  bool empty = true, full = true;
  EXPECT_EQ(*q.pop(&empty, &full), 1);
  EXPECT_FALSE(empty);
  EXPECT_FALSE(full) << "two of two held, but no producer kept waiting";
  ASSERT_TRUE(q.try_push(3));
  std::thread waiting([&] { q.push(4); });  // full: it waits with its item
  while (q.producers_waiting() == 0) std::this_thread::yield();
  EXPECT_EQ(*q.pop(&empty, &full), 2);
  waiting.join();
  EXPECT_FALSE(empty);
  EXPECT_TRUE(full) << "full, and a producer held an item it had nowhere to put";
  EXPECT_EQ(q.producers_waiting(), 0U);
  EXPECT_EQ(*q.pop(&empty, &full), 3);
  EXPECT_FALSE(full);
  EXPECT_EQ(*q.pop(&empty, &full), 4);
  std::thread producer([&] { q.push(5); });
  EXPECT_EQ(*q.pop(&empty, &full), 5);
  producer.join();
  EXPECT_FALSE(full);  // empty or not depends on who came first; never full
}

TEST(BoundedQueue, ZeroCapacityIsRejected) { EXPECT_THROW(BoundedQueue<int>(0), std::invalid_argument); }

TEST(BoundedQueue, PushBlocksWhileFullUntilAPop) {
  BoundedQueue<int> q(1);
  ASSERT_TRUE(q.push(1));
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    q.push(2);
    pushed = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(pushed.load());
  EXPECT_EQ(*q.pop(), 1);
  producer.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_EQ(*q.pop(), 2);
}

TEST(BoundedQueue, PopBlocksWhileEmptyUntilAPush) {
  BoundedQueue<int> q(2);
  std::atomic<int> got{0};
  std::thread consumer([&] { got = *q.pop(); });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(got.load(), 0);
  q.push(7);
  consumer.join();
  EXPECT_EQ(got.load(), 7);
}

TEST(BoundedQueue, CloseWakesBlockedProducersAndConsumers) {
  BoundedQueue<int> full(1), empty(1);
  full.push(1);
  std::atomic<int> woke{0};
  std::thread p([&] {
    if (!full.push(2)) ++woke;
  });
  std::thread c([&] {
    if (!empty.pop()) ++woke;
  });
  std::this_thread::sleep_for(50ms);
  full.close();
  empty.close();
  p.join();
  c.join();
  EXPECT_EQ(woke.load(), 2);
  // Closed: refuses pushes, pops nothing even with an item left.
  EXPECT_FALSE(full.try_push(3));
  EXPECT_FALSE(full.pop().has_value());
}

}  // namespace
}  // namespace autotune
