#pragma once
// A blocking FIFO of fixed capacity, for the loader's prefetch queues.
//
// push() blocks while the queue is full, pop() while it is empty. close()
// wakes every waiter: from then on push() refuses (returns false) and pop()
// returns nothing, even if items remain, so that an early stop does not wait
// for a backlog to drain. Capacity 0 is a bug (nothing could ever pass).
#include <condition_variable>
#include <cstddef>
#include <vector>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace autotune {

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : m_capacity(capacity), m_ring(capacity) {
    if (capacity == 0) throw std::invalid_argument("BoundedQueue: capacity must be at least 1");
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks while full; false when the queue is (or becomes) closed.
  bool push(T item) {
    std::unique_lock lock(m_mutex);
    ++m_push_waiting;
    m_not_full.wait(lock, [&] { return m_closed || m_count < m_capacity; });
    --m_push_waiting;
    if (m_closed) return false;
    m_ring[(m_head + m_count) % m_capacity] = std::move(item);
    ++m_count;
    lock.unlock();
    m_not_empty.notify_one();
    return true;
  }

  // Never blocks; false when full or closed.
  bool try_push(T item) {
    std::unique_lock lock(m_mutex);
    if (m_closed || m_count >= m_capacity) return false;
    m_ring[(m_head + m_count) % m_capacity] = std::move(item);
    ++m_count;
    lock.unlock();
    m_not_empty.notify_one();
    return true;
  }

  // Blocks while empty; nullopt when the queue is (or becomes) closed.
  // `found_empty`, when given, says whether the queue was empty (and open)
  // when this call looked: whether the caller had to wait for an item;
  // `found_full` whether it was full with a producer kept waiting in push():
  // one holding an item made that it had nowhere to put.
  std::optional<T> pop(bool* found_empty = nullptr, bool* found_full = nullptr) {
    std::unique_lock lock(m_mutex);
    if (found_empty) *found_empty = !m_closed && m_count == 0;
    if (found_full) *found_full = !m_closed && m_count == m_capacity && m_push_waiting > 0;
    m_not_empty.wait(lock, [&] { return m_closed || m_count > 0; });
    if (m_closed) return std::nullopt;
    T item = std::move(m_ring[m_head]);
    m_head = (m_head + 1) % m_capacity;
    --m_count;
    lock.unlock();
    m_not_full.notify_one();
    return item;
  }

  void close() {
    {
      std::lock_guard lock(m_mutex);
      m_closed = true;
    }
    m_not_full.notify_all();
    m_not_empty.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(m_mutex);
    return m_closed;
  }
  std::size_t size() const {
    std::lock_guard lock(m_mutex);
    return m_count;
  }
  std::size_t capacity() const { return m_capacity; }
  // Producers inside push() now (waiting for room, or about to store).
  std::size_t producers_waiting() const {
    std::lock_guard lock(m_mutex);
    return m_push_waiting;
  }

 private:
  const std::size_t m_capacity;
  mutable std::mutex m_mutex;
  std::condition_variable m_not_full;
  std::condition_variable m_not_empty;
  std::vector<T> m_ring;
  std::size_t m_head = 0;   // index of the oldest item
  std::size_t m_count = 0;  // items held
  std::size_t m_push_waiting = 0;  // producers inside push()
  bool m_closed = false;
};

}  // namespace autotune
