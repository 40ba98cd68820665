// Loader: inline vs threaded batches are identical given the seed, in order,
// from a fixed pool, and every worker is joined on stop or destruction.
#include "workloads/loader.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

namespace autotune {
namespace {

LoaderConfig small(int workers, std::uint64_t seed = 42) {
  LoaderConfig c;
  c.batch_size = 8;
  c.num_workers = workers;
  c.prefetch_factor = 2;
  c.dataset_samples = 64;
  c.sample_bytes = 256;
  c.input_dim = 128;
  c.classes = 5;
  c.preprocess_passes = 1;
  c.seed = seed;
  return c;
}

// The first n batches, copied out.
std::vector<std::vector<float>> take(Loader& l, int n, std::vector<std::int64_t>* indices = nullptr) {
  std::vector<std::vector<float>> out;
  for (int i = 0; i < n; ++i) {
    BatchLease b = l.next();
    EXPECT_TRUE(b);
    if (!b) break;
    if (indices) indices->push_back(b->index);
    const auto dim = static_cast<std::size_t>(l.config().input_dim);
    std::vector<float> v(b->inputs, b->inputs + b->size * l.config().input_dim);
    for (std::int64_t j = 0; j < b->size; ++j) {
      EXPECT_GE(b->labels[j], 0);
      EXPECT_LT(b->labels[j], l.config().classes);
      v.push_back(static_cast<float>(b->labels[j]));
    }
    EXPECT_EQ(v.size(), dim * 8 + 8);
    out.push_back(std::move(v));
  }
  return out;
}

TEST(Loader, InlineAndThreadedGiveTheSameBatchesInOrder) {
  Loader inline_loader(small(0));
  Loader threaded(small(3));
  std::vector<std::int64_t> idx;
  const auto a = take(inline_loader, 12);
  const auto b = take(threaded, 12, &idx);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(a, b);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(idx[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(threaded.stats().batches, 12);
}

TEST(Loader, SeedChangesContentsAndRepeatsThem) {
  Loader a(small(2, 1)), b(small(2, 1)), c(small(2, 2));
  const auto x = take(a, 4), y = take(b, 4), z = take(c, 4);
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

TEST(Loader, PreprocessNormalisesIntoAKnownRange) {
  LoaderConfig c = small(0);
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(c.sample_bytes), 0xA7), scratch(2 * raw.size());
  std::vector<float> out(static_cast<std::size_t>(c.input_dim));
  Loader::preprocess(c, raw.data(), 5, scratch.data(), out.data());
  for (float v : out) {
    EXPECT_GE(v, -2.0f);
    EXPECT_LE(v, 2.0f);
  }
}

TEST(Loader, ReusesAFixedPool) {
  Loader l(small(2));
  EXPECT_EQ(l.queue_capacity(), 4u);
  EXPECT_EQ(l.pool_size(), 4u + 2u + 1u);
  std::set<const float*> buffers;
  for (int i = 0; i < 50; ++i) buffers.insert(l.next()->inputs);
  EXPECT_LE(buffers.size(), l.pool_size());
}

TEST(Loader, RejectsUnusableConfigurations) {
  LoaderConfig c = small(1);
  c.input_dim = 2 * c.sample_bytes + 1;
  EXPECT_FALSE(validate(c).empty());
  EXPECT_THROW(Loader{c}, std::invalid_argument);
  c = small(1);
  c.prefetch_factor = 0;
  EXPECT_FALSE(validate(c).empty());
}

TEST(Loader, StopJoinsBlockedWorkersAndEndsTheSequence) {
  LoaderConfig c = small(4);
  Loader l(c);
  // Let the workers fill their queues and block on a full queue.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(l.running_workers(), 4);
  BatchLease held = l.next();
  l.stop();
  EXPECT_EQ(l.running_workers(), 0);
  EXPECT_FALSE(l.next());
  held.reset();  // returning a batch after stop() is harmless
}

std::size_t threads_of_this_process() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(Loader, NoThreadOutlivesTheLoader) {
  const std::size_t before = threads_of_this_process();
  {
    Loader l(small(4));
    EXPECT_EQ(threads_of_this_process(), before + 4);
    take(l, 3);
  }
  // A joined thread can still be listed in /proc for a moment while the
  // kernel finishes its exit (seen under load): wait for that, up to 10 s.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (threads_of_this_process() != before && std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(threads_of_this_process(), before);
}

TEST(Loader, DestructionMidBatchJoinsWorkers) {
  // Heavy preprocessing: the workers are mid-batch when the loader goes.
  LoaderConfig c = small(2);
  c.sample_bytes = 1 << 16;
  c.preprocess_passes = 50;
  const auto t0 = std::chrono::steady_clock::now();
  {
    Loader l(c);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Stop is checked per sample, so destruction takes about one sample's time.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}

TEST(Loader, CustomAllocatorProvidesEveryBuffer) {
  int allocated = 0, freed = 0;
  HostAllocator a;
  a.allocate = [&](std::size_t bytes) {
    ++allocated;
    return ::operator new(bytes, std::align_val_t{64});
  };
  a.deallocate = [&](void* p, std::size_t) {
    ++freed;
    ::operator delete(p, std::align_val_t{64});
  };
  {
    LoaderConfig c = small(1);
    c.consumer_slots = 2;
    Loader l(c, a);
    EXPECT_EQ(static_cast<std::size_t>(allocated), l.pool_size());
    BatchLease x = l.next(), y = l.next();  // two held at once
    EXPECT_EQ(x->index + 1, y->index);
  }
  EXPECT_EQ(allocated, freed);
}

}  // namespace
}  // namespace autotune
