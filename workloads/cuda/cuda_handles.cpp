#include "workloads/cuda/cuda_handles.hpp"

#include <atomic>
#include <limits>
#include <string>

#include "workloads/cuda/cuda_check.hpp"
#include "workloads/cuda/kernels.hpp"

namespace autotune::cuda {

void* DeviceArena::allocate(std::size_t bytes) {
  const double want = m_in_use + static_cast<double>(bytes);
  if (m_budget > 0 && want > m_budget)
    throw CudaError("vram limit: allocating " + std::to_string(bytes) + " bytes would use " +
                        std::to_string(static_cast<long long>(want)) + " of the " +
                        std::to_string(static_cast<long long>(m_budget)) + " bytes the limit leaves",
                    true);
  void* p = nullptr;
  AUTOTUNE_CUDA_CALL(cudaMalloc(&p, bytes));
  m_in_use = want;
  if (m_in_use > m_peak) m_peak = m_in_use;
  return p;
}

void DeviceArena::deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaFree(p));
  m_in_use -= static_cast<double>(bytes);
}

DeviceBuffer::DeviceBuffer(DeviceArena& arena, std::size_t bytes)
    : m_arena(&arena), m_ptr(arena.allocate(bytes)), m_bytes(bytes) {}

void DeviceBuffer::reset() noexcept {
  if (m_arena && m_ptr) m_arena->deallocate(m_ptr, m_bytes);
  m_ptr = nullptr;
  m_bytes = 0;
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) : m_bytes(bytes) {
  AUTOTUNE_CUDA_CALL(cudaHostAlloc(&m_ptr, bytes, cudaHostAllocDefault));
}

void PinnedBuffer::reset() noexcept {
  if (m_ptr) AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaFreeHost(m_ptr));
  m_ptr = nullptr;
}

Stream::Stream() { AUTOTUNE_CUDA_CALL(cudaStreamCreate(&m_stream)); }
Stream::~Stream() {
  if (m_stream) AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaStreamDestroy(m_stream));
}
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (m_stream) AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaStreamDestroy(m_stream));
    m_stream = std::exchange(o.m_stream, nullptr);
  }
  return *this;
}

Event::Event(bool timing, bool blocking_sync) {
  const unsigned flags = (timing ? cudaEventDefault : cudaEventDisableTiming) |
                         (blocking_sync ? cudaEventBlockingSync : 0u);
  AUTOTUNE_CUDA_CALL(cudaEventCreateWithFlags(&m_event, flags));
}
Event::~Event() {
  if (m_event) AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaEventDestroy(m_event));
}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (m_event) AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaEventDestroy(m_event));
    m_event = std::exchange(o.m_event, nullptr);
  }
  return *this;
}

CublasHandle::CublasHandle() { AUTOTUNE_CUBLAS_CALL(cublasCreate(&m_handle)); }
CublasHandle::~CublasHandle() {
  if (m_handle) AUTOTUNE_CUBLAS_CALL_NOEXCEPT(cublasDestroy(m_handle));
}
CublasHandle& CublasHandle::operator=(CublasHandle&& o) noexcept {
  if (this != &o) {
    if (m_handle) AUTOTUNE_CUBLAS_CALL_NOEXCEPT(cublasDestroy(m_handle));
    m_handle = std::exchange(o.m_handle, nullptr);
  }
  return *this;
}

namespace {
// Long enough for any host to queue a micro-batch, short enough that a gate
// left shut (a bug) costs a visible stall, not a hung trial.
constexpr unsigned long long kGateTimeoutNs = 200'000'000ULL;
}  // namespace

LaunchGate::LaunchGate() {
  AUTOTUNE_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(&m_host), 2 * sizeof(unsigned), cudaHostAllocMapped));
  m_host[0] = 0;
  m_host[1] = 0;
  try {
    AUTOTUNE_CUDA_CALL(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m_device), m_host, 0));
    // Loads the gate's code now (ticket 0 passes at once): under lazy loading a
    // kernel's first launch may wait for the device, which a shut gate holds.
    launch_gate(m_device, 0, m_device + 1, kGateTimeoutNs, cudaStreamPerThread);
    AUTOTUNE_CUDA_CALL(cudaStreamSynchronize(cudaStreamPerThread));
  } catch (...) {
    AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaFreeHost(m_host));  // no destructor runs for a throwing constructor
    throw;
  }
}

LaunchGate::~LaunchGate() {
  if (!m_host) return;
  std::atomic_ref<unsigned>(m_host[0]).store(std::numeric_limits<unsigned>::max(), std::memory_order_release);
  // cudaFreeHost waits for the device, which the open gates let finish.
  AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaFreeHost(m_host));
}

void LaunchGate::hold(cudaStream_t s) {
  launch_gate(m_device, ++m_issued, m_device + 1, kGateTimeoutNs, s);
}

void LaunchGate::open() noexcept {
  std::atomic_ref<unsigned>(m_host[0]).store(m_issued, std::memory_order_release);
}

unsigned LaunchGate::timeouts() const noexcept {
  return std::atomic_ref<unsigned>(m_host[1]).load(std::memory_order_acquire);
}

float elapsed_ms(const Event& start, const Event& end) {
  float ms = 0;
  AUTOTUNE_CUDA_CALL(cudaEventElapsedTime(&ms, start.get(), end.get()));
  return ms;
}

}  // namespace autotune::cuda
