#include "workloads/loader.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>

#include "workloads/measure.hpp"
#include "workloads/normal_fill.hpp"

namespace autotune {

namespace {

std::size_t slots_for(const LoaderConfig& c) {
  const auto w = static_cast<std::size_t>(std::max(0, c.num_workers));
  const auto p = static_cast<std::size_t>(std::max(1, c.prefetch_factor));
  return w * p + w + static_cast<std::size_t>(std::max(1, c.consumer_slots));
}

std::size_t batch_bytes(const LoaderConfig& c) {
  const auto b = static_cast<std::size_t>(c.batch_size);
  // Labels after the inputs; both 64-byte aligned.
  const std::size_t in = (b * static_cast<std::size_t>(c.input_dim) * sizeof(float) + 63) / 64 * 64;
  const std::size_t lab = (b * sizeof(std::int32_t) + 63) / 64 * 64;
  return in + lab;
}

}  // namespace

std::string validate(const LoaderConfig& c) {
  if (c.batch_size < 1) return "batch_size must be at least 1";
  if (c.num_workers < 0) return "num_workers must be at least 0";
  if (c.prefetch_factor < 1) return "prefetch_factor must be at least 1";
  if (c.dataset_samples < 1) return "dataset_samples must be at least 1";
  if (c.sample_bytes < 1) return "sample_bytes must be at least 1";
  if (c.input_dim < 1) return "input_dim must be at least 1";
  if (c.input_dim > 2 * c.sample_bytes)
    return "input_dim (" + std::to_string(c.input_dim) + ") must not exceed the decoded sample size 2 * sample_bytes (" +
           std::to_string(2 * c.sample_bytes) + ")";
  if (c.classes < 1) return "classes must be at least 1";
  if (c.preprocess_passes < 0) return "preprocess_passes must be at least 0";
  if (c.consumer_slots < 1) return "consumer_slots must be at least 1";
  return {};
}

double loader_host_bytes(const LoaderConfig& c) {
  const double dataset = static_cast<double>(c.dataset_samples) * (static_cast<double>(c.sample_bytes) + 4.0);
  const double pool = static_cast<double>(slots_for(c)) * static_cast<double>(batch_bytes(c));
  const double scratch = static_cast<double>(std::max(1, c.num_workers)) * 2.0 * static_cast<double>(c.sample_bytes);
  return dataset + pool + scratch;
}

HostAllocator HostAllocator::heap() {
  HostAllocator a;
  a.allocate = [](std::size_t bytes) { return ::operator new(bytes, std::align_val_t{64}); };
  a.deallocate = [](void* p, std::size_t) { ::operator delete(p, std::align_val_t{64}); };
  return a;
}

// ---- BatchLease

BatchLease::BatchLease(BatchLease&& o) noexcept
    : m_loader(o.m_loader), m_slot(o.m_slot), m_batch(o.m_batch) {
  o.m_loader = nullptr;
  o.m_batch = nullptr;
}

BatchLease& BatchLease::operator=(BatchLease&& o) noexcept {
  if (this != &o) {
    reset();
    m_loader = o.m_loader;
    m_slot = o.m_slot;
    m_batch = o.m_batch;
    o.m_loader = nullptr;
    o.m_batch = nullptr;
  }
  return *this;
}

void BatchLease::reset() {
  if (m_loader) m_loader->release(m_slot);
  m_loader = nullptr;
  m_batch = nullptr;
}

// ---- Loader

Loader::Loader(LoaderConfig c, HostAllocator alloc)
    : m_config(std::move(c)), m_alloc(std::move(alloc)), m_free(slots_for(m_config)) {
  if (auto why = validate(m_config); !why.empty()) throw std::invalid_argument("loader: " + why);

  // The raw dataset: bytes from the seed, a label per sample.
  const auto n = static_cast<std::size_t>(m_config.dataset_samples);
  const auto sb = static_cast<std::size_t>(m_config.sample_bytes);
  m_dataset.resize(n * sb);
  std::uint64_t state = splitmix64(m_config.seed ^ 0xD1B54A32D192ED03ULL);
  for (std::size_t i = 0; i < m_dataset.size(); i += 8) {
    state = splitmix64(state);
    std::memcpy(&m_dataset[i], &state, std::min<std::size_t>(8, m_dataset.size() - i));
  }
  m_dataset_labels.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    m_dataset_labels[i] = static_cast<std::int32_t>(splitmix64(m_config.seed + 7 * i) % static_cast<std::uint64_t>(m_config.classes));

  // The pool, allocated once. On a failing allocation, free what we have.
  const std::size_t bytes = batch_bytes(m_config);
  const std::size_t in_bytes = bytes - (static_cast<std::size_t>(m_config.batch_size) * sizeof(std::int32_t) + 63) / 64 * 64;
  m_pool.resize(slots_for(m_config));
  try {
    for (auto& s : m_pool) {
      s.memory = m_alloc.allocate(bytes);
      s.bytes = bytes;
      s.batch.inputs = static_cast<float*>(s.memory);
      s.batch.labels = reinterpret_cast<std::int32_t*>(static_cast<std::uint8_t*>(s.memory) + in_bytes);
      s.batch.size = m_config.batch_size;
    }
  } catch (...) {
    for (auto& s : m_pool)
      if (s.memory) m_alloc.deallocate(s.memory, s.bytes);
    throw;
  }
  for (std::size_t i = 0; i < m_pool.size(); ++i) m_free.try_push(static_cast<int>(i));

  if (m_config.num_workers == 0) {
    m_inline_scratch.resize(2 * sb);
    return;
  }
  for (int w = 0; w < m_config.num_workers; ++w)
    m_ready.push_back(std::make_unique<BoundedQueue<int>>(static_cast<std::size_t>(m_config.prefetch_factor)));
  try {
    for (int w = 0; w < m_config.num_workers; ++w) {
      m_running.fetch_add(1);
      m_workers.emplace_back([this, w] { worker_main(w); });
    }
  } catch (...) {
    m_running.fetch_sub(1);  // the thread that failed to start
    stop();
    for (auto& s : m_pool) m_alloc.deallocate(s.memory, s.bytes);
    throw;
  }
}

Loader::~Loader() {
  stop();
  for (auto& s : m_pool) m_alloc.deallocate(s.memory, s.bytes);
}

std::size_t Loader::queue_capacity() const {
  return static_cast<std::size_t>(m_config.num_workers) * static_cast<std::size_t>(m_config.prefetch_factor);
}

void Loader::stop() {
  m_stopping.store(true);
  m_free.close();
  for (auto& q : m_ready) q->close();
  for (auto& t : m_workers)
    if (t.joinable()) t.join();
  m_workers.clear();
}

void Loader::release(int slot) {
  // After stop() the free queue refuses; the memory is freed by the destructor.
  m_free.try_push(slot);
}

void Loader::preprocess(const LoaderConfig& c, const std::uint8_t* raw, std::uint64_t aug_seed,
                        std::uint8_t* scratch, float* out) {
  const auto sb = static_cast<std::size_t>(c.sample_bytes);
  const std::size_t decoded = 2 * sb;
  // Decode: each byte into two, a running delta across the stream.
  std::uint8_t acc = 0;
  for (std::size_t i = 0; i < sb; ++i) {
    acc = static_cast<std::uint8_t>(acc + (raw[i] & 0x0F));
    scratch[2 * i] = acc;
    acc = static_cast<std::uint8_t>(acc ^ (raw[i] >> 4));
    scratch[2 * i + 1] = acc;
  }
  // Filter passes, in place with a one-value delay line.
  for (int p = 0; p < c.preprocess_passes; ++p) {
    std::uint8_t prev = scratch[0];
    for (std::size_t i = 1; i + 1 < decoded; ++i) {
      const std::uint8_t cur = scratch[i];
      scratch[i] = static_cast<std::uint8_t>((prev + 2 * cur + scratch[i + 1] + 2) >> 2);
      prev = cur;
    }
  }
  // Random crop and flip, then normalise.
  const std::uint64_t r = splitmix64(aug_seed);
  const std::size_t dim = static_cast<std::size_t>(c.input_dim);
  const std::size_t offset = (r >> 1) % (decoded - dim + 1);
  const bool flip = (r & 1) != 0;
  const std::uint8_t* src = scratch + offset;
  constexpr float kScale = 1.0f / 255.0f, kMean = 0.5f, kInvStd = 4.0f;
  if (flip)
    for (std::size_t i = 0; i < dim; ++i) out[i] = (src[dim - 1 - i] * kScale - kMean) * kInvStd;
  else
    for (std::size_t i = 0; i < dim; ++i) out[i] = (src[i] * kScale - kMean) * kInvStd;
}

void Loader::fill(int slot, std::int64_t index, std::uint8_t* scratch) {
  Batch& b = m_pool[static_cast<std::size_t>(slot)].batch;
  b.index = index;
  const auto n = static_cast<std::uint64_t>(m_config.dataset_samples);
  const auto sb = static_cast<std::size_t>(m_config.sample_bytes);
  for (std::int64_t j = 0; j < m_config.batch_size; ++j) {
    if (m_stopping.load(std::memory_order_relaxed)) return;  // early stop: leave it half-filled
    const std::uint64_t global = static_cast<std::uint64_t>(index) * static_cast<std::uint64_t>(m_config.batch_size) +
                                 static_cast<std::uint64_t>(j);
    const std::uint64_t h = splitmix64(m_config.seed * 0x2545F4914F6CDD1DULL + global);
    const std::size_t sample = static_cast<std::size_t>(h % n);
    preprocess(m_config, &m_dataset[sample * sb], h ^ 0xA0761D6478BD642FULL, scratch,
               b.inputs + j * m_config.input_dim);
    b.labels[j] = m_dataset_labels[sample];
  }
}

void Loader::worker_main(int w) {
  try {
    std::vector<std::uint8_t> scratch(2 * static_cast<std::size_t>(m_config.sample_bytes));
    auto& ready = *m_ready[static_cast<std::size_t>(w)];
    for (std::int64_t index = w; !m_stopping.load(); index += m_config.num_workers) {
      std::optional<int> slot = m_free.pop();
      if (!slot) break;
      fill(*slot, index, scratch.data());
      if (!ready.push(*slot)) break;
    }
  } catch (...) {
    // A worker that cannot go on (its scratch allocation failed) ends the
    // sequence for everyone rather than leaving the consumer waiting forever.
    m_failed.store(true);
    m_stopping.store(true);
    m_free.close();
    for (auto& q : m_ready) q->close();
  }
  m_running.fetch_sub(1);
}

void mark_queue_state(const LoaderStats& before, const LoaderStats& after, StepResult& s) {
  const std::int64_t calls = after.batches - before.batches;
  s.starved = after.starved > before.starved;
  s.ahead = calls > 0 && after.ahead - before.ahead >= calls;
}

BatchLease Loader::next() {
  if (m_stopping.load()) return {};
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<int> slot;
  if (m_config.num_workers == 0) {
    // Inline, as PyTorch with num_workers=0: the caller pays for preprocessing.
    slot = m_free.pop();
    if (slot) fill(*slot, m_next_index, m_inline_scratch.data());
    ++m_stats.starved;  // nothing is ever prepared ahead
  } else {
    bool empty = false, full = false;
    slot = m_ready[static_cast<std::size_t>(m_next_index % m_config.num_workers)]->pop(&empty, &full);
    if (empty) ++m_stats.starved;
    if (full) ++m_stats.ahead;
  }
  m_stats.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!slot) return {};
  ++m_next_index;
  ++m_stats.batches;
  return BatchLease(this, *slot, &m_pool[static_cast<std::size_t>(*slot)].batch);
}

}  // namespace autotune
