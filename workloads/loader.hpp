#pragma once
// The input pipeline shared by the cpu and cuda workloads: synthetic raw
// samples held in host memory, preprocessed for real on the CPU into batches.
//
// Per sample (its cost scales with sample_bytes and preprocess_passes):
//   decode     each raw byte expands into two (nibble split + running delta,
//              serially dependent like an entropy decoder),
//   filter     `preprocess_passes` 3-tap smoothing passes over the decoded bytes,
//   crop/flip  a random window of input_dim bytes, reversed half of the time,
//   normalise  (x / 255 - 0.5) / 0.25 into float.
//
// Threads, as PyTorch's DataLoader: with num_workers W > 0, worker w prepares
// batches w, w + W, w + 2W, ... into its own queue of prefetch_factor batches
// (W * prefetch_factor in all) and next() takes them round-robin, so batches
// arrive in order. With W = 0, next() prepares the batch inline on the calling
// thread. Batch k's contents depend only on (seed, k): same seed, same batches,
// whatever the thread timing.
//
// Buffers come from a pool allocated up front (W * prefetch_factor + W +
// consumer_slots batches; consumer_slots with none for W = 0) through a
// HostAllocator, so the cuda workload can make them page-locked; nothing is
// allocated per batch. A BatchLease returns its buffer to the pool when it is
// destroyed; the caller may hold at most consumer_slots leases at once.
//
// stop() (and the destructor) closes the queues and joins every worker, also
// when workers are blocked or mid-batch; after it next() returns no batch.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "workloads/bounded_queue.hpp"

namespace autotune {

struct LoaderConfig {
  std::int64_t batch_size = 64;
  int num_workers = 0;
  int prefetch_factor = 2;
  std::int64_t dataset_samples = 1024;  // raw samples held in memory
  std::int64_t sample_bytes = 4096;     // raw (encoded) bytes per sample
  std::int64_t input_dim = 256;         // floats per prepared sample; <= 2 * sample_bytes
  int classes = 10;
  int preprocess_passes = 4;            // smoothing passes: the per-sample cost knob
  int consumer_slots = 1;               // batches the caller may hold at once
  std::uint64_t seed = 0;
};

// Empty when the configuration is usable, else why not.
std::string validate(const LoaderConfig& c);

// Host memory the loader will hold: raw dataset + batch pool + worker scratch.
double loader_host_bytes(const LoaderConfig& c);

// Where batch buffers come from. Default: aligned operator new.
struct HostAllocator {
  std::function<void*(std::size_t bytes)> allocate;
  std::function<void(void* p, std::size_t bytes)> deallocate;  // must not throw
  static HostAllocator heap();
};

struct Batch {
  float* inputs = nullptr;        // batch_size x input_dim, row-major
  std::int32_t* labels = nullptr;  // batch_size, each in [0, classes)
  std::int64_t size = 0;           // samples
  std::int64_t index = -1;         // sequence number, from 0
};

class Loader;

// A batch borrowed from the pool; move-only, returned on destruction.
class BatchLease {
 public:
  BatchLease() = default;
  BatchLease(BatchLease&& o) noexcept;
  BatchLease& operator=(BatchLease&& o) noexcept;
  BatchLease(const BatchLease&) = delete;
  BatchLease& operator=(const BatchLease&) = delete;
  ~BatchLease() { reset(); }

  explicit operator bool() const { return m_loader != nullptr; }
  const Batch& operator*() const { return *m_batch; }
  const Batch* operator->() const { return m_batch; }
  void reset();  // gives the buffer back now

 private:
  friend class Loader;
  BatchLease(Loader* l, int slot, const Batch* b) : m_loader(l), m_slot(slot), m_batch(b) {}
  Loader* m_loader = nullptr;
  int m_slot = -1;
  const Batch* m_batch = nullptr;
};

struct LoaderStats {
  double wait_seconds = 0;     // time next() spent waiting for (or, inline, preparing) batches
  std::int64_t batches = 0;    // batches handed out
  std::int64_t starved = 0;    // next() calls that found no batch ready (inline: every call)
  std::int64_t ahead = 0;      // next() calls that found their worker's queue full (inline: none)
};

struct StepResult;
// What the loader's calls made during one step found: any queue empty
// (starved), or every queue full (ahead).
void mark_queue_state(const LoaderStats& before, const LoaderStats& after, StepResult& s);

class Loader {
 public:
  // Throws std::invalid_argument when validate(c) is not empty; a failing
  // allocator's exception propagates (std::bad_alloc, or the cuda error).
  explicit Loader(LoaderConfig c, HostAllocator alloc = HostAllocator::heap());
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch in sequence; an empty lease after stop().
  BatchLease next();
  void stop();

  const LoaderConfig& config() const { return m_config; }
  LoaderStats stats() const { return m_stats; }
  std::size_t queue_capacity() const;  // num_workers * prefetch_factor (0 inline)
  std::size_t pool_size() const { return m_pool.size(); }
  int running_workers() const { return m_running.load(); }
  // A worker failed (e.g. could not allocate) and ended the sequence.
  bool failed() const { return m_failed.load(); }

  // The preprocessing of one sample, exposed for tests: writes input_dim floats.
  // `scratch` must hold 2 * sample_bytes bytes.
  static void preprocess(const LoaderConfig& c, const std::uint8_t* raw, std::uint64_t aug_seed,
                         std::uint8_t* scratch, float* out);

 private:
  friend class BatchLease;
  struct Slot {
    Batch batch;
    void* memory = nullptr;
    std::size_t bytes = 0;
  };
  void release(int slot);
  void fill(int slot, std::int64_t index, std::uint8_t* scratch);
  void worker_main(int w);

  LoaderConfig m_config;
  HostAllocator m_alloc;
  std::vector<std::uint8_t> m_dataset;        // dataset_samples x sample_bytes
  std::vector<std::int32_t> m_dataset_labels;  // per raw sample
  std::vector<Slot> m_pool;
  BoundedQueue<int> m_free;                                   // free slot ids
  std::vector<std::unique_ptr<BoundedQueue<int>>> m_ready;    // per worker, in order
  std::vector<std::uint8_t> m_inline_scratch;
  std::vector<std::thread> m_workers;
  std::atomic<bool> m_stopping{false};
  std::atomic<int> m_running{0};
  std::atomic<bool> m_failed{false};
  std::int64_t m_next_index = 0;
  LoaderStats m_stats;
};

}  // namespace autotune
